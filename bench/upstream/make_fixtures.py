#!/usr/bin/env python3
"""Writes the frozen fixtures of the side-by-side benchmarks against upstream Karpenter.

A fixture is what `dovetail simulate -f DIR --catalog DIR2` reads and what
cmd/fixture-bench feeds to upstream's scheduler:

  <out>/catalog-aws/           instance-types.csv, on-demand-prices.csv and spot-prices.csv:
                               the real AWS catalog (data/aws), us-east-1 rows only,
                               spot prices written out from Dovetail's deterministic spot model
                               (dovetail/cloudprovider/aws_catalog.h) so both sides read the same
                               numbers from the file.
  <out>/diverse-<N>/           nodepool.yaml (one NodePool) and pods.yaml (N pending Pods).
  <out>/antiaffinity-<N>/      N pods in Deployments of 100 replicas, each replica set with
                               required hostname anti-affinity to itself (one replica per node).
  <out>/mixed-<N>/             N pods in Deployments of 100 replicas shaped like a real cluster:
                               small to large requests, arm64 and on-demand node selectors, zonal
                               and hostname spread, anti-affinity, zone pins; two NodePools.
  <out>/nodepools-<P>/         P NodePools (one per team: a template label and a taint, varied
                               categories, capacity types and weights) and 50 pods per team that
                               select their team's pool and tolerate its taint.

The "diverse mix" is five equal fifths in contiguous blocks, as in bench/scheduling/workloads.h:
generic; zonal topology spread (maxSkew 1); hostname topology spread (maxSkew 1); zonal pod
self-affinity by a label with 7 values; hostname anti-affinity of every pod of the fifth against
every other. Requests are drawn from the same cpu/memory choices. Deterministic: the same
arguments give byte-identical files.

The set issue 9 compares (`--set compare`): diverse-1000, diverse-5000, diverse-20000,
antiaffinity-20000, mixed-10000 and nodepools-100, all on catalog-aws.

Usage: make_fixtures.py [--out DIR] [--aws-data DIR] [--pods N ...] [--set compare]
"""

import argparse
import csv
import io
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REGION = "us-east-1"
ZONES = [REGION + s for s in "abc"]

CPU_CHOICES = [100, 250, 500, 1000, 1500]  # millicores
MEMORY_CHOICES = [100, 256, 512, 1024, 2048, 4096]  # MiB
AFFINITY_LABEL_VALUES = 7
FIFTHS = ["generic", "zonal-spread", "hostname-spread", "zonal-affinity", "hostname-anti-affinity"]

NODEPOOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      requirements:
        - key: kubernetes.io/os
          operator: In
          values: ["linux"]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["spot", "on-demand"]
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: ["c", "m", "r"]
        - key: karpenter.k8s.aws/instance-generation
          operator: Gt
          values: ["2"]
"""


def spot_factor(name, zone):
    """Dovetail's deterministic spot model: FNV-1a 64 of "<type>|<zone>"."""
    h = 14695981039346656037
    for b in (name + "|" + zone).encode():
        h ^= b
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return 0.3 + 0.4 * (h % 10001) / 10000.0


