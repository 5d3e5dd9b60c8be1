#!/usr/bin/env python3
"""Switching one cluster from upstream Karpenter to Dovetail and back (issue 19, item 5).

On a local control plane of its own (kube-apiserver, etcd, kube-scheduler,
kube-controller-manager, kwok) with upstream's CRDs, as a cluster switching in place keeps them:

  1. Upstream Karpenter's kwok controller (built from the pinned Go module by
     tools/upstream/kwok-controller) provisions two Deployments on two NodePools. `dovetail hash`
     of the NodePools as stored equals the hashes upstream stamped on them.
  2. It stops and `dovetail controller --cloud-provider kwok` starts. For 3 minutes Dovetail keeps
     every NodeClaim and Node it found (same UIDs, none deleted, none Drifted, none replaced),
     writes the NodePools' status (Ready, node counts) and leaves their hash stamps as upstream
     wrote them.
  3. A template change of one NodePool drifts exactly its NodeClaims; scaling the other
     Deployment to zero empties its nodes and Dovetail's consolidation deletes them (its
     lifecycle and termination work on upstream's NodeClaims).
  4. Dovetail stops and upstream starts again: upstream marks none of the NodeClaims Dovetail
     launched as drifted, keeps them, and provisions again when the emptied Deployment scales up.

Usage: switch_e2e_test.py DOVETAIL_BINARY. Needs KUBECONFIG and DOVETAIL_K8S_BIN (set by
dovetail_kube_test) and DOVETAIL_UPSTREAM_KWOK (the directory tools/upstream/kwok-controller
prints). Prints `N passed, M failed` last; exits non-zero if anything failed.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from e2e_common import deployment as common_deployment
from e2e_common import KUBECONFIG, ControllerProcess, Tally, check, condition, get, kubectl, wait_established, wait_for

UPSTREAM = Path(os.environ.get("DOVETAIL_UPSTREAM_KWOK", ""))
POOL_A, POOL_B = "switch-a", "switch-b"
REPLICAS = 6
SOAK_S = float(os.environ.get("DOVETAIL_SWITCH_SOAK", "180"))

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  template:
    metadata:
      labels: {{example.com/pool: {name}}}
    spec:
      nodeClassRef: {{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}}
      requirements:
        - {{key: kubernetes.io/arch, operator: In, values: [amd64]}}
        - {{key: kubernetes.io/os, operator: In, values: [linux]}}
        - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
      expireAfter: Never
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 20s
    budgets: [{{nodes: "100%"}}]
"""

KWOK_NODECLASS = """
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
"""


