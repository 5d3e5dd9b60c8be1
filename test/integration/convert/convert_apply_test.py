#!/usr/bin/env python3
"""`dovetail convert` output against a real kube-apiserver with Dovetail's CRDs installed.

Installs charts/dovetail/crds (server-side apply), then for every input in
dovetail/apis/convert/testdata (except errors.yaml) runs `dovetail convert -f FILE` and creates
the result with a server-side dry run: every converted object must be accepted by the CRD schema
and CEL rules. errors.yaml must make the command exit 1 with nothing on standard output.

Usage: convert_apply_test.py DOVETAIL_BINARY. Environment: KUBECONFIG, DOVETAIL_K8S_BIN (kubectl).
Prints one line per case and ends with `N passed, M failed`; exits 1 on any failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TESTDATA = ROOT / "dovetail" / "apis" / "convert" / "testdata"
CRD_DIR = ROOT / "charts" / "dovetail" / "crds"
PREFIX = "converttest-"  # the API server is shared with other tests


def prefixed(items: list) -> list:
    for item in items:
        item["metadata"]["name"] = PREFIX + item["metadata"]["name"]
        spec = item.get("spec", {})
        template_spec = spec.get("template", {}).get("spec", {})
        for ref in (spec.get("nodeClassRef"), template_spec.get("nodeClassRef")):
            if ref:
                ref["name"] = PREFIX + ref["name"]
    return items


def main() -> int:
    dovetail = sys.argv[1]
    kubectl = str(Path(os.environ["DOVETAIL_K8S_BIN"]) / "kubectl")
    subprocess.run([kubectl, "apply", "--server-side", "-f", str(CRD_DIR)], check=True,
                   stdout=subprocess.DEVNULL)
    # Retried: `kubectl wait` fails at once on a CRD whose status has no conditions yet.
    deadline = time.monotonic() + 120
    while subprocess.run([kubectl, "wait", "--for", "condition=Established", "--timeout=30s",
                          "crd/nodepools.karpenter.sh", "crd/nodeclaims.karpenter.sh",
                          "crd/ec2nodeclasses.karpenter.k8s.aws"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError("the CRDs are not Established within 120 s")
        time.sleep(0.5)
    passed = failed = 0
    for path in sorted(TESTDATA.glob("*.yaml")):
        converted = subprocess.run([dovetail, "convert", "-o", "json", "-f", str(path)], capture_output=True,
                                   text=True)
        if path.name == "errors.yaml":
            ok = converted.returncode == 1 and converted.stdout == "" and "error:" in converted.stderr
            detail = converted.stderr
        elif converted.returncode != 0:
            ok, detail = False, converted.stderr
        else:
            items = prefixed(json.loads(converted.stdout)["items"])
            manifest = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
            # The CRDs may take a moment to be served after Established; retry briefly.
            for _ in range(20):
                created = subprocess.run(
                    [kubectl, "create", "--dry-run=server", "-o", "name", "-f", "-"],
                    input=manifest, capture_output=True, text=True)
                if created.returncode == 0 or "the server could not find" not in created.stderr:
                    break
                subprocess.run(["sleep", "0.5"], check=True)
            expected = len(items)
            names = [line for line in created.stdout.splitlines() if line.strip()]
            ok = created.returncode == 0 and len(names) == expected
            detail = created.stderr + f" ({len(names)} of {expected} objects accepted)"
        print(f"{'PASS' if ok else 'FAIL'} {path.name}" + ("" if ok else f": {detail.strip()}"))
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