def write_catalog(aws_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    prices = {}
    with open(os.path.join(aws_dir, "on-demand-prices.csv"), newline="") as f:
        for row in csv.DictReader(f):
            if row["region"] == REGION:
                prices[row["instance_type"]] = row["usd_per_hour"]
    with open(os.path.join(aws_dir, "instance-types.csv"), newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = [r for r in reader if r and r[0] in prices]
    names = [r[0] for r in rows]

    def dump(path, head, body):
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(head)
        w.writerows(body)
        with open(path, "w") as f:
            f.write(buf.getvalue())

    dump(os.path.join(out_dir, "instance-types.csv"), header, rows)
    dump(os.path.join(out_dir, "on-demand-prices.csv"), ["region", "instance_type", "usd_per_hour"],
         [[REGION, n, prices[n]] for n in names])
    spot = []
    for zone in ZONES:
        for n in names:
            od = float(prices[n])
            spot.append([REGION, zone, n, "%.6f" % round(od * spot_factor(n, zone), 6)])
    dump(os.path.join(out_dir, "spot-prices.csv"), ["region", "zone", "instance_type", "usd_per_hour"],
         spot)
    return len(names)


def diverse_pods(n, seed):
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        fifth = min(4, i * 5 // n)
        app = FIFTHS[fifth]
        cpu = rng.choice(CPU_CHOICES)
        mem = rng.choice(MEMORY_CHOICES)
        labels = {"app": app}
        spec_extra = ""
        if fifth == 1:
            spec_extra = spread("topology.kubernetes.io/zone", app)
        elif fifth == 2:
            spec_extra = spread("kubernetes.io/hostname", app)
        elif fifth == 3:
            group = "group-%d" % rng.randrange(AFFINITY_LABEL_VALUES)
            labels["affinity-group"] = group
            spec_extra = ("  affinity:\n"
                          "    podAffinity:\n"
                          "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                          "        - topologyKey: topology.kubernetes.io/zone\n"
                          "          labelSelector:\n"
                          "            matchLabels:\n"
                          "              affinity-group: %s\n") % group
        elif fifth == 4:
            spec_extra = anti_affinity(app)
        docs.append(pod_doc("diverse-%05d" % i, labels, cpu, mem, spec_extra))
    return "---\n".join(docs)


def write_diverse(out_dir, n, seed):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "nodepool.yaml"), "w") as f:
        f.write(NODEPOOL)
    with open(os.path.join(out_dir, "pods.yaml"), "w") as f:
        f.write(diverse_pods(n, seed))


def pod_doc(name, labels, cpu_m, mem_mi, spec_extra=""):
    label_text = "".join("    %s: %s\n" % (k, v) for k, v in sorted(labels.items()))
    return ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: default\n"
            "  labels:\n%s"
            "spec:\n"
            "  containers:\n"
            "    - name: app\n"
            "      image: registry.k8s.io/pause:3.10\n"
            "      resources:\n"
            "        requests:\n"
            "          cpu: %dm\n"
            "          memory: %dMi\n"
            "%s" % (name, label_text, cpu_m, mem_mi, spec_extra))


def spread(key, app, skew=1):
    return ("  topologySpreadConstraints:\n"
            "    - maxSkew: %d\n"
            "      topologyKey: %s\n"
            "      whenUnsatisfiable: DoNotSchedule\n"
            "      labelSelector:\n"
            "        matchLabels:\n"
            "          app: %s\n") % (skew, key, app)


def anti_affinity(app):
    return ("  affinity:\n"
            "    podAntiAffinity:\n"
            "      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "        - topologyKey: kubernetes.io/hostname\n"
            "          labelSelector:\n"
            "            matchLabels:\n"
            "              app: %s\n") % app


def node_selector(pairs):
    return "  nodeSelector:\n" + "".join("    %s: %s\n" % kv for kv in pairs)


def pinned_to_tainted_pool(key, value):
    """A nodeSelector on the pool's label key=value and a toleration of its taint key=value."""
    return node_selector([(key, value)]) + (
        "  tolerations:\n"
        "    - key: %s\n"
        "      operator: Equal\n"
        "      value: %s\n"
        "      effect: NoSchedule\n") % (key, value)


def write_fixture(out_dir, nodepools, pods):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "nodepool.yaml"), "w") as f:
        f.write(nodepools)
    with open(os.path.join(out_dir, "pods.yaml"), "w") as f:
        f.write("---\n".join(pods))


