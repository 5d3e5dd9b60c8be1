#!/usr/bin/env python3
"""The chart against a real API server (tools/k8s, fixture kube_integration), and the controller
running with exactly the chart's RBAC.

0. (last) upstream's chart installed with test/helm/values/upstream.yaml (every upstream key),
   `helm upgrade` to charts/dovetail and back: the Deployment, ServiceAccount, Service and PDB
   keep their names and UIDs, the selector stays upstream's.
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


def leaf_paths(values: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(values, dict) and values:
        return [p for k, v in values.items() for p in leaf_paths(v, (*path, k))]
    return [path]


def has_path(values: object, path: tuple[str, ...]) -> bool:
    for key in path:
        if not isinstance(values, dict) or key not in values:
            return False
        values = values[key]
    return True


def upgrade_from_upstream() -> None:
    """`helm upgrade karpenter charts/dovetail -f values` over an install of upstream's chart
    (tools/helm/upstream-chart), and back: names, UIDs and the Deployment's selector survive."""
    upstream = Path(os.environ["DOVETAIL_UPSTREAM_CHART"])
    values_file = ROOT / "test" / "helm" / "values" / "upstream.yaml"
    ours = yaml.safe_load(values_file.read_text())
    missing = [".".join(p) for p in leaf_paths(yaml.safe_load((upstream / "values.yaml").read_text()))
               if not has_path(ours, p)]
    check(f"values/upstream.yaml sets every key of upstream's values.yaml ({upstream.parent.name})",
          not missing, ", ".join(missing))

    ns = "karpenter"
    kinds = ("deployment", "serviceaccount", "service", "poddisruptionbudget")

    def objects() -> dict[str, dict]:
        out = {}
        for kind in kinds:
            got = kubectl("get", kind, "karpenter", "-n", ns, "-o", "json", check_rc=False)
            out[kind] = json.loads(got.stdout) if got.returncode == 0 else {}
        return out

    def helm_run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([HELM, *args, "--namespace", ns, "-f", str(values_file)],
                              capture_output=True, text=True)

    kubectl("create", "namespace", ns, check_rc=False)
    installed = helm_run("install", "karpenter", str(upstream))
    if not check("upstream's chart installs with values/upstream.yaml", installed.returncode == 0,
                 installed.stderr[-800:]):
        return
    before = objects()
    admin_uid = json.loads(kubectl("get", "clusterrole", "karpenter-admin", "-o", "json").stdout)["metadata"]["uid"]
    check("upstream's install made Deployment, ServiceAccount, Service and PDB `karpenter`",
          all(before.values()), str({k: bool(v) for k, v in before.items()}))

    upgraded = helm_run("upgrade", "karpenter", str(CHART))
    check("helm upgrade karpenter charts/dovetail over it succeeds", upgraded.returncode == 0,
          upgraded.stderr[-800:])
    after = objects()
    for kind in kinds:
        check(f"the {kind} karpenter is kept (same UID)",
              bool(after[kind]) and after[kind]["metadata"]["uid"] == before[kind]["metadata"].get("uid"))
    got = kubectl("get", "clusterrole", "karpenter-admin", "-o", "json", check_rc=False)
    check("the ClusterRole karpenter-admin (aggregated to admin) is kept (same UID)",
          got.returncode == 0 and json.loads(got.stdout)["metadata"]["uid"] == admin_uid, got.stderr)
    dep = after["deployment"]
    if dep:
        check("the Deployment's selector is upstream's",
              dep["spec"]["selector"] == before["deployment"]["spec"]["selector"], str(dep["spec"]["selector"]))
        ctr = dep["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in ctr.get("env", [])}
        check("the Deployment now runs Dovetail (image and DOVETAIL_CLOUD_PROVIDER)",
              ctr["image"].startswith(ours["controller"]["image"]["repository"])
              and env.get("DOVETAIL_CLOUD_PROVIDER") == "aws", ctr["image"])
        check("under the same ServiceAccount",
              dep["spec"]["template"]["spec"]["serviceAccountName"] == "karpenter")
    sa = after["serviceaccount"]
    check("the ServiceAccount keeps its IRSA annotation",
          bool(sa) and sa["metadata"].get("annotations", {}).get("eks.amazonaws.com/role-arn")
          == ours["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"])
    notes = upgraded.stdout.split("NOTES:", 1)[-1]
    check("the upgrade's notes say no ServiceMonitor was created (no Prometheus Operator CRDs)",
          "no ServiceMonitor was created" in notes, notes[-600:])

    back = helm_run("upgrade", "karpenter", str(upstream))
    check("and back: helm upgrade to upstream's chart succeeds", back.returncode == 0, back.stderr[-800:])
    again = objects()
    check("and back: the Deployment, ServiceAccount, Service and PDB are still the same objects",
          all(again[k] and again[k]["metadata"]["uid"] == before[k]["metadata"].get("uid") for k in kinds))


def main() -> int:
    binary = sys.argv[1]
    rendered = subprocess.run(
        [HELM, "template", RELEASE, str(CHART), "--namespace", NS, "--include-crds",
         "--set", "dovetail.cloudProvider=kwok"], check=True, capture_output=True, text=True).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]

    kubectl("create", "namespace", NS, check_rc=False)
    applied = kubectl("apply", "-f", "-", stdin=rendered, check_rc=False)
    check("kube-apiserver accepts every rendered object", applied.returncode == 0, applied.stderr)
    # Retried: `kubectl wait` fails at once on a CRD whose status has no conditions yet.
    deadline = time.monotonic() + 60
    while kubectl("wait", "--for=condition=Established", "crd/nodepools.karpenter.sh",
                  "crd/nodeclaims.karpenter.sh", "crd/ec2nodeclasses.karpenter.k8s.aws",
                  "--timeout=30s", check_rc=False).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError("the CRDs are not Established within 60 s")
        time.sleep(0.5)

    sa = next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]["name"]
    who = f"system:serviceaccount:{NS}:{sa}"
    allowed = [
        ("list", "nodes", ""), ("watch", "pods", ""), ("delete", "pods", "-n=default"),
        ("create", "pods", "-n=default --subresource=eviction"),
        ("patch", "nodeclaims.karpenter.sh", "--subresource=status"),
        ("create", "nodeclaims.karpenter.sh", ""), ("list", "nodepools.karpenter.sh", ""),
        ("create", "nodes", ""), ("list", "poddisruptionbudgets.policy", ""),
        ("list", "daemonsets.apps", ""), ("create", "events.events.k8s.io", "-n=default"),
        ("list", "volumeattachments.storage.k8s.io", ""), ("watch", "persistentvolumes", ""),
        ("watch", "persistentvolumeclaims", ""), ("list", "storageclasses.storage.k8s.io", ""),
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
        [HELM, "install", "karpenter", str(CHART), "--namespace", "dovetail-notes", "--dry-run=client",
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

    # Values that name upstream's image, or monitoring without the Prometheus Operator's CRDs:
    # the notes say what was done instead.
    dry = subprocess.run(
        [HELM, "install", "karpenter", str(CHART), "--namespace", "dovetail-notes", "--dry-run=client",
         "--set", "settings.clusterName=c", "--set", "prometheusRule.enabled=true",
         "--set", "serviceMonitor.enabled=true",
         "--set", "controller.image.repository=public.ecr.aws/karpenter/controller",
         "--set", "controller.image.digest=sha256:" + "ab" * 32],
        capture_output=True, text=True)
    notes = dry.stdout.split("NOTES:", 1)[-1] if "NOTES:" in dry.stdout else ""
    app = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    check("upstream's image in the values: the notes say Dovetail's runs instead",
          dry.returncode == 0 and "is upstream Karpenter's image" in notes
          and f"dovetail/controller:{app} runs instead" in notes, (dry.stderr or notes)[-600:])
    check("monitoring without its CRDs: the notes say no ServiceMonitor/PrometheusRule was created",
          "no ServiceMonitor was created" in notes and "no PrometheusRule was created" in notes,
          notes[-600:])

    upgrade_from_upstream()

    # Nothing is deleted: without a controller manager a deleted namespace never finalizes, and
    # every step above is idempotent (the fixture's cluster is new for each ctest run).
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
