#!/usr/bin/env python3
"""docs/settings.md documents every setting Dovetail has.

Fails, naming what is missing, when docs/settings.md lacks
  - an environment variable read by dovetail/operator/options.cc, by the AWS clients
    (dovetail/providers/aws: env("..."), env_("...")) or by the Kubernetes client (getenv);
  - a flag of `dovetail controller` (dovetail/cli/controller.cc);
  - a key of charts/dovetail/values.yaml (every nested key, except inside the free-form
    Kubernetes objects listed in FREE_FORM, which are documented as a whole);
  - a dovetail.sh/ annotation, label or taint key used in dovetail/.
Also checks that the relative links of the operator docs (getting-started, concepts, settings,
migration, metrics, runbooks) name existing files and section anchors.
A name counts as documented when it appears in backticks (`NAME`), as in the tables.
"""
from __future__ import annotations

import re
import sys

from docs_common import CHART, DOCS, ROOT, SOURCES, anchors, product_sources, run
import yaml

SETTINGS = DOCS / "settings.md"
# values.yaml keys whose content is a Kubernetes object passed through as is.
FREE_FORM = {"strategy", "podSecurityContext", "nodeSelector", "affinity", "dnsConfig",
             "grafanaDashboard.labels"}


def documented() -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", SETTINGS.read_text()))


def documented_text() -> str:
    return SETTINGS.read_text()


def check_missing(kind: str, names: set[str]) -> None:
    assert names, f"found no {kind} at all: the scan is broken"
    docs = documented()
    # `A`, `B` lists and `A` / `B` pairs in one cell count for each name.
    words = set()
    for d in docs:
        words.update(w.strip() for w in re.split(r"[,/ ]+", d) if w.strip())
    missing = sorted(n for n in names if n not in docs and n not in words)
    assert not missing, f"{kind} missing from docs/settings.md: {missing}"


def test_options_environment() -> None:
    text = (SOURCES / "operator" / "options.cc").read_text()
    names = set(re.findall(r'"([A-Z][A-Z0-9_]{2,})"', text))
    check_missing("options.cc environment variables", names)


def test_client_environment() -> None:
    names = set()
    for path in product_sources():
        if "providers/aws" not in str(path) and "kube/" not in str(path.relative_to(ROOT)):
            continue
        text = path.read_text()
        names.update(re.findall(r'\benv_?\("([A-Z][A-Z0-9_]+)"\)', text))
        names.update(re.findall(r'getenv\("([A-Z][A-Z0-9_]+)"\)', text))
        # Prefixes such as "AWS_ENDPOINT_URL_" + service are documented as AWS_ENDPOINT_URL_<SERVICE>.
        names.update(p + "<SERVICE>" for p in re.findall(r'"([A-Z][A-Z0-9_]+_)" \+', text))
    check_missing("client environment variables", names)


def test_controller_flags() -> None:
    text = (SOURCES / "cli" / "controller.cc").read_text()
    flags = set(re.findall(r'add_(?:option|flag)\(\s*"(?:-\w,)?(--[a-z0-9-]+)"', text))
    check_missing("`dovetail controller` flags", flags)


def value_keys(node, prefix: str = "") -> set[str]:
    keys = set()
    for key, value in node.items():
        path = f"{prefix}{key}"
        keys.add(path)
        if isinstance(value, dict) and value and path not in FREE_FORM:
            keys |= value_keys(value, path + ".")
    return keys


def test_helm_values() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    keys = value_keys(values)
    # A parent whose children are all documented needs no row of its own.
    leaves = {k for k in keys if not any(o.startswith(k + ".") for o in keys)}
    check_missing("charts/dovetail/values.yaml keys", leaves)


def test_dovetail_keys() -> None:
    names = set()
    for path in product_sources():
        names.update(re.findall(r"dovetail\.sh/[a-z0-9][a-z0-9.-]*[a-z0-9]", path.read_text()))
    # API versions of Dovetail's own documents (dovetail.sh/v1alpha1) are not settings.
    names = {n for n in names if not re.fullmatch(r"dovetail\.sh/v\d+((alpha|beta)\d+)?", n)}
    check_missing("dovetail.sh/ keys", names)


def test_scan_finds_known_names() -> None:
    # Guards the regular expressions: a scan that finds nothing would pass vacuously.
    text = (SOURCES / "operator" / "options.cc").read_text()
    assert "BATCH_MAX_DURATION" in set(re.findall(r'"([A-Z][A-Z0-9_]{2,})"', text))
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert "settings.featureGates.spotToSpotConsolidation" in value_keys(values)
    assert "affinity.nodeAffinity" not in value_keys(values)


OPERATOR_DOCS = ("getting-started.md", "concepts.md", "settings.md", "migration.md",
                 "metrics.md", "runbooks.md")


def test_operator_docs_links() -> None:
    broken = []
    for name in OPERATOR_DOCS:
        text = (DOCS / name).read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            path, _, anchor = target.partition("#")
            doc = (DOCS / path) if path else (DOCS / name)
            if not doc.exists():
                broken.append(f"{name}: {target} (no such file)")
            elif anchor and doc.suffix == ".md" and anchor not in anchors(doc.read_text()):
                broken.append(f"{name}: {target} (no such section)")
    assert not broken, "broken links:\n  " + "\n  ".join(broken)


if __name__ == "__main__":
    sys.exit(run([test_options_environment, test_client_environment, test_controller_flags,
                  test_helm_values, test_dovetail_keys, test_scan_finds_known_names,
                  test_operator_docs_links]))
