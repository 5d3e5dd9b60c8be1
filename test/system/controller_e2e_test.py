#!/usr/bin/env python3
"""E2E test of `dovetail controller` (the whole binary: operator, provisioning, NodeClaim lifecycle,
termination) with the kwok cloud provider, on its own full local control plane (kube-apiserver,
etcd, kube-scheduler, kube-controller-manager, kwok).

  1. A DaemonSet and a Deployment scaled from 0 to 200 replicas with zone spread: every pod ends
     up Running on nodes Dovetail launched (the kube-scheduler binds them: no pod is left pending
     because Dovetail's simulation disagreed with it); each NodeClaim is owned by the NodePool,
     Launched/Registered/Initialized, its Node carries the nodepool label and no unregistered
     taint, the NodePool's cpu limit holds, and the DaemonSet runs on every node.
  2. A pod no instance type can hold gets a Warning event from Dovetail naming the NodePool.
  3. kill -9 of the controller right after it launches for a scale-up, then a restart: every pod
     runs, and there is no duplicate instance and no orphan (Nodes and NodeClaims match 1:1).
  4. Deleting a NodeClaim drains and removes its Node; every pod runs again (on a replacement).
  5. SIGTERM stops the controller cleanly (exit 0).
Along the way: /readyz and /metrics (karpenter_pods_state, karpenter_nodeclaims_created_total,
karpenter_scheduler_scheduling_duration_seconds, dovetail_informer_decode_errors_total with no
sample) on the ports the controller logs.

Usage: controller_e2e_test.py DOVETAIL_BINARY. Needs KUBECONFIG and DOVETAIL_K8S_BIN (set by
dovetail_kube_test). Prints `N passed, M failed` last; exits non-zero if anything failed.
"""
from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
import uuid
from pathlib import Path

from e2e_common import (ControllerProcess, Tally, apply_crds, check, condition, cpu_millis,
                        deployment, get, kubectl, kwok_nodepool, wait_for, zone_spread)

RUN_ID = uuid.uuid4().hex[:6]
NS = f"dovetail-e2e-{RUN_ID}"
POOL = f"e2e-{RUN_ID}"
REPLICAS = 200
SCALED = 240


def app_pods() -> list[dict]:
    return [p for p in get("pods", "-n", NS)["items"] if p["metadata"].get("labels", {}).get("app") == "e2e"]


def all_running(expected: int | None = None) -> bool:
    expected = replicas if expected is None else expected
    pods = [p for p in app_pods() if not p["metadata"].get("deletionTimestamp")]
    return len(pods) == expected and all(p["status"].get("phase") == "Running" for p in pods)


replicas = REPLICAS


def claims() -> list[dict]:
    return [c for c in get("nodeclaims")["items"]
            if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == POOL]


NODEPOOL = kwok_nodepool(POOL, ["key: kubernetes.io/arch, operator: In, values: [amd64]",
                                "key: karpenter.sh/capacity-type, operator: In, values: [on-demand, spot]"],
                         spec='  limits:\n    cpu: "200"')

DEPLOYMENT = deployment("e2e", NS, REPLICAS, "cpu: 100m, memory: 256Mi", spec=zone_spread("e2e"))

DAEMONSET = f"""
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: {NS}}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      # NodeClaims reserve room for DaemonSet pods, but the kube-scheduler may bind pending pods
      # into that room before the DaemonSet pod exists; as in production, DaemonSet pods take it
      # back by priority (preemption).
      priorityClassName: system-node-critical
      tolerations: [{{operator: Exists}}]
      containers:
        - name: agent
          image: registry.example/agent:1
          resources: {{requests: {{cpu: 100m, memory: 128Mi}}}}
"""