def write_antiaffinity(out_dir, n, seed):
    """n pods in Deployments of 100 replicas; each Deployment's replicas on distinct nodes."""
    rng = random.Random(seed)
    pods = []
    for d in range((n + 99) // 100):
        app = "anti-%03d" % d
        cpu, mem = rng.choice(CPU_CHOICES), rng.choice(MEMORY_CHOICES)
        for r in range(min(100, n - d * 100)):
            pods.append(pod_doc("%s-%03d" % (app, r), {"app": app}, cpu, mem, anti_affinity(app)))
    write_fixture(out_dir, NODEPOOL, pods)


MIXED_NODEPOOLS = NODEPOOL.replace(
    '          values: ["2"]\n',
    '          values: ["2"]\n'
    '        - key: kubernetes.io/arch\n'
    '          operator: In\n'
    '          values: ["amd64", "arm64"]\n', 1) + """---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: memory
spec:
  weight: 10
  template:
    metadata:
      labels:
        workload: memory
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      taints:
        - key: workload
          value: memory
          effect: NoSchedule
      requirements:
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: ["r", "x"]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
  limits:
    cpu: "20000"
"""


def write_mixed(out_dir, n, seed):
    """n pods in Deployments of 100 replicas with the shapes of a real cluster."""
    rng = random.Random(seed)
    pods = []
    for d in range((n + 99) // 100):
        app = "app-%03d" % d
        kind = d % 20
        if kind < 2:  # large
            cpu, mem = rng.choice([2000, 4000, 8000]), rng.choice([8192, 16384, 32768])
        else:
            cpu, mem = rng.choice(CPU_CHOICES), rng.choice(MEMORY_CHOICES)
        extra = ""
        if kind in (2, 3, 4, 5):
            extra = spread("topology.kubernetes.io/zone", app)
        elif kind in (6, 7):
            extra = spread("kubernetes.io/hostname", app, skew=2)
        elif kind == 8:
            extra = anti_affinity(app)
        elif kind in (9, 10, 11):
            extra = node_selector([("kubernetes.io/arch", "arm64")])
        elif kind == 12:
            extra = node_selector([("karpenter.sh/capacity-type", "on-demand")])
        elif kind == 13:
            extra = node_selector([("topology.kubernetes.io/zone", rng.choice(ZONES))])
        elif kind == 14:  # memory-heavy, on the tainted memory pool
            mem = rng.choice([16384, 32768, 65536])
            extra = pinned_to_tainted_pool("workload", "memory")
        for r in range(min(100, n - d * 100)):
            pods.append(pod_doc("%s-%03d" % (app, r), {"app": app}, cpu, mem, extra))
    write_fixture(out_dir, MIXED_NODEPOOLS, pods)


TEAM_POOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: {team}
spec:
  weight: {weight}
  template:
    metadata:
      labels:
        team: {team}
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      taints:
        - key: team
          value: {team}
          effect: NoSchedule
      requirements:
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: [{categories}]
        - key: karpenter.sh/capacity-type
          operator: In
          values: [{capacity}]
        - key: karpenter.k8s.aws/instance-generation
          operator: Gt
          values: ["{generation}"]
  limits:
    cpu: "2000"
"""


def write_nodepools(out_dir, pools, seed, pods_per_pool=50):
    """pools NodePools, one per team, and pods_per_pool pods per team."""
    rng = random.Random(seed)
    category_sets = [("c",), ("m",), ("r",), ("c", "m"), ("m", "r"), ("c", "m", "r")]
    capacity_sets = [("spot",), ("on-demand",), ("spot", "on-demand")]
    docs, pods = [], []
    for t in range(pools):
        team = "team-%03d" % t
        docs.append(TEAM_POOL.format(
            team=team, weight=1 + t % 50,
            categories=", ".join('"%s"' % c for c in category_sets[t % len(category_sets)]),
            capacity=", ".join('"%s"' % c for c in capacity_sets[t % len(capacity_sets)]),
            generation=4 + t % 3))
        extra = pinned_to_tainted_pool("team", team)
        if t % 4 == 0:
            extra += spread("topology.kubernetes.io/zone", team)
        cpu, mem = rng.choice(CPU_CHOICES), rng.choice(MEMORY_CHOICES)
        for r in range(pods_per_pool):
            pods.append(pod_doc("%s-%03d" % (team, r), {"app": team}, cpu, mem, extra))
    write_fixture(out_dir, "---\n".join(docs), pods)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "fixtures"))
    ap.add_argument("--aws-data", default=os.environ.get(
        "DOVETAIL_AWS_DATA", os.path.join(HERE, "..", "..", "data", "aws")))
    ap.add_argument("--pods", type=int, nargs="+", default=[1000],
                    help="diverse-mix sizes to write (default 1000)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--set", choices=["compare"],
                    help="write the whole comparison set (see above) instead of --pods")
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.aws_data, "instance-types.csv")):
        print("error: no AWS catalog at %s (pass --aws-data)" % args.aws_data, file=sys.stderr)
        return 1
    count = write_catalog(args.aws_data, os.path.join(args.out, "catalog-aws"))
    written = []
    sizes = [1000, 5000, 20000] if args.set == "compare" else args.pods
    for n in sizes:
        if n < 5:
            print("error: --pods must be at least 5", file=sys.stderr)
            return 1
        write_diverse(os.path.join(args.out, "diverse-%d" % n), n, args.seed)
        written.append("diverse-%d" % n)
    if args.set == "compare":
        write_antiaffinity(os.path.join(args.out, "antiaffinity-20000"), 20000, args.seed)
        write_mixed(os.path.join(args.out, "mixed-10000"), 10000, args.seed)
        write_nodepools(os.path.join(args.out, "nodepools-100"), 100, args.seed)
        written += ["antiaffinity-20000", "mixed-10000", "nodepools-100"]
    print("wrote %s: catalog-aws (%d types), %s" % (args.out, count, ", ".join(written)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
