#!/usr/bin/env python3
"""Smoke test of the local control plane (tools/k8s/cluster.py): the API server answers, serves the
pinned version, enforces RBAC, and namespaces/pods can be created and deleted.

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

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = str(Path(os.environ.get("DOVETAIL_K8S_BIN", "")) / "kubectl")
RUN_ID = uuid.uuid4().hex[:8]


def kubectl(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    r = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def pinned_k8s_version() -> str:
    for line in (ROOT / "tools/k8s/versions.env").read_text().splitlines():
        if line.startswith("K8S_VERSION="):
            return line.split("=", 1)[1].strip()
    raise AssertionError("K8S_VERSION not found in tools/k8s/versions.env")


def poll(what: str, fn, timeout: float = 60.0, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


# ------------------------------------------------------------------------------------- tests


def test_environment():
    assert os.environ.get("KUBECONFIG"), "KUBECONFIG is not set"
    assert Path(os.environ["KUBECONFIG"]).is_file(), f"no kubeconfig at {os.environ['KUBECONFIG']}"
    assert Path(KUBECTL).is_file(), f"no kubectl at {KUBECTL} (DOVETAIL_K8S_BIN)"


def test_readyz():
    out = kubectl("get", "--raw", "/readyz").stdout.strip()
    assert out == "ok", f"/readyz answered {out!r}"


def test_server_version_is_pinned():
    info = json.loads(kubectl("version", "-o", "json").stdout)
    want = pinned_k8s_version()
    assert info["serverVersion"]["gitVersion"] == want, info["serverVersion"]
    assert info["clientVersion"]["gitVersion"] == want, info["clientVersion"]


def test_rbac_is_enforced():
    # Admin (system:masters) may do anything; an unprivileged service account may not.
    assert kubectl("auth", "can-i", "create", "namespaces").stdout.strip() == "yes"
    r = kubectl("auth", "can-i", "list", "pods", "-A", "--as=system:serviceaccount:default:nobody", check=False)
    assert r.stdout.strip() == "no", f"unprivileged user can list pods: {r.stdout!r} {r.stderr!r}"


def test_namespace_create_delete():
    ns = f"harness-{RUN_ID}"
    kubectl("create", "namespace", ns)
    got = json.loads(kubectl("get", "namespace", ns, "-o", "json").stdout)
    assert got["status"]["phase"] == "Active", got["status"]
    kubectl("delete", "namespace", ns, "--wait=false")

    # Without kube-controller-manager the namespace stays Terminating; with it, it goes away.
    def gone_or_terminating():
        r = kubectl("get", "namespace", ns, "-o", "json", check=False)
        if r.returncode != 0:
            return "NotFound" in r.stderr
        return json.loads(r.stdout)["status"]["phase"] == "Terminating"

    poll(f"namespace {ns} to be deleted", gone_or_terminating, timeout=30)


def test_pod_create_delete():
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"harness-pod-{RUN_ID}", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/none:1"}]},
    }
    kubectl("create", "-f", "-", stdin=json.dumps(pod))
    got = json.loads(kubectl("get", "pod", pod["metadata"]["name"], "-o", "json").stdout)
    assert got["status"].get("phase") == "Pending", got["status"]
    # An unscheduled pod is deleted at once.
    kubectl("delete", "pod", pod["metadata"]["name"], "--wait=true", "--timeout=30s")


def main() -> int:
    tests = [v for k, v in list(globals().items()) if k.startswith("test_") and callable(v)]
    passed = failed = 0
    for t in tests:
        start = time.monotonic()
        try:
            t()
        except Exception:  # noqa: BLE001
            failed += 1
            print(f"FAIL {t.__name__} ({time.monotonic() - start:.1f}s)")
            traceback.print_exc(file=sys.stdout)
            if t is test_environment:
                break
        else:
            passed += 1
            print(f"PASS {t.__name__} ({time.monotonic() - start:.1f}s)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
