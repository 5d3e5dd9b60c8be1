#!/usr/bin/env python3
"""Proves Dovetail's CRDs (charts/dovetail/crds) against a real kube-apiserver.

Installs the three CRDs with server-side apply, waits until they are Established and served, then:
  * every test/testdata/validation/valid/*.yaml is created for real, checked and deleted;
  * every test/testdata/validation/invalid/*.yaml marked `# server: reject` is rejected by the
    server (server-side dry run) as a validation error (HTTP 422 Invalid) that names the expected
    field path and contains the expected message; cases marked `# server: client-only` must be
    accepted by the server (their rule lives only in Dovetail's own validator);
  * defaults, the status and /scale subresources, printer columns, short names and categories,
    NodeClaim spec immutability, nodeClassRef group/kind immutability, the static/dynamic switch of
    NodePools and the role/instanceProfile switch of EC2NodeClasses behave as upstream's.

Objects are created under a `crdtest-` name prefix so that the test can share a cluster with other
tests. Environment: KUBECONFIG (required) and DOVETAIL_K8S_BIN (directory holding kubectl; when
unset, tools/k8s/build --print-bin-dir is asked). Standard library only.

Usage: crd_validation_test.py [-k SUBSTRING]   (only cases whose name contains SUBSTRING)
Prints one line per case and ends with exactly `N passed, M failed`; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "charts" / "dovetail" / "crds"
CORPUS = ROOT / "test" / "testdata" / "validation"
CRDS = ["nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"]
PREFIX = "crdtest-"
MIN_INVALID_CASES = 45

# Errors that mean "the server is not ready for this yet", worth retrying.
TRANSIENT = re.compile(
    r"connection refused|no matches for kind|the server could not find the requested resource|"
    r"ensure CRDs are installed|Unable to connect to the server|TLS handshake timeout|"
    r"the server is currently unable to handle the request|i/o timeout|EOF|"
    r"etcdserver: request timed out|resource mapping not found",
    re.IGNORECASE)

# "<path>: <kind of error>" as printed by kubectl for field errors of an Invalid status.
FIELD_ERROR = re.compile(
    r"(?:^|[\s\[,*:])([A-Za-z][\w\-./\[\]]*?): (?:Invalid value|Required value|Unsupported value|"
    r"Too many|Too long|Forbidden|Duplicate value|Not found|Internal error)")


class Kubectl:
    def __init__(self, binary: str):
        self.binary = binary

    def run(self, *args: str, stdin: str | None = None, timeout: float = 60,
            retry_transient: bool = True) -> subprocess.CompletedProcess:
        deadline = time.monotonic() + 60
        while True:
            proc = subprocess.run([self.binary, *args], input=stdin, capture_output=True,
                                  text=True, timeout=timeout)
            if (proc.returncode == 0 or not retry_transient or
                    not TRANSIENT.search(proc.stderr) or time.monotonic() > deadline):
                return proc
            time.sleep(1)

    def json(self, *args: str) -> dict:
        proc = self.run(*args, "-o", "json")
        if proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
        return json.loads(proc.stdout)


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def ok(self, name: str, detail: str = "") -> None:
        self.passed += 1
        print(f"PASS {name}" + (f"  ({detail})" if detail else ""), flush=True)

    def fail(self, name: str, why: str) -> None:
        self.failed += 1
        print(f"FAIL {name}\n     " + why.replace("\n", "\n     "), flush=True)

    def check(self, name: str, fn) -> None:
        """Runs fn(); a returned string is a pass detail, an AssertionError/RuntimeError a failure."""
        try:
            detail = fn()
        except (AssertionError, RuntimeError, subprocess.TimeoutExpired, KeyError,
                json.JSONDecodeError) as e:
            self.fail(name, f"{type(e).__name__}: {e}")
        else:
            self.ok(name, detail or "")


def find_kubectl() -> str:
    bin_dir = os.environ.get("DOVETAIL_K8S_BIN")
    if not bin_dir:
        proc = subprocess.run([str(ROOT / "tools" / "k8s" / "build"), "--print-bin-dir"],
                              capture_output=True, text=True)
        bin_dir = proc.stdout.strip()
    path = Path(bin_dir) / "kubectl" if bin_dir else None
    if not path or not os.access(path, os.X_OK):
        sys.exit(f"crd_validation_test: no kubectl in DOVETAIL_K8S_BIN={bin_dir!r}")
    return str(path)


# ---------------------------------------------------------------------------------------------
# Setup


def install_crds(k: Kubectl) -> None:
    files = sorted(CRD_DIR.glob("*.yaml"))
    args = ["apply", "--server-side", "--force-conflicts", "--field-manager=dovetail-crd-test"]
    for f in files:
        args += ["-f", str(f)]
    proc = k.run(*args)
    if proc.returncode != 0:
        raise RuntimeError(f"installing the CRDs failed:\n{proc.stderr.strip()}")
    deadline = time.monotonic() + 90
    pending = list(CRDS)
    while pending:
        name = pending[0]
        proc = k.run("get", "crd", name, "-o", "json")
        if proc.returncode == 0:
            crd = json.loads(proc.stdout)
            # A CRD just created may carry `"conditions": null` until the API server sets them.
            conds = {c["type"]: c for c in (crd.get("status") or {}).get("conditions") or []}
            if conds.get("NamesAccepted", {}).get("status") == "False":
                raise RuntimeError(f"CRD {name} names not accepted: {conds['NamesAccepted']}")
            if conds.get("Established", {}).get("status") == "True":
                # Established: now wait until the resource is really served (discovery caught up).
                if k.run("get", name, "-o", "name", retry_transient=False).returncode == 0:
                    pending.pop(0)
                    continue
        if time.monotonic() > deadline:
            raise RuntimeError(f"CRD {name} not Established and served after 90s: "
                               f"{proc.stdout or proc.stderr}")
        time.sleep(0.5)


def to_json(k: Kubectl, path: Path) -> dict:
    """The object of a YAML file as JSON (client-side conversion by kubectl)."""
    proc = k.run("create", "--dry-run=client", "--validate=false", "-o", "json", "-f", str(path))
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl cannot read {path}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def resource_of(obj: dict) -> str:
    return {"NodePool": "nodepools.karpenter.sh", "NodeClaim": "nodeclaims.karpenter.sh",
            "EC2NodeClass": "ec2nodeclasses.karpenter.k8s.aws"}[obj["kind"]]


def delete(k: Kubectl, resource: str, name: str) -> None:
    k.run("delete", resource, name, "--ignore-not-found", "--wait=true", "--timeout=30s")


def create(k: Kubectl, obj: dict, *extra: str) -> subprocess.CompletedProcess:
    return k.run("create", "-f", "-", "-o", "json", *extra, stdin=json.dumps(obj))


# ---------------------------------------------------------------------------------------------
# Corpus


def parse_header(path: Path) -> dict:
    meta = {}
    for line in path.read_text().splitlines():
        m = re.match(r"#\s*(expect-field|expect-message|server|why):\s*(.*?)\s*$", line)
        if m:
            meta[m.group(1)] = m.group(2)
        elif line.strip() and not line.startswith("#"):
            break
    return meta


def norm_path(p: str) -> str:
    # labels[team] and labels.team both name the same map entry; indices stay as [N].
    p = re.sub(r"\[([^\]0-9][^\]]*)\]", r".\1", p.strip())
    return p.strip(".").lower()


def server_field_paths(stderr: str) -> list[str]:
    return [m.group(1) for m in FIELD_ERROR.finditer(stderr)]


def check_valid(k: Kubectl, path: Path):
    obj = to_json(k, path)
    name = PREFIX + obj["metadata"]["name"]
    obj["metadata"]["name"] = name
    resource = resource_of(obj)
    delete(k, resource, name)
    proc = create(k, obj)
    try:
        assert proc.returncode == 0, f"server rejected a valid object:\n{proc.stderr.strip()}"
        created = json.loads(proc.stdout)
        # Nothing the file says may have been pruned (the schema must know every field).
        missing = list(pruned_fields(obj.get("spec", {}), created.get("spec", {}), "spec"))
        assert not missing, "fields dropped by the server (unknown to the schema): " + \
            ", ".join(missing)
    finally:
        delete(k, resource, name)


def pruned_fields(sent, got, path):
    if isinstance(sent, dict):
        if not isinstance(got, dict):
            yield path
            return
        for key, v in sent.items():
            if key not in got:
                yield f"{path}.{key}"
            else:
                yield from pruned_fields(v, got[key], f"{path}.{key}")
    elif isinstance(sent, list) and isinstance(got, list):
        for i, (a, b) in enumerate(zip(sent, got)):
            yield from pruned_fields(a, b, f"{path}[{i}]")


def check_invalid(k: Kubectl, path: Path, meta: dict):
    obj = to_json(k, path)
    obj["metadata"]["name"] = PREFIX + obj["metadata"]["name"]
    proc = create(k, obj, "--dry-run=server")
    if meta["server"] == "client-only":
        assert proc.returncode == 0, (
            "marked client-only but the server rejects it (mark it `server: reject`):\n"
            + proc.stderr.strip())
        return "accepted by the server; enforced by Dovetail's validator only"
    assert proc.returncode != 0, "the server accepted an invalid object"
    err = proc.stderr.strip()
    assert "is invalid" in err or "(Invalid)" in err, f"not a validation (422 Invalid) error:\n{err}"
    want = norm_path(meta["expect-field"])
    got = [norm_path(p) for p in server_field_paths(err)]
    message_ok = meta["expect-message"].lower() in err.lower()
    if want in got:
        assert message_ok, (f"field {meta['expect-field']} matches but the message lacks "
                            f"{meta['expect-message']!r}:\n{err}")
        return meta["expect-field"]
    # Loose match: the server blamed an enclosing field, and the message is the expected one.
    ancestors = [g for g in got if want.startswith(g + ".") or want.startswith(g + "[")]
    if ancestors and message_ok:
        return f"{meta['expect-field']} via enclosing {ancestors[0]}"
    raise AssertionError(
        f"expected field {meta['expect-field']!r} with message {meta['expect-message']!r};\n"
        f"server blamed {server_field_paths(err) or 'no parsable field'}:\n{err}")


# ---------------------------------------------------------------------------------------------
# Behaviour of the API beyond per-object validation

NODECLASS_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


def nodepool(name: str, **spec) -> dict:
    s = {"template": {"spec": {"nodeClassRef": dict(NODECLASS_REF), "requirements": []}}}
    s.update(spec)
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": s}


def must_create(k: Kubectl, obj: dict) -> dict:
    delete(k, resource_of(obj), obj["metadata"]["name"])
    proc = create(k, obj)
    if proc.returncode != 0:
        raise RuntimeError(f"creating {obj['kind']} {obj['metadata']['name']} failed: "
                           f"{proc.stderr.strip()}")
    return json.loads(proc.stdout)


def patch(k: Kubectl, resource: str, name: str, body, kind="merge", subresource=None):
    args = ["patch", resource, name, "--type", kind, "-p", json.dumps(body), "-o", "json"]
    if subresource:
        args.append(f"--subresource={subresource}")
    return k.run(*args)


def expect_rejected(proc, message: str) -> None:
    assert proc.returncode != 0, f"the server accepted a change it must reject ({message})"
    assert message.lower() in proc.stderr.lower(), \
        f"rejected, but without {message!r}:\n{proc.stderr.strip()}"


def expect_ok(proc, what: str) -> dict:
    assert proc.returncode == 0, f"{what} failed:\n{proc.stderr.strip()}"
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_nodepool_defaults(k: Kubectl):
    name = PREFIX + "defaults"
    try:
        got = must_create(k, nodepool(name))["spec"]
        want = {"consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "budgets": [{"nodes": "10%"}]}
        assert got.get("disruption") == want, f"disruption defaulted to {got.get('disruption')}"
        assert got["template"]["spec"].get("expireAfter") == "720h", \
            f"expireAfter defaulted to {got['template']['spec'].get('expireAfter')}"
        got = must_create(k, nodepool(name + "-2", disruption={"budgets": [{}, {"nodes": "3"}]}))
        assert got["spec"]["disruption"]["budgets"] == [{"nodes": "10%"}, {"nodes": "3"}], \
            f"budget nodes defaulted to {got['spec']['disruption']['budgets']}"
    finally:
        delete(k, "nodepools.karpenter.sh", name)
        delete(k, "nodepools.karpenter.sh", name + "-2")


def test_ec2nodeclass_defaults(k: Kubectl):
    name = PREFIX + "defaults"
    obj = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
           "metadata": {"name": name},
           "spec": {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                    "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                    "securityGroupSelectorTerms": [{"tags": {"a": "b"}}]}}
    try:
        got = must_create(k, obj)["spec"].get("metadataOptions")
        want = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                "httpPutResponseHopLimit": 1, "httpTokens": "required"}
        assert got == want, f"metadataOptions defaulted to {got}"
        obj["metadata"]["name"] = name + "-2"
        obj["spec"]["metadataOptions"] = {"httpTokens": "optional"}
        got = must_create(k, obj)["spec"]["metadataOptions"]
        assert got == dict(want, httpTokens="optional"), f"partial metadataOptions became {got}"
    finally:
        delete(k, "ec2nodeclasses.karpenter.k8s.aws", name)
        delete(k, "ec2nodeclasses.karpenter.k8s.aws", name + "-2")


def test_nodepool_status_subresource(k: Kubectl):
    name = PREFIX + "status"
    res = "nodepools.karpenter.sh"
    try:
        before = must_create(k, nodepool(name, weight=10))
        status = {"nodes": 2, "resources": {"cpu": "4", "memory": "16Gi", "nodes": "2"},
                  "nodeClassObservedGeneration": 1,
                  "conditions": [{"type": "Ready", "status": "True", "reason": "Ready",
                                  "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z",
                                  "observedGeneration": 1}]}
        after = expect_ok(patch(k, res, name, {"status": status}, subresource="status"),
                          "status patch")
        assert after["status"]["nodes"] == 2, f"status.nodes is {after['status'].get('nodes')}"
        assert after["status"]["conditions"][0]["status"] == "True", after["status"]
        assert after["spec"] == before["spec"], "the status patch changed spec"
        # A status patch cannot change spec, a main-resource patch cannot change status.
        after = expect_ok(patch(k, res, name, {"spec": {"weight": 99}}, subresource="status"),
                          "status patch carrying spec")
        assert after["spec"]["weight"] == 10, "spec changed through the status subresource"
        after = expect_ok(patch(k, res, name, {"status": {"nodes": 7}}), "main patch")
        assert after["status"]["nodes"] == 2, "status changed through the main resource"
        read = k.json("get", res, name)
        assert read["status"]["nodes"] == 2 and read["spec"] == before["spec"], read
        # Printer columns, wide ones included.
        proc = k.run("get", res, name, "-o", "wide")
        assert proc.returncode == 0, proc.stderr
        header, row = proc.stdout.splitlines()[:2]
        assert header.split() == ["NAME", "NODECLASS", "NODES", "READY", "AGE", "WEIGHT", "CPU",
                                  "MEMORY"], f"columns: {header}"
        cells = row.split()
        assert cells[1:4] == ["default", "2", "True"] and cells[5:8] == ["10", "4", "16Gi"], row
    finally:
        delete(k, res, name)


def test_nodepool_scale_subresource(k: Kubectl):
    name = PREFIX + "scale"
    res = "nodepools.karpenter.sh"
    try:
        must_create(k, nodepool(name, replicas=2, limits={"nodes": "10"}))
        proc = k.run("scale", res, name, "--replicas=5")
        assert proc.returncode == 0, f"kubectl scale failed:\n{proc.stderr.strip()}"
        assert k.json("get", res, name)["spec"]["replicas"] == 5, "spec.replicas not scaled"
        expect_ok(patch(k, res, name, {"status": {"nodes": 3}}, subresource="status"),
                  "status patch")
        scale = json.loads(k.run("get", "--raw",
                                 f"/apis/karpenter.sh/v1/nodepools/{name}/scale").stdout)
        assert scale["kind"] == "Scale", scale
        assert scale["spec"]["replicas"] == 5 and scale["status"]["replicas"] == 3, scale
        # Negative replicas through /scale are rejected like on the resource itself.
        proc = k.run("scale", res, name, "--replicas=-1")
        assert proc.returncode != 0, "scaling to -1 was accepted"
    finally:
        delete(k, res, name)


def test_nodepool_static_dynamic_switch(k: Kubectl):
    res = "nodepools.karpenter.sh"
    dyn, static = PREFIX + "dynamic", PREFIX + "static"
    try:
        must_create(k, nodepool(dyn))
        must_create(k, nodepool(static, replicas=1))
        expect_rejected(patch(k, res, dyn, {"spec": {"replicas": 3}}),
                        "cannot switch a NodePool between static")
        expect_rejected(k.run("scale", res, dyn, "--replicas=3"),
                        "cannot switch a NodePool between static")
        expect_rejected(patch(k, res, static, [{"op": "remove", "path": "/spec/replicas"}],
                              kind="json"), "cannot switch a NodePool between static")
        expect_ok(patch(k, res, static, {"spec": {"replicas": 4}}), "changing replicas")
    finally:
        delete(k, res, dyn)
        delete(k, res, static)


def test_nodeclassref_immutable(k: Kubectl):
    name = PREFIX + "noderef"
    res = "nodepools.karpenter.sh"
    ref = "/spec/template/spec/nodeClassRef"
    try:
        must_create(k, nodepool(name))
        expect_rejected(patch(k, res, name, [{"op": "replace", "path": ref + "/group",
                                              "value": "karpenter.kwok.sh"}], kind="json"),
                        "nodeClassRef.group is immutable")
        expect_rejected(patch(k, res, name, [{"op": "replace", "path": ref + "/kind",
                                              "value": "KWOKNodeClass"}], kind="json"),
                        "nodeClassRef.kind is immutable")
        got = expect_ok(patch(k, res, name, [{"op": "replace", "path": ref + "/name",
                                              "value": "other"}], kind="json"), "renaming ref")
        assert got["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "other"
    finally:
        delete(k, res, name)


def test_nodeclaim_immutable(k: Kubectl):
    name = PREFIX + "immutable"
    res = "nodeclaims.karpenter.sh"
    obj = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": name},
           "spec": {"nodeClassRef": dict(NODECLASS_REF),
                    "requirements": [{"key": "kubernetes.io/arch", "operator": "In",
                                      "values": ["amd64"]}]}}
    try:
        must_create(k, obj)
        expect_rejected(patch(k, res, name, {"spec": {"expireAfter": "1h"}}), "spec is immutable")
        expect_rejected(patch(k, res, name, {"spec": {"requirements": []}}), "spec is immutable")
        expect_ok(patch(k, res, name, {"metadata": {"labels": {"karpenter.sh/nodepool": "x"}}}),
                  "labelling a NodeClaim")
        got = expect_ok(patch(k, res, name, {"status": {
            "providerID": "aws:///us-west-2a/i-0123456789abcdef0", "nodeName": "ip-10-0-0-1",
            "capacity": {"cpu": "2"}, "lastPodEventTime": "2025-01-01T00:00:00Z",
            "conditions": [{"type": "Launched", "status": "True", "reason": "Launched",
                            "lastTransitionTime": "2025-01-01T00:00:00Z"}]}},
            subresource="status"), "NodeClaim status patch")
        assert got["status"]["providerID"].endswith("i-0123456789abcdef0"), got["status"]
        proc = k.run("get", res, name, "-o", "wide")
        header = proc.stdout.splitlines()[0].split()
        assert header == ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE", "IMAGEID",
                          "ID", "NODEPOOL", "NODECLASS", "DRIFTED"], f"columns: {header}"
    finally:
        delete(k, res, name)


def test_ec2nodeclass_role_switch_and_names(k: Kubectl):
    name = PREFIX + "role"
    res = "ec2nodeclasses.karpenter.k8s.aws"
    obj = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
           "metadata": {"name": name},
           "spec": {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                    "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                    "securityGroupSelectorTerms": [{"tags": {"a": "b"}}]}}
    try:
        must_create(k, obj)
        expect_rejected(patch(k, res, name, {"spec": {"role": None, "instanceProfile": "p"}}),
                        "changing between 'role' and 'instanceProfile' is not supported")
        expect_ok(patch(k, res, name, {"spec": {"role": "other-role"}}), "changing the role")
        for short in ("ec2nc", "ec2ncs"):
            proc = k.run("get", short, name, "-o", "name")
            assert proc.returncode == 0, f"short name {short}: {proc.stderr.strip()}"
        proc = k.run("get", "karpenter", "-o", "name")
        assert proc.returncode == 0 and f"ec2nodeclass.karpenter.k8s.aws/{name}" in proc.stdout, \
            f"category karpenter does not list the node class: {proc.stdout}{proc.stderr}"
        header = k.run("get", res, name, "-o", "wide").stdout.splitlines()[0].split()
        assert header == ["NAME", "READY", "AGE", "ROLE"], f"columns: {header}"
    finally:
        delete(k, res, name)


BEHAVIOUR = [
    ("nodepool defaults", test_nodepool_defaults),
    ("ec2nodeclass defaults", test_ec2nodeclass_defaults),
    ("nodepool status subresource and printer columns", test_nodepool_status_subresource),
    ("nodepool /scale subresource", test_nodepool_scale_subresource),
    ("nodepool static/dynamic switch rejected", test_nodepool_static_dynamic_switch),
    ("nodeClassRef group/kind immutable", test_nodeclassref_immutable),
    ("nodeclaim spec immutable, status writable", test_nodeclaim_immutable),
    ("ec2nodeclass role switch, short names, category", test_ec2nodeclass_role_switch_and_names),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="only cases whose name contains this substring")
    args = ap.parse_args()
    if not os.environ.get("KUBECONFIG"):
        sys.exit("crd_validation_test: KUBECONFIG is not set")
    k = Kubectl(find_kubectl())
    results = Results()

    try:
        install_crds(k)
    except RuntimeError as e:
        results.fail("install CRDs", str(e))
        print(f"{results.passed} passed, {results.failed} failed")
        return 1
    results.ok("install CRDs", "Established and served: " + ", ".join(CRDS))

    valid = sorted((CORPUS / "valid").glob("*.yaml"))
    invalid = sorted((CORPUS / "invalid").glob("*.yaml"))
    if not args.k:
        if not valid:
            results.fail("corpus", "no valid cases")
        if len(invalid) < MIN_INVALID_CASES:
            results.fail("corpus", f"{len(invalid)} invalid cases, want at least "
                                   f"{MIN_INVALID_CASES}")

    for path in valid:
        name = f"valid/{path.name}"
        if args.k in name:
            results.check(name, lambda p=path: check_valid(k, p))

    for path in invalid:
        name = f"invalid/{path.name}"
        if args.k not in name:
            continue
        meta = parse_header(path)
        missing = [h for h in ("expect-field", "expect-message", "server") if h not in meta]
        if missing or meta["server"] not in ("reject", "client-only"):
            results.fail(name, f"bad header (missing {missing}, server={meta.get('server')!r})")
            continue
        results.check(name, lambda p=path, m=meta: check_invalid(k, p, m))

    for name, fn in BEHAVIOUR:
        if args.k in name:
            results.check(name, lambda f=fn: f(k))

    print(f"{results.passed} passed, {results.failed} failed")
    return 0 if results.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
