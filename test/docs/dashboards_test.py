#!/usr/bin/env python3
"""The Grafana dashboard and the PrometheusRule use only metrics that exist, and link runbooks
that exist.

  - charts/dovetail/dashboards/dovetail.json parses, has panels with unique ids and a PromQL
    expression in every target;
  - every metric name in the dashboard's and charts/dovetail/templates/prometheusrule.yaml's
    expressions is registered in dovetail/ sources, listed in docs/metrics.md, or a standard
    cAdvisor / kube-state-metrics / process / go metric;
  - every metric registered in dovetail/ sources is listed in docs/metrics.md, and every metric
    listed there is registered (but the PENDING ones);
  - every runbook_url anchor of the PrometheusRule exists in docs/runbooks.md, and every alert
    has one.
No helm needed: the template's Go expressions are blanked before the PromQL is read.
"""
from __future__ import annotations

import json
import re
import sys

import metrics_inventory
from docs_common import CHART, DOCS, anchors, product_sources, run

DASHBOARD = CHART / "dashboards" / "dovetail.json"
RULES = CHART / "templates" / "prometheusrule.yaml"
STANDARD_PREFIXES = ("container_", "kube_", "process_", "go_", "kubelet_", "node_")
STANDARD_NAMES = {"up"}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
                "unless", "offset", "bool", "inf", "nan"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
# Documented in docs/metrics.md ahead of the code that registers them (landing concurrently).
# Drop a name here once dovetail/ registers it.
PENDING: set[str] = set()


def registered_metrics() -> set[str]:
    # karpenter_*, dovetail_* and the library families upstream serves (metrics_inventory.py).
    return metrics_inventory.registered()


def documented_metrics() -> set[str]:
    text = (DOCS / "metrics.md").read_text()
    # The inventory of upstream's families at the end (each with Dovetail's status) is not a
    # list of what Dovetail exports.
    text = text.split("\n## Upstream's metric families", 1)[0]
    # The first cell of each table row names the metric.
    return set(re.findall(r"^\| `([a-z_:][a-z0-9_:]*)` \|", text, re.M))


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression (identifiers that are not functions, keywords,
    label names or Grafana variables)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)             # string literals
    e = re.sub(r"\$\{?\w+\}?", "", e)                        # Grafana variables
    e = re.sub(r"\{[^{}]*\}", "", e)                          # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                          # range selectors
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", e):
        word, call = m.group(1), m.group(2)
        if call or word.lower() in PROMQL_WORDS:
            continue
        names.add(word)
    return names


def base_name(name: str, known: set[str]) -> str:
    for suffix in HISTOGRAM_SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in known:
            return name[: -len(suffix)]
    return name


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = []
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            exprs.append(target["expr"])
    for var in dash.get("templating", {}).get("list", []):
        q = var.get("query")
        if isinstance(q, dict):
            q = q.get("query", "")
        if var.get("type") == "query" and q:
            m = re.fullmatch(r"label_values\((\w+)\s*,\s*\w+\)", q)
            assert m, f"variable {var['name']}: unexpected query {q}"
            exprs.append(m.group(1))
    return exprs


