#!/usr/bin/env python3
"""The chart against a real API server (tools/k8s, fixture kube_integration), and the controller
running with exactly the chart's RBAC.

1. `helm template` (kwok provider) is applied: CRDs, ServiceAccount, ClusterRole/Role and their
   bindings, Deployment, PDB and Service are accepted by kube-apiserver's validation.
2. `kubectl auth can-i --as system:serviceaccount:<ns>:<sa>`: what the controller needs is
   allowed, Secrets/ConfigMaps and other Leases are not.
3. `dovetail controller` runs with a token of that ServiceAccount and the Deployment's environment
   (leader election on): its informers sync, it wins the Lease in the release namespace, /readyz
   answers 200, its log has no "forbidden", and SIGTERM releases the Lease and exits 0.

Usage: helm_install_test.py <dovetail binary>. Needs KUBECONFIG and DOVETAIL_K8S_BIN (CTest sets
them) and HELM. Prints 'N passed, N failed'.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "dovetail"
NS, RELEASE = "dovetail-helm", "helmtest"

try:
    import yaml
except ImportError:
    venv_python = ROOT / ".cache" / "venv" / "bin" / "python"
    if venv_python.exists() and Path(sys.executable).resolve() != venv_python.resolve():
        os.execv(str(venv_python), [str(venv_python), *sys.argv])
    raise

KUBECTL = str(Path(os.environ["DOVETAIL_K8S_BIN"]) / "kubectl")
HELM = os.environ.get("HELM") or str(Path(subprocess.run(
    [str(ROOT / "tools/helm/build"), "--print-bin-dir"], check=True, capture_output=True,
    text=True).stdout.strip()) / "helm")
results = {"passed": 0, "failed": 0}


def check(name: str, ok: bool, detail: str = "") -> bool:
    results["passed" if ok else "failed"] += 1
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok or not detail else f": {detail}"))
    return ok


def kubectl(*args: str, stdin: str | None = None, check_rc: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True)
    if check_rc and proc.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")
    return proc


def main() -> int:
    binary = sys.argv[1]
    rendered = subprocess.run(
        [HELM, "template", RELEASE, str(CHART), "--namespace", NS, "--include-crds",
         "--set", "dovetail.cloudProvider=kwok"], check=True, capture_output=True, text=True).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]

    kubectl("create", "namespace", NS, check_rc=False)
    applied = kubectl("apply", "-f", "-", stdin=rendered, check_rc=False)
    check("kube-apiserver accepts every rendered object", applied.returncode == 0, applied.stderr)
    for crd in ("nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"):
        kubectl("wait", "--for=condition=Established", f"crd/{crd}", "--timeout=60s")

    sa = next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]["name"]
    who = f"system:serviceaccount:{NS}:{sa}"
    allowed = [
        ("list", "nodes", ""), ("watch", "pods", ""), ("delete", "pods", "-n=default"),
        ("create", "pods", "-n=default --subresource=eviction"),
        ("patch", "nodeclaims.karpenter.sh", "--subresource=status"),
        ("create", "nodeclaims.karpenter.sh", ""), ("list", "nodepools.karpenter.sh", ""),
        ("create", "nodes", ""), ("list", "poddisruptionbudgets.policy", ""),
        ("list", "daemonsets.apps", ""), ("create", "events.events.k8s.io", "-n=default"),
        ("list", "volumeattachments.storage.k8s.io", ""),
        ("create", "leases.coordination.k8s.io", f"-n={NS}"),
        ("update", "leases.coordination.k8s.io/karpenter-leader-election", f"-n={NS}"),
    ]
    denied = [
        ("get", "secrets", "-n=kube-system"), ("list", "secrets", "--all-namespaces"),
        ("get", "configmaps", "-n=kube-system"), ("list", "configmaps", "--all-namespaces"),
        ("update", "leases.coordination.k8s.io/kube-scheduler", "-n=kube-system"),
        ("update", "leases.coordination.k8s.io/other", f"-n={NS}"),
        ("create", "leases.coordination.k8s.io", "-n=kube-system"),
        ("patch", "nodepools.karpenter.sh", ""), ("create", "pods", "-n=default"),
        ("patch", "nodepools.karpenter.sh", "--subresource=status"),
        ("update", "nodeclaims.karpenter.sh", "--subresource=status"),
        ("list", "ec2nodeclasses.karpenter.k8s.aws", ""),  # kwok: no EC2NodeClass rules
    ]
    for verb, res, scope in allowed + denied:
        args = ["auth", "can-i", verb, res, f"--as={who}", *scope.split()]
        answer = kubectl(*args, check_rc=False).stdout.strip()
        want = "yes" if (verb, res, scope) in allowed else "no"
        check(f"can-i {verb} {res} {scope}".strip() + f": {want}", answer == want, answer)

    # A kubeconfig with a token of the chart's ServiceAccount.
    token = kubectl("create", "token", sa, "-n", NS, "--duration=1h").stdout.strip()
    admin = json.loads(kubectl("config", "view", "--raw", "--minify", "-o", "json").stdout)
    cluster = admin["clusters"][0]["cluster"]
    work = Path(tempfile.mkdtemp(prefix="helm-install-"))
    kubeconfig = work / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}]}))

    # The Deployment's environment, fieldRefs resolved as the kubelet would.
    container = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG",)}
    for e in container["env"]:
        if "value" in e:
            env[e["name"]] = e["value"]
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            env[e["name"]] = NS
    env["KUBECONFIG"] = str(kubeconfig)
    lease = env["LEADER_ELECTION_NAME"]
    log_path = work / "controller.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([binary, *container["args"], "--metrics-port", "0",
                                 "--health-probe-port", "0"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline, holder, ready = time.time() + 120, "", False
        health = None
        while time.time() < deadline and proc.poll() is None:
            for line in open(log_path):
                if '"message":"serving"' in line:
                    health = json.loads(line).get("healthProbePort")
            got = kubectl("get", "lease", lease, "-n", NS, "-o", "json", check_rc=False)
            if got.returncode == 0:
                holder = json.loads(got.stdout)["spec"].get("holderIdentity", "")
            if health and holder and not ready:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=5) as r:
                        ready = r.status == 200
                except OSError:
                    pass
            if holder and ready:
                break
            time.sleep(1)
        check("the controller, with the chart's RBAC, holds the Lease in the release namespace",
              bool(holder), f"exit {proc.poll()}")
        check("/readyz answers 200 (informers synced under the chart's RBAC)", ready)
        time.sleep(3)  # let the controllers start their first passes
        check("the controller is still running", proc.poll() is None, f"exit {proc.poll()}")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    text = log_path.read_text()
    forbidden = [l for l in text.splitlines() if "forbidden" in l.lower()]
    check("no 'forbidden' in the controller's log", not forbidden, "\n".join(forbidden[:5]))
    check("SIGTERM: exit 0", proc.returncode == 0, str(proc.returncode))
    got = kubectl("get", "lease", lease, "-n", NS, "-o", "json", check_rc=False)
    released = got.returncode == 0 and not json.loads(got.stdout)["spec"].get("holderIdentity")
    check("SIGTERM released the Lease", released, got.stdout[-300:])
    if results["failed"]:
        print("---- controller log (tail) ----")
        print("\n".join(text.splitlines()[-40:]))

    # The install command of Karpenter's pre-v1 guide: its top-level keys are mapped to their v1
    # settings with a deprecation note in the install output (NOTES.txt); `helm install
    # --dry-run=client` asks the API server only for its version.
    dry = subprocess.run(
        [HELM, "install", "karpenter", str(CHART), "--namespace", NS, "--dry-run=client",
         "--set", "clusterName=guide", "--set", "clusterEndpoint=https://guide.example",
         "--set", "settings.aws.interruptionQueueName=guide-queue",
         "--set", "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::1:role/k"],
        capture_output=True, text=True)
    notes = dry.stdout.split("NOTES:", 1)[-1] if "NOTES:" in dry.stdout else ""
    check("pre-v1 keys: helm install shows a deprecation note for each",
          dry.returncode == 0 and "clusterName is deprecated" in notes
          and "clusterEndpoint is deprecated" in notes
          and "settings.aws.interruptionQueueName is deprecated" in notes,
          (dry.stderr or notes)[-600:])
    check("pre-v1 keys reach the controller's environment",
          '"guide"' in dry.stdout and '"https://guide.example"' in dry.stdout
          and '"guide-queue"' in dry.stdout, dry.stdout[-400:])

    # Nothing is deleted: without a controller manager a deleted namespace never finalizes, and
    # every step above is idempotent (the fixture's cluster is new for each ctest run).
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
