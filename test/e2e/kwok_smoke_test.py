#!/usr/bin/env python3
"""E2E smoke test of the full local control plane (tools/k8s/cluster.py up --all): a fake Node
labelled/annotated for kwok becomes Ready, and a 3-replica Deployment pinned to it is turned into
pods by kube-controller-manager, bound by kube-scheduler and "run" by kwok (phase Running).

Needs KUBECONFIG and DOVETAIL_K8S_BIN (set by dovetail_kube_test in CMake). Standard library only.
Prints `N passed, M failed` last and exits non-zero if anything failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
import uuid
from pathlib import Path

KUBECTL = str(Path(os.environ.get("DOVETAIL_K8S_BIN", "")) / "kubectl")
RUN_ID = uuid.uuid4().hex[:8]
NODE = f"kwok-smoke-{RUN_ID}"
NS = f"kwok-smoke-{RUN_ID}"
KWOK_KEY, KWOK_VALUE = "kwok.x-k8s.io/node", "fake"
REPLICAS = 3
DEADLINE_S = float(os.environ.get("DOVETAIL_E2E_DEADLINE", "180"))


def kubectl(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    r = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def get_json(*args: str) -> dict:
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def poll(what: str, fn, timeout: float = DEADLINE_S, interval: float = 0.5):
    """Call fn until it returns something truthy; fn may return (False, detail) to explain."""
    deadline = time.monotonic() + timeout
    detail = ""
    while True:
        res = fn()
        if isinstance(res, tuple):
            ok, detail = res
        else:
            ok = res
        if ok:
            return ok
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last: {detail}")
        time.sleep(interval)


# ------------------------------------------------------------------------------------- tests


def test_environment():
    assert Path(os.environ.get("KUBECONFIG", "")).is_file(), "KUBECONFIG is not a file"
    assert Path(KUBECTL).is_file(), f"no kubectl at {KUBECTL} (DOVETAIL_K8S_BIN)"
    assert kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"


def test_fake_node_becomes_ready():
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE,
            "labels": {KWOK_KEY: KWOK_VALUE, "kubernetes.io/hostname": NODE, "type": "kwok"},
            "annotations": {KWOK_KEY: KWOK_VALUE},
        },
    }
    kubectl("create", "-f", "-", stdin=json.dumps(node))

    def ready():
        n = get_json("node", NODE)
        conds = {c["type"]: c["status"] for c in (n.get("status") or {}).get("conditions") or []}
        taints = [t["key"] for t in n.get("spec", {}).get("taints", []) or []]
        # Ready, and kube-controller-manager's node lifecycle controller removed the not-ready taint.
        return conds.get("Ready") == "True" and "node.kubernetes.io/not-ready" not in taints, (
            f"conditions={conds} taints={taints}")

    poll(f"node {NODE} to be Ready", ready)


def test_deployment_pods_run_on_fake_node():
    kubectl("create", "namespace", NS)
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "smoke", "namespace": NS},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": "smoke"}},
            "template": {
                "metadata": {"labels": {"app": "smoke"}},
                "spec": {
                    "nodeSelector": {KWOK_KEY: KWOK_VALUE, "kubernetes.io/hostname": NODE},
                    "tolerations": [{"key": KWOK_KEY, "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{
                        "name": "app", "image": "registry.invalid/fake:1",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    }],
                },
            },
        },
    }
    kubectl("create", "-f", "-", stdin=json.dumps(deploy))

    def running():
        pods = get_json("pods", "-n", NS, "-l", "app=smoke")["items"]
        phases = [(p["metadata"]["name"], p["spec"].get("nodeName"), p["status"].get("phase")) for p in pods]
        ok = len(pods) == REPLICAS and all(n == NODE and ph == "Running" for _, n, ph in phases)
        return ok, f"{phases}"

    poll(f"{REPLICAS} pods Running on {NODE}", running)

    def available():
        d = get_json("deployment", "smoke", "-n", NS)
        return d.get("status", {}).get("availableReplicas") == REPLICAS, d.get("status")

    poll("deployment available", available)

    # The binding came from the real scheduler (an event from default-scheduler).
    events = get_json("events", "-n", NS)["items"]
    scheduled = [e for e in events if e.get("reason") == "Scheduled"]
    assert len(scheduled) >= REPLICAS, f"expected {REPLICAS} Scheduled events, got {len(scheduled)}"


def cleanup() -> None:
    kubectl("delete", "namespace", NS, "--wait=false", "--ignore-not-found", check=False)
    kubectl("delete", "node", NODE, "--wait=false", "--ignore-not-found", check=False)


def main() -> int:
    tests = [test_environment, test_fake_node_becomes_ready, test_deployment_pods_run_on_fake_node]
    passed = failed = 0
    try:
        for t in tests:
            start = time.monotonic()
            try:
                t()
            except Exception:  # noqa: BLE001
                failed += 1
                print(f"FAIL {t.__name__} ({time.monotonic() - start:.1f}s)")
                traceback.print_exc(file=sys.stdout)
                break  # later steps build on earlier ones
            else:
                passed += 1
                print(f"PASS {t.__name__} ({time.monotonic() - start:.1f}s)")
    finally:
        cleanup()
    skipped = len(tests) - passed - failed
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