HUGE_POD = f"""
apiVersion: v1
kind: Pod
metadata: {{name: huge, namespace: {NS}}}
spec:
  containers:
    - name: app
      image: registry.example/app:1
      resources: {{requests: {{cpu: "5000"}}}}
"""


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    global replicas
    binary = sys.argv[1]
    apply_crds()
    kubectl("create", "namespace", NS)
    kubectl("apply", "-f", "-", stdin=NODEPOOL)
    log_path = Path(os.environ.get("DOVETAIL_E2E_LOG_DIR", "/tmp")) / f"dovetail-controller-{RUN_ID}.log"
    process = ControllerProcess(binary, log_path)
    controller = process.start()
    print(f"controller pid {controller.pid}, log {log_path}")
    kubectl("apply", "-f", "-", stdin=DAEMONSET)
    try:
        t0 = time.monotonic()
        kubectl("apply", "-f", "-", stdin=DEPLOYMENT)
        if check("every pod of the Deployment runs on nodes Dovetail launched",
                 wait_for("all pods Running", all_running, controller)):
            print(f"      ({time.monotonic() - t0:.1f} s from apply to all Running)")
        cs = claims()
        check("NodeClaims were created for the NodePool", len(cs) > 0, f"{len(cs)}")
        nodes = {n["metadata"]["name"]: n for n in get("nodes")["items"]}
        total_cpu = 0
        for c in cs:
            name = c["metadata"]["name"]
            owners = c["metadata"].get("ownerReferences", [])
            check(f"{name} is owned by the NodePool",
                  any(o.get("kind") == "NodePool" and o.get("name") == POOL for o in owners), str(owners))
            for cond in ("Launched", "Registered", "Initialized"):
                check(f"{name} {cond}=True", condition(c, cond) == "True", condition(c, cond))
            node = nodes.get(c.get("status", {}).get("nodeName", ""))
            if not check(f"{name} has a Node", node is not None):
                continue
            check(f"{name}'s Node carries the nodepool label",
                  node["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == POOL)
            taints = [t.get("key") for t in node.get("spec", {}).get("taints", []) or []]
            check(f"{name}'s Node has no unregistered taint", "karpenter.sh/unregistered" not in taints, str(taints))
            total_cpu += cpu_millis(node["status"]["capacity"]["cpu"])
        check("the NodePool's cpu limit (200) holds", total_cpu <= 200000, f"{total_cpu}m")
        claim_nodes = {c.get("status", {}).get("nodeName") for c in cs}

        def agents_everywhere() -> bool:
            agents = [p for p in get("pods", "-n", NS)["items"]
                      if p["metadata"].get("labels", {}).get("app") == "agent" and
                      p["status"].get("phase") == "Running"]
            return {p["spec"].get("nodeName") for p in agents} >= claim_nodes
        if not check("the DaemonSet runs on every node Dovetail launched (its overhead was reserved)",
                     wait_for("a DaemonSet pod Running on every node", agents_everywhere, controller,
                              timeout=120)):
            for p in get("pods", "-n", NS)["items"]:
                if p["metadata"].get("labels", {}).get("app") == "agent" and p["status"].get("phase") != "Running":
                    print("      ", p["metadata"]["name"], p["spec"].get("nodeName"), p["status"].get("phase"),
                          [(c.get("reason"), c.get("message")) for c in p["status"].get("conditions", [])])
            print("      ", kubectl("get", "ds", "agent", "-n", NS, "-o", "wide").stdout)
        pending = [p["metadata"]["name"] for p in app_pods() if p["status"].get("phase") != "Running"]
        check("no pod of the Deployment is left pending", not pending, str(pending[:5]))

        # /metrics and /readyz on the ports the controller logged.
        ports = {}
        for line in open(log_path):
            if '"message":"serving"' in line:
                entry = json.loads(line)
                ports = {"metrics": entry.get("metricsPort"), "health": entry.get("healthProbePort")}
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ports.get('health')}/readyz", timeout=5) as r:
                check("/readyz answers 200 once synced", r.status == 200, str(r.status))
            # karpenter_pods_state is the leader's, recomputed every 10 s: scrape until it caught up.
            deadline = time.time() + 60
            while True:
                with urllib.request.urlopen(f"http://127.0.0.1:{ports.get('metrics')}/metrics",
                                            timeout=5) as r:
                    text = r.read().decode()
                running = sum(float(l.split()[-1]) for l in text.splitlines()
                              if l.startswith("karpenter_pods_state{") and 'phase="Running"' in l and
                              f'nodepool="{POOL}"' in l)
                if running >= REPLICAS or time.time() > deadline:
                    break
                time.sleep(2)
            check("karpenter_pods_state counts the running pods on the NodePool's nodes",
                  running >= REPLICAS, str(running))
            created = sum(float(l.split()[-1]) for l in text.splitlines()
                          if l.startswith("karpenter_nodeclaims_created_total{") and f'nodepool="{POOL}"' in l)
            check("karpenter_nodeclaims_created_total counts the NodeClaims", created >= len(cs), str(created))
            check("karpenter_scheduler_scheduling_duration_seconds is exported",
                  'karpenter_scheduler_scheduling_duration_seconds_count{controller="provisioner"}'
                  in text)
            # Every informer's objects decoded: the family is registered, with no sample.
            check("dovetail_informer_decode_errors_total is exported and counted nothing",
                  "# TYPE dovetail_informer_decode_errors_total counter" in text and
                  "dovetail_informer_decode_errors_total{" not in text,
                  str([l for l in text.splitlines() if "dovetail_informer_decode_errors" in l][:3]))
        except OSError as e:
            check("/metrics and /readyz are served", False, f"{ports}: {e}")

        kubectl("apply", "-f", "-", stdin=HUGE_POD)

        def huge_event() -> bool:
            events = get("events.events.k8s.io", "-n", NS)["items"]
            return any(e.get("regarding", {}).get("name") == "huge" and e.get("type") == "Warning" and
                       POOL in (e.get("note") or "") for e in events)
        check("a pod no instance type can hold gets a Warning event naming the NodePool",
              wait_for("the FailedScheduling event", huge_event, controller, timeout=60))
        kubectl("delete", "pod", "huge", "-n", NS, "--wait=false")

        # kill -9 right after a launch for a scale-up, then restart.
        before = {c["metadata"]["name"] for c in claims()}
        replicas = SCALED
        kubectl("scale", "deployment", "e2e", "-n", NS, f"--replicas={SCALED}")
        launched = wait_for("a NodeClaim for the scale-up",
                            lambda: bool({c["metadata"]["name"] for c in claims()} - before), controller, timeout=120)
        check("the scale-up launches a NodeClaim", launched)
        controller = process.kill9_and_restart()
        print(f"killed with SIGKILL and restarted: controller pid {controller.pid}")
        check("after kill -9 and a restart every pod runs", wait_for("all pods Running", all_running, controller))

        def one_to_one() -> bool:
            cs2 = claims()
            nodes = [n for n in get("nodes")["items"]
                     if n["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == POOL]
            claim_nodes = [c.get("status", {}).get("nodeName", "") for c in cs2]
            return (len(nodes) == len(cs2) and len(set(claim_nodes)) == len(cs2) and
                    {n["metadata"]["name"] for n in nodes} == set(claim_nodes))
        check("no duplicate instance and no orphan (Nodes and NodeClaims match 1:1)",
              wait_for("Nodes and NodeClaims to match", one_to_one, controller, timeout=60))
        cs = claims()

        if cs:
            victim = sorted(c["metadata"]["name"] for c in cs)[0]
            node_name = next((c.get("status", {}).get("nodeName", "") for c in cs
                              if c["metadata"]["name"] == victim), "")
            t1 = time.monotonic()
            kubectl("delete", "nodeclaim", victim, "--wait=false")
            check(f"deleting NodeClaim {victim} removes it",
                  wait_for("the NodeClaim gone",
                           lambda: victim not in [c["metadata"]["name"] for c in claims()], controller))
            check(f"... and its Node {node_name}",
                  node_name not in [n["metadata"]["name"] for n in get("nodes")["items"]])
            if check("every pod runs again", wait_for("all pods Running again", all_running, controller)):
                print(f"      ({time.monotonic() - t1:.1f} s from delete to all Running again)")
    finally:
        rc = process.stop()
        check("SIGTERM stops the controller with exit status 0", rc == 0, str(rc))
        kubectl("delete", "deployment", "e2e", "-n", NS, "--wait=false", check_rc=False)
        if Tally.failed:
            print(f"--- controller log ({log_path}), last 40 lines:")
            print(process.tail())
    print(f"{Tally.passed} passed, {Tally.failed} failed")
    return 1 if Tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
