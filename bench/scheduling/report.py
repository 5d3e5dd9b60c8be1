#!/usr/bin/env python3
"""Turns dovetail_scheduling_bench's Google Benchmark JSON into the markdown that
docs/benchmarks.md's "Scheduling" section shows: one row per benchmark, the per-pod growth of the
diverse mix from 1k to 20k pods, and each target of issue 3 as met or missed (by how much).

Usage: report.py RESULTS.json [--commit TEXT] > scheduling.md
Times are CPU times of the benchmark thread (the machine is shared; wall time is shown too).
Standard library only.
"""

import argparse
import json
import sys

# (benchmark, what, limit, unit, field): field "cpu_ms" compares the CPU time per solve,
# "cost_over_bound" the counter.
TARGETS = [
    ("diverse/1000", "1,000 diverse pods", 20.0, "ms", "cpu_ms"),
    ("diverse/20000", "20,000 diverse pods", 1000.0, "ms", "cpu_ms"),
    ("anti_affinity/20000", "20,000 anti-affinity pods", 5000.0, "ms", "cpu_ms"),
    ("aws_mix/10000", "cost / lower bound, unconstrained AWS mix", 1.05, "x", "cost_over_bound"),
]

UNIT_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def to_ms(bench, key):
    return bench[key] * UNIT_TO_MS[bench.get("time_unit", "ns")]


def fmt_ms(ms):
    if ms >= 10000:
        return f"{ms / 1000:.1f} s"
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    if ms >= 100:
        return f"{ms:.0f} ms"
    if ms >= 1:
        return f"{ms:.1f} ms"
    return f"{ms * 1000:.0f} µs"


def lp_time(ms, cpu):
    # The LP's cost is the bound-on Solve minus the timed one; within 5% of the solve it is noise.
    return fmt_ms(ms) if ms > 0.05 * cpu else "≈0"


def fmt_price(x):
    return f"{x:,.2f}" if x >= 10 else f"{x:.4f}"


def fmt_num(x, digits=0):
    return f"{x:,.{digits}f}"


def load(path):
    with open(path) as f:
        data = json.load(f)
    benches = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        benches[b["run_name"] if "run_name" in b else b["name"]] = b
    return data.get("context", {}), benches


def row(name, b):
    if b.get("error_occurred"):
        return f"| {name} | | | | | | | | | | error: {b.get('error_message', '')} |"
    cpu = to_ms(b, "cpu_time")
    wall = to_ms(b, "real_time")
    pods = b.get("pods", 0)
    cells = [
        name,
        fmt_num(pods),
        fmt_ms(cpu),
        fmt_ms(wall),
        fmt_num(b.get("pods_per_s", 0)),
        f"{b.get('s_per_pod', 0) * 1e6:,.1f}",
        fmt_num(b.get("node_claims", 0)),
        fmt_price(b["cost_per_hour"]) if "cost_per_hour" in b else "",
        fmt_price(b["lower_bound"]) if "lower_bound" in b else "",
        f"{b['cost_over_bound']:.3f}" if "cost_over_bound" in b else "",
        lp_time(b["bound_solve_ms"] - cpu, cpu) if "bound_solve_ms" in b else "",
    ]
    if b.get("unschedulable", 0):
        cells[1] += f" ({fmt_num(b['unschedulable'])} unschedulable)"
    return "| " + " | ".join(cells) + " |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--commit", default="")
    args = ap.parse_args()
    ctx, benches = load(args.json)

    out = []
    load_avg = ctx.get("load_avg", [])
    out.append(
        f"Measured {ctx.get('date', '?')} on {ctx.get('num_cpus', '?')} CPUs at "
        f"{ctx.get('mhz_per_cpu', '?')} MHz"
        + (f", load average {', '.join(f'{x:.1f}' for x in load_avg)}" if load_avg else "")
        + (f", tree {args.commit}" if args.commit else "")
        + ". Times are the solver's single-thread CPU time per Solve (lower bound off); wall time "
        "includes waiting for other processes on the shared machine.")
    out.append("")
    out.append("| benchmark | pods | CPU / solve | wall / solve | pods/s | µs/pod | NodeClaims "
               "| cost $/h | lower bound $/h | cost / bound | LP time |")
    out.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name, b in benches.items():
        out.append(row(name, b))
    out.append("")

    for workload in ("diverse", "anti_affinity"):
        small, large = benches.get(f"{workload}/1000"), benches.get(f"{workload}/20000")
        if not small or not large or small.get("error_occurred") or large.get("error_occurred"):
            continue
        growth = large["s_per_pod"] / small["s_per_pod"]
        out.append(
            f"- Per-pod time growth, {workload} 1k → 20k: **{growth:.2f}x** "
            f"({small['s_per_pod'] * 1e6:,.1f} → {large['s_per_pod'] * 1e6:,.1f} µs/pod; "
            "1.00x is linear scaling).")
    out.append("")

    priced = [(n, b) for n, b in benches.items() if "single_type_cost" in b]
    if priced:
        out.append("Cost on the unconstrained mixes, against the LP lower bound and two achievable "
                   "reference plans (reference_plans.h: one instance type for every node packed "
                   "first-fit decreasing; iterated rounding of the bound's own LP):")
        out.append("")
        out.append("| benchmark | solver $/h | LP-guided plan $/h | single-type plan $/h "
                   "| lower bound $/h | solver / bound | best reference / bound "
                   "| solver / best reference |")
        out.append("|---|--:|--:|--:|--:|--:|--:|--:|")
        for name, b in priced:
            lb = b.get("lower_bound")
            refs = [b[k] for k in ("single_type_cost", "lp_guided_cost") if k in b]
            best = min(refs)
            cells = [name, fmt_price(b["cost_per_hour"]),
                     fmt_price(b["lp_guided_cost"]) if "lp_guided_cost" in b else "",
                     fmt_price(b["single_type_cost"]),
                     fmt_price(lb) if lb else "",
                     f"{b['cost_per_hour'] / lb:.3f}" if lb else "",
                     f"{best / lb:.3f}" if lb else "",
                     f"{b['cost_per_hour'] / best:.3f}"]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")

    labelled = [(n, b["label"]) for n, b in benches.items() if b.get("label")]
    if labelled:
        out.append("Node types each plan spends most on:")
        out.append("")
        for name, label in labelled:
            out.append(f"- {name}: {label}")
        out.append("")

    out.append("| target | limit | measured | result |")
    out.append("|---|--:|--:|---|")
    for name, what, limit, unit, field in TARGETS:
        b = benches.get(name)
        if b is None or b.get("error_occurred") or (field != "cpu_ms" and field not in b):
            reason = "not run" if b is None else b.get("error_message", "no value")
            out.append(f"| {what} | {limit:g} {unit} | | not measured ({reason}) |")
            continue
        value = to_ms(b, "cpu_time") if field == "cpu_ms" else b[field]
        if unit == "ms":
            shown, lim = fmt_ms(value), fmt_ms(limit)
        else:
            shown, lim = f"{value:.3f}x", f"{limit:g}x"
        if value <= limit:
            result = f"met ({value / limit:.2f} of the limit)"
        elif unit == "ms":
            result = f"**missed** by {value / limit:.1f}x ({fmt_ms(value - limit)} over)"
        else:
            result = f"**missed** ({(value / limit - 1) * 100:.0f}% above the limit)"
        out.append(f"| {what} | {lim} | {shown} | {result} |")
    print("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
