#!/usr/bin/env python3
"""data/aws is what scripts/update-aws-data wrote: every CSV the README lists has the SHA-256 and
row count the README gives, and no other CSV is there. A hand edit of the data (which the binary
compiles in) fails here; run scripts/update-aws-data instead.

Usage: aws_data_test.py REPO_ROOT
"""
import hashlib
import re
import sys
from pathlib import Path


def main() -> int:
    data = Path(sys.argv[1]) / "data" / "aws"
    readme = (data / "README.md").read_text()
    rows = re.findall(r"^\| `([^`]+\.csv)` \| (\d+) \| `([0-9a-f]{64})` \|$", readme, re.M)
    failures = []
    if {name for name, _, _ in rows} != {"instance-types.csv", "on-demand-prices.csv"}:
        failures.append(f"README lists {sorted(n for n, _, _ in rows)}")
    for name, count, digest in rows:
        path = data / name
        if not path.exists():
            failures.append(f"{name}: missing")
            continue
        body = path.read_bytes()
        if hashlib.sha256(body).hexdigest() != digest:
            failures.append(f"{name}: SHA-256 differs from README.md (edited by hand?)")
        lines = body.count(b"\n") - 1
        if lines != int(count):
            failures.append(f"{name}: {lines} rows, README.md says {count}")
    extra = sorted(p.name for p in data.glob("*.csv") if p.name not in {n for n, _, _ in rows})
    if extra:
        failures.append(f"CSV files the README does not list: {extra}")
    for f in failures:
        print("FAIL", f)
    print(f"aws_data_test: {len(rows)} files checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
