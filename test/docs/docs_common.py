"""Helpers shared by the documentation tests: the repository's paths and Markdown anchors."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SOURCES = ROOT / "dovetail"
CHART = ROOT / "charts" / "dovetail"

try:
    import yaml  # noqa: F401  PyYAML
except ImportError:  # the moto virtualenv (scripts/install-deps) has PyYAML
    venv_python = ROOT / ".cache" / "venv" / "bin" / "python"
    if venv_python.exists() and Path(sys.executable).resolve() != venv_python.resolve():
        os.execv(str(venv_python), [str(venv_python), *sys.argv])
    raise


def product_sources() -> list[Path]:
    """Every non-test C++ file under dovetail/."""
    return sorted(p for p in SOURCES.rglob("*") if p.suffix in (".cc", ".h")
                  and not p.name.endswith("_test.cc") and "testdata" not in p.parts
                  and p.name != "test_server.h")


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    out = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *$", markdown, re.M):
        text = re.sub(r"[`*_]", "", heading).strip().lower()
        out.add(re.sub(r"[^a-z0-9 -]", "", text).replace(" ", "-"))
    return out


def run(tests) -> int:
    passed = failed = 0
    for test in tests:
        try:
            test()
        except AssertionError as e:
            failed += 1
            print(f"FAIL {test.__name__}: {e}")
        else:
            passed += 1
            print(f"ok   {test.__name__}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
