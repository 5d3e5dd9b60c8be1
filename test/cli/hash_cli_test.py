#!/usr/bin/env python3
"""Runs `dovetail hash` on upstream's hash vectors and on broken input.

The vectors (test/testdata/upstream-hashes.json, written by bench/upstream/hash with upstream's own
Hash()) whose objects already carry the CRD defaults the command applies (a NodePool's
expireAfter, an EC2NodeClass's metadataOptions) must come out with upstream's hash and version,
in text and `-o json`, from files, a directory and standard input, with `--cluster-ca-bundle`.
Older API versions, malformed files and undecodable objects are errors (exit 1, a message), never
a crash. Usage: hash_cli_test.py DOVETAIL_BINARY VECTORS_JSON. Standard library only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from cli_checks import check_run as check, summary

BINARY = sys.argv[1]
VECTORS = json.loads(Path(sys.argv[2]).read_text())["vectors"]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([BINARY, "hash", *args], input=stdin, capture_output=True, text=True,
                          timeout=60)


def stored_form(v: dict) -> bool:
    spec = v["object"]["spec"]
    if v["kind"] == "NodePool":
        return "expireAfter" in spec["template"].get("spec", {})
    md = spec.get("metadataOptions", {})
    return all(k in md for k in ("httpEndpoint", "httpProtocolIPv6", "httpPutResponseHopLimit",
                                 "httpTokens"))


def main() -> int:
    pools = [v for v in VECTORS if v["kind"] == "NodePool" and stored_form(v)]
    classes = [v for v in VECTORS if v["kind"] == "EC2NodeClass" and stored_form(v)]
    check("the vectors hold NodePools and EC2NodeClasses in stored form",
          len(pools) >= 10 and len(classes) >= 4)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pool_dir = root / "pools"
        pool_dir.mkdir()
        for v in pools:
            (pool_dir / f"{v['name']}.json").write_text(json.dumps(v["object"]))
        (pool_dir / "deployment.yaml").write_text(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")

        # A directory, -o json: every NodePool, upstream's hash and version; other kinds skipped.
        proc = run("-f", str(pool_dir), "-o", "json")
        got = json.loads(proc.stdout) if proc.returncode == 0 else []
        want = sorted(({"kind": "NodePool", "name": v["object"]["metadata"]["name"],
                        "hash": v["hash"], "hashVersion": "v3"} for v in pools),
                      key=lambda x: x["name"])
        check("a directory of NodePools: upstream's hashes as JSON",
              proc.returncode == 0 and sorted(got, key=lambda x: x["name"]) == want, proc)

        # Each EC2NodeClass with its CA bundle, in text.
        for v in classes:
            path = root / f"{v['name']}.yaml"
            path.write_text(json.dumps(v["object"]))  # JSON is YAML
            args = ["-f", str(path)]
            if v.get("caBundle"):
                args += ["--cluster-ca-bundle", v["caBundle"]]
            proc = run(*args)
            line = f"EC2NodeClass {v['object']['metadata']['name']} {v['hash']} v5"
            check(f"{v['name']}: upstream's hash in text", proc.returncode == 0 and
                  proc.stdout.strip() == line, proc)

        # Standard input, several documents.
        docs = "---\n" + "\n---\n".join(json.dumps(v["object"]) for v in pools[:3])
        proc = run("-f", "-", stdin=docs)
        lines = proc.stdout.strip().splitlines()
        check("standard input, three documents", proc.returncode == 0 and lines == [
            f"NodePool {v['object']['metadata']['name']} {v['hash']} v3" for v in pools[:3]], proc)

        # Defaults are applied: a NodePool without expireAfter hashes as one with 720h.
        bare = json.loads(json.dumps(pools[0]["object"]))
        explicit = json.loads(json.dumps(bare))
        bare["spec"]["template"]["spec"].pop("expireAfter")
        explicit["spec"]["template"]["spec"]["expireAfter"] = "720h"
        a = run("-f", "-", stdin=json.dumps(bare))
        b = run("-f", "-", stdin=json.dumps(explicit))
        check("the CRD default expireAfter is applied first",
              a.returncode == 0 and a.stdout == b.stdout, a)

        # Errors: an older API version, malformed YAML, an undecodable object, a missing file.
        old = json.dumps({"apiVersion": "karpenter.sh/v1beta1", "kind": "NodePool",
                          "metadata": {"name": "old"}, "spec": {"template": {"spec": {}}}})
        proc = run("-f", "-", stdin=old)
        check("an older API version asks for convert",
              proc.returncode == 1 and "convert" in proc.stderr and proc.stdout.strip() == "", proc)
        proc = run("-f", "-", stdin="kind: [unclosed\n")
        check("malformed YAML is an error", proc.returncode == 1 and proc.stderr, proc)
        broken = json.loads(json.dumps(pools[0]["object"]))
        broken["spec"]["template"]["spec"]["expireAfter"] = "soon"
        proc = run("-f", "-", stdin="---\n" + json.dumps(broken) + "\n---\n" +
                   json.dumps(pools[1]["object"]))
        check("an object that does not hash is an error, the others are printed",
              proc.returncode == 1 and "expireAfter" in proc.stderr and
              pools[1]["hash"] in proc.stdout, proc)
        proc = run("-f", str(root / "missing.yaml"))
        check("a missing file is an error", proc.returncode == 1 and proc.stderr, proc)
        for p in (proc,):
            check("no crash", p.returncode in (0, 1), p)

    return summary()


if __name__ == "__main__":
    sys.exit(main())
