#!/usr/bin/env python3
"""The table of upstream's metric families at the end of docs/metrics.md, rendered from
test/testdata/upstream-metrics.json and from what dovetail/ registers.

  metrics_inventory.py           prints the table
  metrics_inventory.py --write   replaces the table in docs/metrics.md

Status per family: `exported` when a dovetail/ source registers the name, else the reason in
NOT_APPLICABLE (`n/a: ...`), else `not yet`. dashboards_test checks the page against it.
"""
from __future__ import annotations

import json
import re
import sys

from docs_common import DOCS, ROOT, product_sources

INVENTORY = ROOT / "test" / "testdata" / "upstream-metrics.json"
# Families of libraries whose every series Dovetail's prefixes cover.
PREFIXES = ("karpenter", "dovetail", "operator", "workqueue", "controller_runtime", "rest_client",
            "client_go", "leader_election", "aws_sdk_go", "process", "certwatcher")
# Families Dovetail has no counterpart for, and why (name, or prefix ending in "*").
NOT_APPLICABLE = {
    "operator_capacitybuffer_*": "no CapacityBuffer (the CapacityBuffer gate is refused)",
    "karpenter_nodeclaims_unhealthy_disrupted_total": "no node repair (the NodeRepair gate is refused)",
    "certwatcher_*": "Dovetail watches no certificate",
    "karpenter_cloudprovider_batcher_*": "Dovetail batches no EC2 calls",
    "controller_runtime_webhook_*": "Dovetail serves no webhook",
    "controller_runtime_conversion_webhook_panics_total": "Dovetail serves no webhook",
}
SHORT_MODULE = {
    "sigs.k8s.io/karpenter": "karpenter",
    "github.com/aws/karpenter-provider-aws": "karpenter-provider-aws",
    "github.com/awslabs/operatorpkg": "operatorpkg",
    "sigs.k8s.io/controller-runtime": "controller-runtime",
    "github.com/jonathan-innis/aws-sdk-go-prometheus": "aws-sdk-go-prometheus",
}


def registered() -> set[str]:
    pattern = re.compile(r'"((?:' + "|".join(PREFIXES) + r')_[a-z0-9_]+)"')
    names: set[str] = set()
    for path in product_sources():
        names.update(pattern.findall(path.read_text()))
    return names


def inventory() -> list[dict]:
    return json.loads(INVENTORY.read_text())


def status(name: str, exported: set[str]) -> str:
    if name in exported:
        return "exported"
    for key, why in NOT_APPLICABLE.items():
        if name == key or (key.endswith("*") and name.startswith(key[:-1])):
            return f"n/a: {why}"
    return "not yet"


def render(exported: set[str]) -> str:
    rows = ["| metric | type | labels | buckets | from | status |",
            "|---|---|---|---|---|---|"]
    for m in sorted(inventory(), key=lambda m: m["name"]):
        module = m["module"].split("@")[0]
        if module not in SHORT_MODULE:
            continue  # client_golang's runtime and process collectors: in the text
        labels = [f"`{l}`" for l in m["labels"]]
        if len(labels) > 6:
            labels = labels[:6] + [f"… ({len(m['labels'])} in all)"]
        buckets = m.get("buckets") or []
        b = f"{len(buckets)}: {buckets[0]:g} … {buckets[-1]:g}" if buckets else ""
        rows.append(f"| `{m['name']}` | {m['type']} | {', '.join(labels)} | {b} | "
                    f"{SHORT_MODULE[module]} | {status(m['name'], exported)} |")
    return "\n".join(rows) + "\n"


def table_in(text: str) -> str:
    section = text.split("\n## Upstream's metric families", 1)[1]
    lines = [l for l in section.splitlines() if l.startswith("|")]
    return "\n".join(lines) + "\n"


def main() -> int:
    table = render(registered())
    if "--write" not in sys.argv:
        print(table, end="")
        return 0
    path = DOCS / "metrics.md"
    text = path.read_text()
    old = table_in(text)
    assert old in text, "the inventory table is not contiguous"
    path.write_text(text.replace(old, table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