def rule_alerts() -> list[dict]:
    """(alert, expr, runbook_url) from the template, Go template actions blanked to 0."""
    text = RULES.read_text()
    text = re.sub(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", "", text, flags=re.S)  # template comments
    alerts = []
    for block in re.split(r"^\s*- alert: ", text, flags=re.M)[1:]:
        name = block.split("\n", 1)[0].strip()
        m = re.search(r"expr: \|\n((?:\s{12,}.*\n)+)", block)
        assert m, f"{name}: no expr block"
        expr = re.sub(r"\{\{.*?\}\}", "0", m.group(1))
        url = re.search(r"runbook_url: (.+)", block)
        alerts.append({"alert": name, "expr": expr,
                       "runbook_url": url.group(1).strip() if url else ""})
    return alerts


def check_known(where: str, exprs: list[str]) -> None:
    known = registered_metrics() | documented_metrics()
    unknown = set()
    for expr in exprs:
        for name in metric_names(expr):
            name = base_name(name, known)
            if name in known or name in STANDARD_NAMES or name.startswith(STANDARD_PREFIXES):
                continue
            unknown.add(name)
    assert not unknown, f"{where} uses metrics Dovetail does not export: {sorted(unknown)}"


def test_metric_name_parser() -> None:
    got = metric_names('histogram_quantile(0.99, sum by (le) (rate(a_b_bucket{x="y",z=~"$v"}'
                       '[$__rate_interval]))) / max without (pod) (c_d{e="f"}) > 0 and on(g) h')
    assert got == {"a_b_bucket", "c_d", "h"}, got
    assert metric_names("absent(karpenter_build_info{namespace=\"0\"})") == \
        {"karpenter_build_info"}


def test_dashboard_parses() -> None:
    dash = json.loads(DASHBOARD.read_text())
    assert dash["title"] and dash["uid"], "title and uid"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    graphs = [p for p in dash["panels"] if p["type"] != "row"]
    assert len(graphs) >= 10, len(graphs)
    for p in graphs:
        assert p.get("targets"), f"panel {p['title']} has no query"
        for t in p["targets"]:
            assert t["expr"].count("(") == t["expr"].count(")"), t["expr"]
    titles = " ".join(p["title"].lower() for p in dash["panels"])
    for topic in ("pending", "scheduling", "nodepool", "launch", "disruption", "interruption",
                  "cost", "memory", "cpu", "throttle"):
        assert topic in titles, f"no panel about {topic}"


def test_dashboard_metrics_exist() -> None:
    check_known("the dashboard", dashboard_exprs())


def test_rule_metrics_exist() -> None:
    alerts = rule_alerts()
    assert len(alerts) >= 5, alerts
    check_known("the PrometheusRule", [a["expr"] for a in alerts])


def test_registered_metrics_documented() -> None:
    registered = registered_metrics()
    assert "karpenter_nodeclaims_created_total" in registered, "the source scan is broken"
    missing = sorted(registered - documented_metrics())
    assert not missing, f"metrics registered in dovetail/ but missing from docs/metrics.md: {missing}"


def test_documented_metrics_registered() -> None:
    registered = registered_metrics()
    ghosts = sorted(documented_metrics() - registered - PENDING)
    assert not ghosts, f"docs/metrics.md lists metrics dovetail/ does not register: {ghosts}"
    landed = sorted(PENDING & registered)
    if landed:
        print(f"note: {landed} are registered now; remove them from PENDING")


def test_upstream_inventory_is_current() -> None:
    # The table is what metrics_inventory.py renders (run it with --write after a change).
    text = (DOCS / "metrics.md").read_text()
    want = metrics_inventory.render(registered_metrics())
    assert metrics_inventory.table_in(text) == want, \
        "docs/metrics.md's inventory is stale: run test/docs/metrics_inventory.py --write"


def test_upstream_inventory_status() -> None:
    # docs/metrics.md's inventory: one row per family of test/testdata/upstream-metrics.json
    # (other than client_golang's runtime ones), `exported` exactly when dovetail/ registers it.
    text = (DOCS / "metrics.md").read_text().split("\n## Upstream's metric families", 1)[1]
    rows = dict(re.findall(r"^\| `([a-z_:][a-z0-9_:]*)` \|.*\| ([^|]+) \|$", text, re.M))
    inventory = json.loads((DOCS.parent / "test/testdata/upstream-metrics.json").read_text())
    want = {m["name"] for m in inventory if not m["module"].startswith("github.com/prometheus/")}
    assert set(rows) == want, f"inventory rows differ: {sorted(set(rows) ^ want)[:10]}"
    registered = registered_metrics()
    wrong = sorted(n for n, status in rows.items()
                   if status.startswith("exported") != (n in registered))
    assert not wrong, f"docs/metrics.md inventory status is wrong for {wrong}"


def test_runbook_anchors() -> None:
    sections = anchors((DOCS / "runbooks.md").read_text())
    for a in rule_alerts():
        url = a["runbook_url"]
        assert "#" in url, f"{a['alert']}: runbook_url {url!r} has no anchor"
        anchor = url.split("#", 1)[1]
        assert anchor in sections, f"{a['alert']}: docs/runbooks.md has no section #{anchor}"
    # Links inside runbooks.md and metrics.md to runbooks.md sections resolve too.
    for doc in ("runbooks.md", "metrics.md"):
        text = (DOCS / doc).read_text()
        for anchor in re.findall(r"\]\((?:runbooks\.md)?#([a-z0-9-]+)\)", text):
            if doc == "metrics.md" and "(#" + anchor in text:
                continue  # metrics.md's own sections
            assert anchor in sections, f"{doc}: link to missing runbooks.md#{anchor}"


if __name__ == "__main__":
    sys.exit(run([test_metric_name_parser, test_dashboard_parses, test_dashboard_metrics_exist,
                  test_rule_metrics_exist, test_registered_metrics_documented,
                  test_documented_metrics_registered, test_upstream_inventory_is_current,
                  test_upstream_inventory_status,
                  test_runbook_anchors]))