def deployment(name: str, pool: str, replicas: int) -> str:
    return common_deployment(name, "default", replicas, 'cpu: "1", memory: 1Gi', pool=pool,
                             grace=None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Upstream:
    """Upstream's kwok controller, logging to one file."""

    def __init__(self, log_path: Path):
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        env = dict(os.environ, KUBECONFIG=KUBECONFIG, DISABLE_LEADER_ELECTION="true",
                   METRICS_PORT=str(free_port()), HEALTH_PROBE_PORT=str(free_port()),
                   LOG_LEVEL="info", BATCH_IDLE_DURATION="500ms", BATCH_MAX_DURATION="3s")
        env.pop("INSTANCE_TYPES_FILE_PATH", None)
        self.proc = subprocess.Popen([str(UPSTREAM / "karpenter-kwok")], env=env,
                                     stdout=open(self.log_path, "a"), stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def tail(self, lines: int = 30) -> str:
        return "".join(open(self.log_path).readlines()[-lines:])


def claims(pool: str | None = None) -> dict[str, dict]:
    items = get("nodeclaims").get("items", [])
    return {c["metadata"]["name"]: c for c in items
            if pool is None or c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == pool}


def nodes() -> dict[str, dict]:
    return {n["metadata"]["name"]: n for n in get("nodes").get("items", [])
            if n["metadata"].get("labels", {}).get("karpenter.sh/nodepool")}


def running(app: str) -> int:
    pods = get("pods", "-n", "default", "-l", f"app={app}").get("items", [])
    return sum(1 for p in pods if p.get("status", {}).get("phase") == "Running"
               and not p["metadata"].get("deletionTimestamp"))


def drifted(claim: dict) -> bool:
    return condition(claim, "Drifted") == "True"


def settled(apps: dict[str, int]) -> bool:
    if any(running(app) != n for app, n in apps.items()):
        return False
    cs = claims()
    return all(condition(c, "Initialized") == "True" and not c["metadata"].get("deletionTimestamp")
               for c in cs.values())


def pool_annotations(name: str) -> dict:
    return get("nodepool", name)["metadata"].get("annotations", {})


def main() -> int:
    binary = sys.argv[1]
    if not (UPSTREAM / "karpenter-kwok").is_file():
        check("upstream's kwok controller is built (tools/upstream/kwok-controller)", False,
              str(UPSTREAM))
        return 1
    work = Path(tempfile.mkdtemp(prefix="switch-e2e-"))
    upstream = Upstream(work / "upstream.log")
    dovetail = ControllerProcess(binary, work / "dovetail.log")
    try:
        # ---- upstream's CRDs and objects, upstream provisions --------------------------------
        kubectl("apply", "--server-side", "-f", str(UPSTREAM / "crds"))
        wait_established(lambda *a: kubectl(*a, check_rc=False).returncode == 0)
        kubectl("apply", "-f", "-", stdin=KWOK_NODECLASS)
        # Nothing in upstream's kwok build reports the KWOKNodeClass Ready; without it the
        # NodePools are not Ready and nothing launches.
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        kubectl("patch", "kwoknodeclass", "default", "--subresource=status", "--type=merge", "-p",
                json.dumps({"status": {"conditions": [{
                    "type": "Ready", "status": "True", "reason": "Ready", "message": "",
                    "lastTransitionTime": now, "observedGeneration": 1}]}}))
        for pool in (POOL_A, POOL_B):
            kubectl("apply", "-f", "-", stdin=NODEPOOL.format(name=pool))
        upstream.start()
        kubectl("apply", "-f", "-", stdin=deployment("app-a", POOL_A, REPLICAS))
        kubectl("apply", "-f", "-", stdin=deployment("app-b", POOL_B, REPLICAS))
        if not check("upstream provisions both Deployments",
                     wait_for("both Deployments running on upstream's nodes",
                              lambda: settled({"app-a": REPLICAS, "app-b": REPLICAS}),
                              upstream.proc, timeout=300, interval=2),
                     upstream.tail()):
            return 1
        # Upstream stamps its NodePools and NodeClaims with its hashes (and only then are they
        # worth comparing).
        wait_for("upstream's hash stamps", lambda: all(
            pool_annotations(p).get("karpenter.sh/nodepool-hash") for p in (POOL_A, POOL_B)) and all(
            c["metadata"].get("annotations", {}).get("karpenter.sh/nodepool-hash")
            for c in claims().values()), upstream.proc, timeout=60, interval=1)
        before = claims()
        check("upstream launched NodeClaims in both NodePools",
              bool(claims(POOL_A)) and bool(claims(POOL_B)), str(list(before)))
        stamps = {p: pool_annotations(p) for p in (POOL_A, POOL_B)}
        check("upstream stamped its hashes on both NodePools",
              all(s.get("karpenter.sh/nodepool-hash-version") == "v3" and
                  s.get("karpenter.sh/nodepool-hash") for s in stamps.values()), str(stamps))
        stored = work / "nodepools.json"
        stored.write_text(kubectl("get", "nodepools", "-o", "json").stdout)
        hashed = subprocess.run([binary, "hash", "-f", str(stored), "-o", "json"],
                                capture_output=True, text=True, timeout=60)
        ours = {h["name"]: h for h in json.loads(hashed.stdout or "[]")}
        check("dovetail hash of the stored NodePools equals upstream's stamps",
              hashed.returncode == 0 and all(
                  ours.get(p, {}).get("hash") == stamps[p].get("karpenter.sh/nodepool-hash") and
                  ours.get(p, {}).get("hashVersion") == "v3" for p in (POOL_A, POOL_B)),
              f"{hashed.stdout} {hashed.stderr} vs {stamps}")
        upstream.stop()

        # ---- Dovetail takes over ---------------------------------------------------------------
        dovetail.start()
        uids = {name: c["metadata"]["uid"] for name, c in before.items()}
        node_uids = {name: n["metadata"]["uid"] for name, n in nodes().items()}
        problems: list[str] = []
        deadline = time.monotonic() + SOAK_S
        while time.monotonic() < deadline:
            if dovetail.proc.poll() is not None:
                problems.append(f"dovetail exited with {dovetail.proc.returncode}")
                break
            cs = claims()
            for name, uid in uids.items():
                c = cs.get(name)
                if c is None or c["metadata"]["uid"] != uid:
                    problems.append(f"NodeClaim {name} is gone")
                elif c["metadata"].get("deletionTimestamp"):
                    problems.append(f"NodeClaim {name} is being deleted")
                elif drifted(c):
                    problems.append(f"NodeClaim {name} is Drifted")
            extra = set(cs) - set(uids)
            if extra:
                problems.append(f"new NodeClaims {sorted(extra)}")
            ns = nodes()
            for name, uid in node_uids.items():
                if name not in ns or ns[name]["metadata"]["uid"] != uid:
                    problems.append(f"Node {name} is gone")
            if problems:
                break
            time.sleep(5)
        check(f"for {SOAK_S:.0f} s Dovetail keeps every NodeClaim and Node upstream launched, "
              "drifts none and launches none", not problems,
              "; ".join(problems[:5]) + "\n" + dovetail.tail())
        check("the NodePools keep upstream's hash stamps",
              all(pool_annotations(p).get("karpenter.sh/nodepool-hash") ==
                  stamps[p].get("karpenter.sh/nodepool-hash") for p in (POOL_A, POOL_B)))
        pools = {p: get("nodepool", p) for p in (POOL_A, POOL_B)}
        check("Dovetail writes the NodePools' status: Ready, nodes",
              all(condition(np, "Ready") == "True" and
                  np.get("status", {}).get("nodes") == len(claims(p)) for p, np in pools.items()),
              json.dumps({p: np.get("status") for p, np in pools.items()})[:1500])

        # ---- drift: exactly the changed NodePool's NodeClaims --------------------------------
        old_a, old_b = set(claims(POOL_A)), set(claims(POOL_B))
        kubectl("patch", "nodepool", POOL_A, "--type=merge", "-p",
                json.dumps({"spec": {"template": {"metadata": {"labels": {
                    "example.com/pool": POOL_A, "example.com/rev": "2"}}}}}))
        check("a template change drifts the NodePool's NodeClaims",
              wait_for("pool a's NodeClaims drifted", lambda: all(
                  drifted(c) or c["metadata"].get("deletionTimestamp")
                  for n, c in claims().items() if n in old_a), dovetail, timeout=120, interval=2),
              dovetail.tail())
        check("and no other NodeClaim", not any(drifted(c) for n, c in claims(POOL_B).items()))

        # ---- consolidation on upstream's NodeClaims ------------------------------------------
        kubectl("scale", "deployment", "app-b", "-n", "default", "--replicas=0")
        check("Dovetail deletes the emptied nodes of upstream's NodeClaims",
              wait_for("pool b empty", lambda: not claims(POOL_B), dovetail, timeout=240,
                       interval=2), dovetail.tail())
        check("Dovetail replaces the drifted NodeClaims",
              wait_for("pool a replaced", lambda: not (set(claims(POOL_A)) & old_a) and
                       settled({"app-a": REPLICAS}), dovetail, timeout=300, interval=2),
              dovetail.tail())
        dovetail_claims = set(claims(POOL_A))
        dovetail.stop()

        # ---- and back to upstream --------------------------------------------------------------
        upstream.start()
        kubectl("scale", "deployment", "app-b", "-n", "default", f"--replicas={REPLICAS}")
        check("upstream provisions again",
              wait_for("app-b running again", lambda: settled({"app-a": REPLICAS,
                                                               "app-b": REPLICAS}),
                       upstream.proc, timeout=300, interval=2), upstream.tail())
        # A soak rather than a condition: what is checked is that nothing happens. Upstream's
        # NodeClaim disruption controller reconciles every NodeClaim when it starts; 30 s after
        # its pods are back it has looked at each of them.
        time.sleep(30)
        now_a = claims(POOL_A)
        check("upstream keeps the NodeClaims Dovetail launched and drifts none of them",
              dovetail_claims <= set(now_a) and not any(
                  drifted(now_a[n]) or now_a[n]["metadata"].get("deletionTimestamp")
                  for n in dovetail_claims),
              json.dumps({n: [c.get("status", {}).get("conditions")] for n, c in now_a.items()})[:1500]
              + "\n" + upstream.tail())
    except AssertionError as e:
        check("no kubectl error", False, str(e))
    finally:
        upstream.stop()
        dovetail.stop()
        print(f"logs in {work}")
    print(f"{Tally.passed} passed, {Tally.failed} failed")
    return 1 if Tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
