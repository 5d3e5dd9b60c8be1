#!/usr/bin/env python3
"""Runs `dovetail validate` on the shared validation corpus and on broken input.

Checks exit codes (0 valid, 1 invalid or unreadable), the `FILE:LINE: Kind/name: field: message`
lines, the summary line, `-o json`, standard input, directories, malformed YAML and missing files.
Usage: validate_cli_test.py DOVETAIL_BINARY CORPUS_DIR. Standard library only; prints one line per
check and exits 1 on any failure.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from cli_checks import check_run as check, summary

BINARY = sys.argv[1]
CORPUS = Path(sys.argv[2])


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([BINARY, "validate", *args], input=stdin, capture_output=True, text=True,
                          timeout=60)


def crashed(proc: subprocess.CompletedProcess) -> bool:
    # Negative codes are signals; 134 is abort (uncaught exception) when run through a shell.
    return proc.returncode < 0 or proc.returncode in (134, 139)


def main() -> int:
    # The corpus grows and is renumbered; find the cases by name.
    valid = next(iter(sorted((CORPUS / "valid").glob("nodepool-default.y*ml"))), None) or \
        sorted((CORPUS / "valid").glob("nodepool-*.yaml"))[0]
    invalid = sorted((CORPUS / "invalid").glob("*-np-weight-101.yaml"))[0]

    proc = run("-f", str(valid))
    check("valid file exits 0", proc.returncode == 0, proc)
    check("valid file summary", "1 object validated in 1 file: all valid" in proc.stdout, proc)

    proc = run("-f", str(invalid))
    check("invalid file exits 1", proc.returncode == 1, proc)
    name = re.search(r"^  name: (.*)$", invalid.read_text(), re.M).group(1).strip()
    line = re.compile(r"^" + re.escape(str(invalid)) + r":(\d+): NodePool/" + re.escape(name) +
                      r": spec\.weight: .*100", re.M)
    m = line.search(proc.stdout)
    check("invalid file prints FILE:LINE: Kind/name: field: message", m is not None, proc)
    if m:
        lines = invalid.read_text().splitlines()
        at = int(m.group(1))
        check("the line is the line of the field",
              0 < at <= len(lines) and lines[at - 1].lstrip().startswith("weight:"), proc)
    check("invalid file summary", "1 invalid (1 error)" in proc.stdout, proc)

    proc = run("-f", str(valid), "-f", str(invalid))
    check("one invalid file among several exits 1", proc.returncode == 1, proc)
    check("several files summary", "2 objects validated in 2 files" in proc.stdout, proc)

    proc = run("-f", str(CORPUS / "valid"))
    count = len(list((CORPUS / "valid").glob("*.yaml")))
    check("valid directory exits 0", proc.returncode == 0, proc)
    check("valid directory validates every file",
          f"validated in {count} files: all valid" in proc.stdout, proc)

    proc = run("-f", str(CORPUS / "invalid"))
    check("invalid directory exits 1", proc.returncode == 1, proc)
    unreported = [p.name for p in sorted((CORPUS / "invalid").glob("*.yaml"))
                  if f"{p}:" not in proc.stdout]
    check("every invalid file is reported", not unreported, None)
    if unreported:
        print("     not reported: " + ", ".join(unreported))

    proc = run("-f", str(invalid), "-o", "json")
    check("json output exits 1", proc.returncode == 1, proc)
    try:
        report = json.loads(proc.stdout)
        obj = report["files"][0]["objects"][0]
        check("json report", report["valid"] is False and obj["kind"] == "NodePool" and
              obj["errors"][0]["field"] == "spec.weight" and
              obj["errors"][0]["position"]["line"] > 1 and
              report["summary"]["errors"] == 1, proc)
    except (ValueError, KeyError, IndexError, TypeError) as e:
        check(f"json report parses ({e})", False, proc)

    proc = run("-f", "-", stdin=valid.read_text())
    check("standard input", proc.returncode == 0 and "all valid" in proc.stdout, proc)

    with tempfile.TemporaryDirectory() as tmp:
        broken = Path(tmp) / "broken.yaml"
        broken.write_text("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: [x\n")
        proc = run("-f", str(broken))
        check("malformed YAML exits 1", proc.returncode == 1 and not crashed(proc), proc)
        check("malformed YAML names file:line:column",
              re.search(re.escape(str(broken)) + r":\d+:\d+", proc.stderr) is not None, proc)

        garbage = Path(tmp) / "garbage.json"
        garbage.write_bytes(b"{\"kind\": \xff\xfe}")
        proc = run("-f", str(garbage), "-o", "json")
        check("invalid UTF-8 exits 1 without crashing",
              proc.returncode == 1 and not crashed(proc), proc)

        other = Path(tmp) / "other.yaml"
        other.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\n"
                         "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n")
        proc = run("-f", str(other))
        check("other kinds are skipped", proc.returncode == 0 and "warning" in proc.stdout and
              "Widget" in proc.stdout and "ConfigMap" not in proc.stdout, proc)

    proc = run("-f", "/nonexistent/nodepool.yaml")
    check("missing file exits 1", proc.returncode == 1 and not crashed(proc), proc)
    check("missing file is named", "/nonexistent/nodepool.yaml" in proc.stderr, proc)

    proc = run()
    check("no -f is a usage error", proc.returncode != 0 and not crashed(proc), proc)

    return summary()


if __name__ == "__main__":
    sys.exit(main())
