#!/usr/bin/env python3
"""E2E test of `dovetail explain` and decision IDs (issue 8) on its own full local control plane
(kube-apiserver, etcd, kube-scheduler, kube-controller-manager, kwok), with `dovetail controller
--cloud-provider kwok` running:

  1. a pod asking for more cpu than any instance type: `explain pod` names the NodePool and says
     no instance type is large enough; the FailedScheduling event carries a decision ID;
  2. a pod selecting a label the NodePool cannot have: `explain pod` names the pool and the key;
  3. a pod annotated karpenter.sh/do-not-disrupt: once Running, `explain pod` says it is bound to
     its node, the node's NodeClaim carries dovetail.sh/decision-id equal to the pod's Nominated
     event's, and `explain node` says the pod blocks disruption;
  4. a pod deleted from its own node: emptiness removes the node with a DisruptionDecision event
     whose decision ID is the one on the NodeClaim and in the controller's log lines;
  5. bad input: unknown pod, malformed name, unknown -o: non-zero exit, no crash.

Usage: explain_e2e_test.py DOVETAIL_BINARY. Needs KUBECONFIG and DOVETAIL_K8S_BIN (set by
dovetail_kube_test). Prints `N passed, M failed` last; exits non-zero if anything failed.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from e2e_common import (ControllerProcess, KUBECONFIG, Tally, apply_crds, check, get, kubectl,
                        kwok_nodepool, wait_for)

RUN_ID = uuid.uuid4().hex[:6]
NS = f"dovetail-explain-{RUN_ID}"
POOL = f"explain-{RUN_ID}"
ID_RE = re.compile(r"\(decision=([0-9a-f]{8})\)$")
DECISION_KEY = "dovetail.sh/decision-id"

NODEPOOL = kwok_nodepool(
    POOL, ["key: kubernetes.io/arch, operator: In, values: [amd64]",
           "key: karpenter.sh/capacity-type, operator: In, values: [on-demand]",
           "key: karpenter.kwok.sh/instance-family, operator: In, values: [c7k]",
           'key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["4"]'],
    spec="  disruption:\n    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 0s")


def pod(name: str, cpu: str, extra_meta: str = "", extra_spec: str = "") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {NS}
{extra_meta}spec:
  terminationGracePeriodSeconds: 0
{extra_spec}  containers:
    - name: c
      image: registry.k8s.io/pause:3.9
      resources: {{requests: {{cpu: "{cpu}", memory: 128Mi}}}}
"""


def explain(binary: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, "explain", *args, "--kubeconfig", KUBECONFIG], capture_output=True,
                          text=True, timeout=120)


