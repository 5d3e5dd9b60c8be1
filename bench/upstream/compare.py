#!/usr/bin/env python3
"""Runs `dovetail simulate -o json` and upstream Karpenter's scheduler (cmd/fixture-bench) on the
same fixture and prints a side-by-side table.

Usage: compare.py DOVETAIL_BINARY [--fixture DIR] [--catalog DIR] [--json OUT]

pods/s is pods / solve seconds (Dovetail's `solveSeconds`; upstream's topology + scheduler
construction + Solve). Cost / lower bound uses Dovetail's `lowerBoundPricePerHour` for both.
Peak RSS is each process's maximum resident set (wait4 rusage), parsing included.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GO = "/usr/local/go/bin/go"


def run_with_rusage(cmd, env=None):
    pid = os.fork()
    if pid == 0:  # child
        try:
            outfd = os.open(run_with_rusage.out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(outfd, 1)
            os.execvpe(cmd[0], cmd, env or os.environ)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    with open(run_with_rusage.out_path) as f:
        out = f.read()
    if code != 0:
        sys.exit("error: %s exited %d" % (" ".join(cmd), code))
    return out, usage.ru_maxrss * 1024  # KiB on Linux


def build_fixture_bench(out_dir):
    binary = os.path.join(out_dir, "fixture-bench")
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-mod=mod")
    env.setdefault("GOMAXPROCS", "1")
    env["PATH"] = "/usr/local/go/bin:" + env.get("PATH", "")
    subprocess.run([GO, "build", "-p", "1", "-o", binary, "./cmd/fixture-bench"], cwd=HERE, env=env,
                   check=True)
    return binary


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser(description="Dovetail vs upstream Karpenter on one fixture")
    ap.add_argument("dovetail", help="path of the dovetail binary")
    ap.add_argument("--fixture", default=os.path.join(HERE, "fixtures", "diverse-1000"))
    ap.add_argument("--catalog", default=os.path.join(HERE, "fixtures", "catalog-aws"))
    ap.add_argument("--build-dir", default=os.path.join(HERE, "..", "..", "build", "bench-upstream"))
    ap.add_argument("--json", help="also write the numbers as JSON here")
    args = ap.parse_args()
    if not os.access(args.dovetail, os.X_OK):
        sys.exit("error: %s is not an executable dovetail binary" % args.dovetail)
    for d in (args.fixture, args.catalog):
        if not os.path.isdir(d):
            sys.exit("error: no directory %s (run make_fixtures.py)" % d)
    os.makedirs(args.build_dir, exist_ok=True)
    run_with_rusage.out_path = os.path.join(args.build_dir, "last-run.json")

    fixture_bench = build_fixture_bench(os.path.abspath(args.build_dir))
    env = dict(os.environ)
    env.setdefault("GOMAXPROCS", "1")
    up_text, up_rss = run_with_rusage(
        [fixture_bench, "-f", args.fixture, "--catalog", args.catalog], env)
    up = json.loads(up_text)
    dt_text, dt_rss = run_with_rusage(
        [args.dovetail, "simulate", "-f", args.fixture, "--catalog", args.catalog, "-o", "json"])
    dt = json.loads(dt_text)

    bound = dt.get("lowerBoundPricePerHour")
    dt_pods = sum(len(nc["pods"]) for nc in dt["nodeClaims"]) + len(dt["unschedulable"])
    rows = {
        "dovetail": {
            "pods": dt_pods,
            "scheduled": dt_pods - len(dt["unschedulable"]),
            "podsPerSecond": dt_pods / dt["solveSeconds"] if dt["solveSeconds"] else None,
            "nodeClaims": len(dt["nodeClaims"]),
            "pricePerHour": dt["totalPricePerHour"],
            "costOverBound": ratio(dt["totalPricePerHour"], bound),
            "solveSeconds": dt["solveSeconds"],
            "peakRssMiB": dt_rss / 2**20,
        },
        "upstream": {
            "pods": up["pods"],
            "scheduled": up["podsScheduled"],
            "podsPerSecond": up["podsPerSecond"],
            "nodeClaims": up["nodeClaims"],
            "pricePerHour": up["pricePerHour"],
            "costOverBound": ratio(up["pricePerHour"], bound),
            "solveSeconds": up["solveSeconds"],
            "peakRssMiB": up_rss / 2**20,
        },
    }
    metrics = [("pods", "d"), ("scheduled", "d"), ("podsPerSecond", ".1f"), ("nodeClaims", "d"),
               ("pricePerHour", ".4f"), ("costOverBound", ".3f"), ("solveSeconds", ".3f"),
               ("peakRssMiB", ".1f")]
    print("fixture %s, catalog %s, %s, lower bound $%s/h" % (
        os.path.relpath(args.fixture), os.path.relpath(args.catalog), up["karpenter"],
        fmt(bound, ".4f")))
    print("%-15s %14s %14s %18s" % ("metric", "dovetail", "upstream", "dovetail/upstream"))
    for name, spec in metrics:
        d, u = rows["dovetail"][name], rows["upstream"][name]
        print("%-15s %14s %14s %18s" % (name, fmt(d, spec), fmt(u, spec), fmt(ratio(d, u), ".3f")))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"fixture": args.fixture, "lowerBoundPricePerHour": bound,
                       "karpenter": up["karpenter"], **rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
