#!/usr/bin/env python3
"""E2E test of `dovetail cost` on its own full local control plane (kube-apiserver, etcd,
kube-scheduler, kube-controller-manager, kwok), with nodes launched by `dovetail controller
--cloud-provider kwok`:

  1. Two NodePools (spot-or-on-demand and on-demand only, consolidation off so the nodes stay put)
     and a Deployment pinned to each: every pod Running, every NodeClaim registered.
  2. `dovetail cost -o json` lists every Karpenter node with the instance type, capacity type and
     zone of its labels; each price equals the catalog offering's price (asked independently of
     the cost code: `dovetail simulate` pinned to that type, zone and capacity type); per-NodePool
     totals are the sums of their nodes, monthly = hourly x 730, the total is the sum of the
     NodePools; CPU and memory requests, allocatable, utilisation and pod counts match the pods
     bound to each node.
  3. The table output carries the same per-NodePool and total costs; `--nodepool` keeps one pool.
  4. The controller's /metrics: dovetail_nodepool_cost_per_hour per NodePool and
     dovetail_cluster_cost_per_hour equal the CLI's totals.
  5. Prices from a catalog that knows none of the kwok types (the AWS catalog in data/aws, and the
     same compiled in when --catalog is not given): every node shows an unknown price, the totals
     are 0 and a note says why.
  6. Bad input: an unreachable API server, a missing kubeconfig, an unknown output format, an
     unknown NodePool: a clear error and a non-zero exit.

Usage: cost_e2e_test.py DOVETAIL_BINARY. Needs KUBECONFIG and DOVETAIL_K8S_BIN (set by
dovetail_kube_test). Prints `N passed, M failed` last; exits non-zero if anything failed.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

from e2e_common import deployment as common_deployment
from e2e_common import (ControllerProcess, KUBECONFIG, ROOT, Tally, apply_crds, check, condition,
                        controller_ports, get, kubectl, kwok_nodepool, quantity, wait_for)

RUN_ID = uuid.uuid4().hex[:6]
NS = f"dovetail-cost-{RUN_ID}"
POOL_SPOT = f"cost-spot-{RUN_ID}"
POOL_OD = f"cost-od-{RUN_ID}"
REPLICAS = {POOL_SPOT: 6, POOL_OD: 4}
EPS = 1e-9


def nodepool(name: str, capacity_types: list[str]) -> str:
    return kwok_nodepool(
        name, ["key: kubernetes.io/arch, operator: In, values: [amd64]",
               f"key: karpenter.sh/capacity-type, operator: In, values: {json.dumps(capacity_types)}",
               'key: karpenter.kwok.sh/instance-cpu, operator: Lt, values: ["9"]'],
        spec='  disruption: {consolidateAfter: Never}\n  limits:\n    cpu: "64"')


def deployment(pool: str, replicas: int) -> str:
    return common_deployment(pool, NS, replicas, "cpu: 700m, memory: 900Mi", pool=pool)


def run(binary: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=120)


def cost_json(binary: str, *extra: str) -> dict | None:
    r = run(binary, "cost", "--kubeconfig", KUBECONFIG, "-o", "json", *extra)
    if not check(f"dovetail cost -o json {' '.join(extra)} exits 0", r.returncode == 0,
                 f"rc={r.returncode} {r.stderr.strip()}"):
        return None
    return json.loads(r.stdout)


def simulated_price(binary: str, workdir: Path, instance_type: str, zone: str,
                    capacity_type: str) -> float | None:
    """The kwok catalog's price of one offering, as `dovetail simulate` plans it."""
    d = workdir / f"{instance_type}-{zone}-{capacity_type}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "scenario.yaml").write_text(f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: pinned}}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}}
      requirements:
        - {{key: node.kubernetes.io/instance-type, operator: In, values: [{instance_type}]}}
        - {{key: topology.kubernetes.io/zone, operator: In, values: [{zone}]}}
        - {{key: karpenter.sh/capacity-type, operator: In, values: [{capacity_type}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: probe, namespace: default}}
spec:
  containers:
    - name: c
      image: x
      resources: {{requests: {{cpu: 10m}}}}
""")
    r = run(binary, "simulate", "-f", str(d), "--catalog", "kwok", "-o", "json")
    if r.returncode != 0:
        print(f"simulate failed: {r.stderr.strip()}")
        return None
    claims = json.loads(r.stdout)["nodeClaims"]
    if len(claims) != 1:
        return None
    return float(claims[0]["pricePerHour"])


def pod_requests(pod: dict) -> tuple[float, float]:
    cpu = mem = 0.0
    for c in pod["spec"].get("containers", []):
        req = c.get("resources", {}).get("requests", {})
        cpu += quantity(req.get("cpu", "0")) * 1000
        mem += quantity(req.get("memory", "0"))
    return cpu, mem


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    apply_crds()
    kubectl("create", "namespace", NS)
    kubectl("apply", "-f", "-", stdin=nodepool(POOL_SPOT, ["spot", "on-demand"]))
    kubectl("apply", "-f", "-", stdin=nodepool(POOL_OD, ["on-demand"]))
    log_path = Path(os.environ.get("DOVETAIL_E2E_LOG_DIR", "/tmp")) / f"dovetail-cost-controller-{RUN_ID}.log"
    process = ControllerProcess(binary, log_path)
    process.start()
    workdir = Path(tempfile.mkdtemp(prefix="dovetail-cost-"))
    try:
        for pool, n in REPLICAS.items():
            kubectl("apply", "-f", "-", stdin=deployment(pool, n))

        def settled() -> bool:
            pods = get("pods", "-n", NS)["items"]
            if len(pods) != sum(REPLICAS.values()) or any(p["status"].get("phase") != "Running" for p in pods):
                return False
            claims = [c for c in get("nodeclaims")["items"]
                      if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") in REPLICAS]
            return bool(claims) and all(condition(c, "Initialized") == "True" for c in claims)

        if not check("every pod Running on registered, initialized Karpenter nodes",
                     wait_for("pods and NodeClaims", settled, process)):
            print(process.tail())
            return 1

        nodes = {n["metadata"]["name"]: n for n in get("nodes")["items"]
                 if n["metadata"].get("labels", {}).get("karpenter.sh/nodepool") in REPLICAS}
        claim_of_node = {c["status"].get("nodeName"): c["metadata"]["name"]
                         for c in get("nodeclaims")["items"]}
        all_pods = [p for p in get("pods", "-A")["items"]
                    if p["spec"].get("nodeName") and p["status"].get("phase") not in ("Succeeded", "Failed")]

        report = cost_json(binary)
        if report is None:
            return 1
        check("the report is a dovetail.sh/v1alpha1 CostReport with hoursPerMonth 730",
              report.get("apiVersion") == "dovetail.sh/v1alpha1" and report.get("kind") == "CostReport"
              and report.get("hoursPerMonth") == 730 and report.get("cloudProvider") == "kwok",
              json.dumps({k: report.get(k) for k in ("apiVersion", "kind", "hoursPerMonth")}))
        rows = {r["name"]: r for r in report["nodes"] if r["nodePool"] in REPLICAS}
        check("every Karpenter node is listed, and nothing else of the NodePools",
              set(rows) == set(nodes), f"report {sorted(rows)} vs nodes {sorted(nodes)}")
        order = [(r["nodePool"] or "\uffff", r["name"]) for r in report["nodes"]]
        check("nodes are sorted by NodePool then name", order == sorted(order))

        prices: dict[tuple, float | None] = {}
        label_mismatch, price_mismatch, usage_mismatch = [], [], []
        for name, node in nodes.items():
            row = rows.get(name)
            if row is None:
                continue
            labels = node["metadata"]["labels"]
            want = (labels.get("node.kubernetes.io/instance-type"), labels.get("topology.kubernetes.io/zone"),
                    labels.get("karpenter.sh/capacity-type"))
            got = (row["instanceType"], row["zone"], row["capacityType"])
            if got != want or row["nodePool"] != labels.get("karpenter.sh/nodepool") \
                    or row["status"] != "registered" or row["nodeClaim"] != claim_of_node.get(name):
                label_mismatch.append(f"{name}: {row} vs {want}")
            if want not in prices:
                prices[want] = simulated_price(binary, workdir, *want)
            if prices[want] is None or row["pricePerHour"] is None \
                    or abs(row["pricePerHour"] - prices[want]) > EPS \
                    or abs(row["pricePerMonth"] - prices[want] * 730) > 1e-6:
                price_mismatch.append(f"{name} {want}: {row['pricePerHour']} vs catalog {prices[want]}")
            on_node = [p for p in all_pods if p["spec"]["nodeName"] == name]
            cpu = sum(pod_requests(p)[0] for p in on_node)
            mem = sum(pod_requests(p)[1] for p in on_node)
            alloc_cpu = quantity(node["status"]["allocatable"]["cpu"]) * 1000
            alloc_mem = quantity(node["status"]["allocatable"]["memory"])
            ok = (row["pods"] == len(on_node)
                  and row["cpu"]["requestedMillicores"] == round(cpu)
                  and row["cpu"]["allocatableMillicores"] == round(alloc_cpu)
                  and abs(row["cpu"]["utilisation"] - cpu / alloc_cpu) < 1e-9
                  and row["memory"]["requestedBytes"] == round(mem)
                  and row["memory"]["allocatableBytes"] == round(alloc_mem)
                  and abs(row["memory"]["utilisation"] - mem / alloc_mem) < 1e-9)
            if not ok:
                usage_mismatch.append(f"{name}: pods {len(on_node)} cpu {cpu}/{alloc_cpu} mem {mem}/{alloc_mem} "
                                      f"vs {row['pods']} {row['cpu']} {row['memory']}")
        check("type, capacity type, zone, NodePool and NodeClaim come from the node's labels",
              not label_mismatch, "; ".join(label_mismatch[:3]))
        check("every price is the catalog offering's (instance type x zone x capacity type)",
              not price_mismatch, "; ".join(price_mismatch[:3]))
        check("requests, allocatable, utilisation and pods match the pods bound to each node",
              not usage_mismatch, "; ".join(usage_mismatch[:3]))
        check("the spot-or-on-demand NodePool launched spot and the other on-demand",
              all(r["capacityType"] == ("on-demand" if r["nodePool"] == POOL_OD else "spot")
                  for r in rows.values()), str({n: r["capacityType"] for n, r in rows.items()}))

        pools = {p["name"]: p for p in report["nodePools"]}
        totals_ok = []
        for pool in REPLICAS:
            p = pools.get(pool)
            mine = [r for r in rows.values() if r["nodePool"] == pool]
            want = sum(r["pricePerHour"] or 0 for r in mine)
            totals_ok.append(p is not None and p["nodes"] == len(mine) and p["pricedNodes"] == len(mine)
                             and abs(p["costPerHour"] - want) < EPS and want > 0
                             and abs(p["costPerMonth"] - p["costPerHour"] * 730) < 1e-6)
        check("per-NodePool totals are the sums of their nodes; month = hour x 730", all(totals_ok),
              json.dumps({k: pools.get(k) for k in REPLICAS})[:400])
        total = report["total"]
        check("the total is the sum of the NodePools",
              abs(total["costPerHour"] - sum(p["costPerHour"] for p in report["nodePools"])) < EPS
              and abs(total["costPerMonth"] - total["costPerHour"] * 730) < 1e-6, json.dumps(total)[:300])

        table = run(binary, "cost", "--kubeconfig", KUBECONFIG)
        lines = table.stdout.splitlines()

        def has_line(first: str, hourly: float, monthly: float) -> bool:
            return any(l.split()[:1] == [first] and f"{hourly:.4f}" in l.split() and f"{monthly:.2f}" in l.split()
                       for l in lines if l.strip())

        check("the table shows each NodePool's and the total cost per hour and month",
              table.returncode == 0 and all(has_line(p, pools[p]["costPerHour"], pools[p]["costPerMonth"])
                                            for p in REPLICAS)
              and has_line("TOTAL", total["costPerHour"], total["costPerMonth"]), table.stdout[-800:])
        check("the table lists every node", all(any(l.split()[:1] == [n] for l in lines) for n in nodes))

        only = cost_json(binary, "--nodepool", POOL_OD)
        if only is not None:
            check("--nodepool keeps that NodePool's nodes and totals",
                  [p["name"] for p in only["nodePools"]] == [POOL_OD]
                  and {r["name"] for r in only["nodes"]} == {n for n, r in rows.items() if r["nodePool"] == POOL_OD}
                  and abs(only["total"]["costPerHour"] - pools[POOL_OD]["costPerHour"]) < EPS)

        ports = controller_ports(log_path)
        try:
            # The cost gauges are the leader's, recomputed every 10 s: scrape until they agree.
            deadline = time.time() + 60
            while True:
                with urllib.request.urlopen(f"http://127.0.0.1:{ports.get('metrics')}/metrics",
                                            timeout=5) as r:
                    text = r.read().decode()
                gauges = {}
                for line in text.splitlines():
                    for pool in REPLICAS:
                        if line.startswith(f'dovetail_nodepool_cost_per_hour{{nodepool="{pool}"}}'):
                            gauges[pool] = float(line.split()[-1])
                    if line.startswith("dovetail_cluster_cost_per_hour "):
                        gauges["cluster"] = float(line.split()[-1])
                agree = (all(abs(gauges.get(p, -1) - pools[p]["costPerHour"]) < EPS for p in REPLICAS)
                         and abs(gauges.get("cluster", -1) - total["costPerHour"]) < EPS)
                if agree or time.time() > deadline:
                    break
                time.sleep(2)
            check("dovetail_nodepool_cost_per_hour equals the CLI's NodePool totals",
                  all(abs(gauges.get(p, -1) - pools[p]["costPerHour"]) < EPS for p in REPLICAS),
                  f"{gauges} vs {[pools[p]['costPerHour'] for p in REPLICAS]}")
            check("dovetail_cluster_cost_per_hour equals the CLI's total",
                  abs(gauges.get("cluster", -1) - total["costPerHour"]) < EPS,
                  f"{gauges.get('cluster')} vs {total['costPerHour']}")
        except OSError as e:
            check("/metrics is served", False, f"{ports}: {e}")

        aws_catalog = ROOT / "data" / "aws"
        unknown = cost_json(binary, "--cloud-provider", "aws", "--catalog", str(aws_catalog))
        if unknown is not None:
            mine = [r for r in unknown["nodes"] if r["nodePool"] in REPLICAS]
            check("types the catalog does not know have no price, no total and a note",
                  mine and all(r["pricePerHour"] is None for r in mine)
                  and all(unknown_pool["costPerHour"] == 0 for unknown_pool in unknown["nodePools"]
                          if unknown_pool["name"] in REPLICAS)
                  and any("no known price" in n for n in unknown["notes"]), json.dumps(unknown["notes"]))
            # Without --catalog (and DOVETAIL_AWS_CATALOG): the same data, compiled in.
            env = {k: v for k, v in os.environ.items() if k != "DOVETAIL_AWS_CATALOG"}
            r = subprocess.run([binary, "cost", "--kubeconfig", KUBECONFIG, "--cloud-provider", "aws",
                                "-o", "json"], capture_output=True, text=True, timeout=60, env=env)
            built_in = json.loads(r.stdout) if r.returncode == 0 else None
            check("aws without --catalog prices from the catalog built in, as data/aws does",
                  built_in is not None
                  and {p["name"]: p["costPerHour"] for p in built_in["nodePools"]}
                  == {p["name"]: p["costPerHour"] for p in unknown["nodePools"]}
                  and built_in["notes"] == unknown["notes"], f"rc={r.returncode} {r.stderr.strip()}")
            table = run(binary, "cost", "--kubeconfig", KUBECONFIG, "--cloud-provider", "aws",
                        "--catalog", str(aws_catalog))
            check("the table shows ? for an unknown price",
                  table.returncode == 0 and any(" ? " in f" {l} " for l in table.stdout.splitlines()),
                  table.stdout[-400:])

        # Bad input.
        bad_kc = workdir / "unreachable.kubeconfig"
        bad_kc.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
""")
        r = run(binary, "cost", "--kubeconfig", str(bad_kc))
        check("an unreachable API server: a clear error naming it, exit != 0",
              r.returncode != 0 and "error:" in r.stderr and "127.0.0.1:1" in r.stderr and not r.stdout,
              f"rc={r.returncode} {r.stderr.strip()}")
        r = run(binary, "cost", "--kubeconfig", str(workdir / "missing.kubeconfig"))
        check("a missing kubeconfig: a clear error, exit != 0",
              r.returncode != 0 and "kubeconfig" in r.stderr, f"rc={r.returncode} {r.stderr.strip()}")
        r = run(binary, "cost", "--kubeconfig", KUBECONFIG, "-o", "yaml")
        check("-o yaml is refused", r.returncode != 0 and "table or json" in r.stderr, r.stderr.strip())
        r = run(binary, "cost", "--kubeconfig", KUBECONFIG, "--nodepool", "no-such-pool")
        check("an unknown --nodepool is an error", r.returncode != 0 and "no-such-pool" in r.stderr,
              r.stderr.strip())
    finally:
        rc = process.stop()
        check("the controller stops cleanly", rc == 0, str(rc))
        kubectl("delete", "namespace", NS, "--wait=false", check_rc=False)
        for pool in REPLICAS:
            kubectl("delete", "nodepool", pool, "--wait=false", check_rc=False)
    print(f"{Tally.passed} passed, {Tally.failed} failed")
    return 0 if Tally.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