def explain_json(binary: str, *args: str) -> dict:
    r = explain(binary, *args, "-o", "json")
    if r.returncode != 0:
        print(f"explain {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
        return {}
    return json.loads(r.stdout)


def events_of(name: str, reason: str, ns: str = "") -> list[dict]:
    scope = ["-n", ns] if ns else ["-A"]
    return [e for e in get("events.events.k8s.io", *scope)["items"]
            if e.get("regarding", {}).get("name") == name and e.get("reason") == reason]


def decision_of(note: str) -> str:
    m = ID_RE.search(note or "")
    return m.group(1) if m else ""


def main() -> int:
    binary = sys.argv[1]
    apply_crds()
    kubectl("create", "namespace", NS)
    wait_for("the default service account",
             lambda: kubectl("get", "serviceaccount", "default", "-n", NS,
                             check_rc=False).returncode == 0, None, timeout=60)
    kubectl("apply", "-f", "-", stdin=NODEPOOL)
    log_path = Path(tempfile.mkdtemp(prefix="dovetail-explain-")) / "controller.log"
    controller = ControllerProcess(binary, log_path)
    controller.start()
    try:
        # 1. Too large for any instance type.
        kubectl("apply", "-f", "-", stdin=pod("huge", "70"))
        wait_for("Dovetail's FailedScheduling event of huge",
                 lambda: any(e.get("reportingController") == "karpenter.sh/dovetail"
                             for e in events_of("huge", "FailedScheduling", NS)),
                 controller, timeout=60)
        out = explain_json(binary, "pod", f"{NS}/huge")
        reasons = " ".join(out.get("reasons", []))
        check("explain pod: a pod too large for every instance type is unschedulable",
              out.get("verdict") == "unschedulable", json.dumps(out))
        check("explain pod names the NodePool and the missing resources",
              f'nodepool "{POOL}"' in reasons and "enough resources" in reasons and "cpu=70" in reasons,
              reasons)
        fs = out.get("failedScheduling") or {}
        check("explain pod shows Dovetail's FailedScheduling event with its decision ID",
              bool(re.fullmatch(r"[0-9a-f]{8}", fs.get("decisionId", ""))), json.dumps(fs))
        text = explain(binary, "pod", f"{NS}/huge")
        check("explain pod (text) names the pool", text.returncode == 0 and POOL in text.stdout,
              text.stdout + text.stderr)

        # 2. A label the pool cannot have.
        kubectl("apply", "-f", "-",
                stdin=pod("picky", "1", extra_spec="  nodeSelector: {e2e-impossible: \"yes\"}\n"))
        out = explain_json(binary, "pod", f"{NS}/picky")
        reasons = " ".join(out.get("reasons", []))
        check("explain pod names the unsatisfiable requirement",
              out.get("verdict") == "unschedulable" and f'nodepool "{POOL}"' in reasons and
              "e2e-impossible" in reasons, json.dumps(out))
        kubectl("delete", "pod", "huge", "picky", "-n", NS, "--wait=false")

        # 3. do-not-disrupt: bound, decision ID on its NodeClaim, explain node names the pod.
        kubectl("apply", "-f", "-", stdin=pod(
            "guarded", "3", extra_meta="  annotations: {karpenter.sh/do-not-disrupt: \"true\"}\n"))
        kubectl("apply", "-f", "-", stdin=pod("brief", "3"))
        running = lambda name: get("pod", name, "-n", NS).get("status", {}).get("phase") == "Running"
        check("the guarded and brief pods run on nodes Dovetail launched",
              wait_for("guarded and brief Running", lambda: running("guarded") and running("brief"),
                       controller, timeout=90))
        node = get("pod", "guarded", "-n", NS)["spec"].get("nodeName", "")
        out = explain_json(binary, "pod", f"{NS}/guarded")
        check("explain pod says the pod is bound to its node",
              out.get("status") == "bound" and out.get("node") == node, json.dumps(out))
        claim = get("nodeclaim", out.get("nodeClaim", "missing"))
        claim_id = claim["metadata"].get("annotations", {}).get(DECISION_KEY, "")
        nominated = [decision_of(e.get("note")) for e in events_of("guarded", "Nominated", NS)]
        check("the NodeClaim carries the decision ID of the pod's Nominated event",
              bool(claim_id) and claim_id in nominated, f"{claim_id} vs {nominated}")

        def blocked() -> bool:
            o = explain_json(binary, "node", node)
            methods = {m["method"]: m for m in o.get("methods", [])}
            msg = methods.get("single-node-consolidation", {}).get("blocked", "")
            return f'pod "{NS}/guarded"' in msg and "do-not-disrupt" in msg
        check("explain node says the do-not-disrupt pod blocks disruption",
              wait_for("explain node naming the guarded pod", blocked, controller, timeout=60))

        # 4. Emptiness with a decision ID.
        brief_node = get("pod", "brief", "-n", NS)["spec"].get("nodeName", "")
        brief_claim = ""
        for c in get("nodeclaims")["items"]:
            if c.get("status", {}).get("nodeName") == brief_node:
                brief_claim = c["metadata"]["name"]
        seen_annotation = {}

        def decided() -> bool:
            r = kubectl("get", "nodeclaim", brief_claim, "-o", "json", check_rc=False)
            if r.returncode == 0:
                a = json.loads(r.stdout)["metadata"].get("annotations", {})
                if a.get(DECISION_KEY):
                    seen_annotation["id"] = a[DECISION_KEY]
            return bool(events_of(brief_node, "DisruptionDecision"))
        kubectl("delete", "pod", "brief", "-n", NS, "--wait=false")
        check("the emptied node gets a DisruptionDecision event",
              wait_for("the DisruptionDecision event", decided, controller, timeout=90, interval=0.2))
        event_ids = [decision_of(e.get("note")) for e in events_of(brief_node, "DisruptionDecision")]
        decision = event_ids[-1] if event_ids else ""
        check("the DisruptionDecision event carries a decision ID", bool(decision), str(event_ids))
        wait_for("the candidate NodeClaim annotated", lambda: decided() and "id" in seen_annotation,
                 controller, timeout=10, interval=0.2)
        check("the disrupted NodeClaim carries the same decision ID",
              seen_annotation.get("id") == decision, f"{seen_annotation} vs {decision}")
        logged = any(f'"decisionId":"{decision}"' in line and "disrupting node(s)" in line
                     for line in open(log_path))
        check("the controller's log line of the decision carries the ID", bool(decision) and logged)

        # 5. Bad input.
        r = explain(binary, "pod", f"{NS}/no-such-pod")
        check("explain pod of an unknown pod exits 1 with an error",
              r.returncode == 1 and "not found" in r.stderr, r.stderr)
        r = explain(binary, "pod", "no-slash")
        check("explain pod of a malformed name exits non-zero", r.returncode != 0, r.stderr)
        r = explain(binary, "node", "no-such-node")
        check("explain node of an unknown node exits 1", r.returncode == 1, r.stderr)
        r = explain(binary, "node", node, "-o", "yaml")
        check("explain with an unknown -o exits non-zero", r.returncode != 0, r.stderr)
    finally:
        kubectl("delete", "namespace", NS, "--wait=false", check_rc=False)
        kubectl("delete", "nodepool", POOL, "--wait=false", check_rc=False)
        rc = controller.stop()
        if Tally.failed:
            print(controller.tail())
    check("the controller stops on SIGTERM with exit status 0", rc == 0, str(rc))
    print(f"{Tally.passed} passed, {Tally.failed} failed")
    return 1 if Tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
