#!/usr/bin/env python3
"""End-to-end checks of `dovetail simulate` on examples/simulate (docs/simulate.md).

Usage: simulate_test.py DOVETAIL_BINARY. Reads the AWS catalog in data/aws (the files the binary
also compiles in) and needs the `jsonschema` module (installed with moto into .cache/venv by
scripts/install-deps). Prints one line per check and `N passed, M failed`.
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

from cli_checks import check, summary

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AWS = os.path.join(REPO, "data", "aws")
EXAMPLES = os.path.join(REPO, "examples", "simulate")
SCHEMA = json.load(open(os.path.join(REPO, "docs", "simulate.schema.json")))
EXPECTED_PODS = 30 + 3 + 2 + 12  # web, cache, trainer, nightly-report


def run(binary, *args):
    return subprocess.run([binary, "simulate", *args], capture_output=True, text=True, timeout=300)


def all_pods(plan):
    pods = []
    for c in plan["nodeClaims"]:
        pods += c["pods"]
    for n in plan["existingNodes"]:
        pods += n["pods"]
    pods += [u["pod"] for u in plan["unschedulable"]]
    return pods


def check_plan_shape(label, plan):
    try:
        jsonschema.validate(plan, SCHEMA)
        check(f"{label}: output validates against docs/simulate.schema.json", True)
    except jsonschema.ValidationError as e:
        check(f"{label}: output validates against docs/simulate.schema.json", False, e.message)
    pods = all_pods(plan)
    dupes = [p for p, n in collections.Counter(pods).items() if n > 1]
    check(f"{label}: every input pod appears exactly once",
          len(pods) == EXPECTED_PODS and not dupes, f"{len(pods)} pods, duplicates {dupes}")
    total = sum(c["pricePerHour"] for c in plan["nodeClaims"])
    check(f"{label}: total price is the sum of the nodes", abs(total - plan["totalPricePerHour"]) < 1e-4,
          f"{total} vs {plan['totalPricePerHour']}")
    lb = plan["lowerBoundPricePerHour"]
    check(f"{label}: lower bound present and not above the plan",
          lb is not None and lb <= plan["totalPricePerHour"] + 1e-6, f"bound {lb}")


def main():
    binary = sys.argv[1]
    aws_args = ["--catalog", os.path.join(AWS, "instance-types.csv"),
                "--prices", os.path.join(AWS, "on-demand-prices.csv"), "--region", "us-east-1"]

    # 1. The examples against the real AWS catalog.
    r = run(binary, "-f", EXAMPLES, *aws_args, "-o", "json")
    check("aws: exit code 0", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        plan = json.loads(r.stdout)
        check_plan_shape("aws", plan)
        check("aws: nothing unschedulable", not plan["unschedulable"], plan["unschedulable"])
        by_pod = {}
        for c in plan["nodeClaims"]:
            for p in c["pods"]:
                by_pod[p] = c
        batch = [c for c in plan["nodeClaims"] if c["nodePool"] == "spot-batch"]
        check("aws: batch pods run on the spot pool",
              all(by_pod.get(f"batch/nightly-report-{i}", {}).get("nodePool") == "spot-batch"
                  for i in range(12)))
        check("aws: spot pool keeps to c5/m5/r5.large, spot, two zones",
              batch and all(set(c["instanceTypeOptions"]) <= {"c5.large", "m5.large", "r5.large"}
                            and c["capacityType"] == "spot"
                            and c["zone"] in ("us-east-1a", "us-east-1b") for c in batch),
              json.dumps(batch)[:400])
        check("aws: spot pool nodes carry the pool's taint",
              all(any(t["key"] == "workload" and t["effect"] == "NoSchedule" for t in c["taints"])
                  for c in batch))
        gpu = [c for c in plan["nodeClaims"] if c["nodePool"] == "gpu"]
        check("aws: each trainer gets a GPU node with the GPU taint",
              len(gpu) >= 1 and all(any(t["key"] == "nvidia.com/gpu" for t in c["taints"])
                                    and c["labels"].get("karpenter.k8s.aws/instance-gpu-manufacturer") == "nvidia"
                                    for c in gpu)
              and all(by_pod.get(f"ml/trainer-{i}", {}).get("nodePool") == "gpu" for i in range(2)))
        zones = collections.Counter(by_pod[f"shop/web-{i}"]["zone"] for i in range(30) if f"shop/web-{i}" in by_pod)
        check("aws: web tier spread across three zones within maxSkew 1",
              len(zones) == 3 and max(zones.values()) - min(zones.values()) <= 1, dict(zones))
        hosts = [by_pod[f"shop/cache-{i}"]["name"] for i in range(3) if f"shop/cache-{i}" in by_pod]
        check("aws: cache replicas on distinct nodes", len(set(hosts)) == 3, hosts)
        check("aws: nodes carry resolved labels",
              all(c["labels"].get("node.kubernetes.io/instance-type") == c["instanceType"]
                  and c["labels"].get("topology.kubernetes.io/zone") == c["zone"]
                  and c["labels"].get("karpenter.sh/capacity-type") == c["capacityType"]
                  and c["labels"].get("karpenter.sh/nodepool") == c["nodePool"]
                  and "kubernetes.io/arch" in c["labels"] for c in plan["nodeClaims"]))
        check("aws: options are priced cheapest first, the chosen type among them",
              all(c["instanceType"] == c["instanceTypeOptions"][0] for c in plan["nodeClaims"]))
        # The catalog compiled into the binary is the same data: the same plan.
        b = run(binary, "-f", EXAMPLES, "--catalog", "aws", "--region", "us-east-1", "-o", "json")
        check("aws built in: exit code 0", b.returncode == 0, b.stderr)
        if b.returncode == 0:
            built_in = json.loads(b.stdout)
            check("aws built in: the same NodeClaims and prices as the data/aws files",
                  built_in["nodeClaims"] == plan["nodeClaims"]
                  and built_in["totalPricePerHour"] == plan["totalPricePerHour"]
                  and built_in["lowerBoundPricePerHour"] == plan["lowerBoundPricePerHour"],
                  f"{built_in['totalPricePerHour']} vs {plan['totalPricePerHour']}")

    # 2. The same files on the built-in kwok catalog: AWS-only pools leave pods unschedulable,
    #    each with a reason, and the output is still well formed.
    r = run(binary, "-f", EXAMPLES, "--catalog", "kwok", "-o", "json")
    check("kwok: exit code 0", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        plan = json.loads(r.stdout)
        check_plan_shape("kwok", plan)
        check("kwok: unschedulable pods say which nodepool rejected them",
              all("nodepool \"" in u["reason"] for u in plan["unschedulable"]),
              plan["unschedulable"][:2])

    # 3. The table is for people.
    r = run(binary, "-f", EXAMPLES, *aws_args)
    check("table: summary line with cost and bound",
          r.returncode == 0 and "cost: $" in r.stdout and "lower bound" in r.stdout, r.stdout[-300:])

    # 4. Bad input gives a clear error naming the object, and exit code 1.
    with tempfile.TemporaryDirectory() as d:
        def bad(name, text, expect):
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(text)
            r = run(binary, "-f", os.path.join(EXAMPLES, "nodepools.yaml"), "-f", path, *aws_args)
            check(f"bad input {name}: exit 1 and a message naming it",
                  r.returncode == 1 and all(e in r.stderr for e in expect) and "Traceback" not in r.stderr,
                  f"rc={r.returncode} stderr={r.stderr[:300]}")
        bad("unknown-kind.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
            ["unknown-kind.yaml", "Widget"])
        bad("invalid-nodepool.yaml",
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: heavy\nspec:\n  weight: 101\n"
            "  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"
            "      requirements: []\n",
            ["NodePool/heavy", "spec.weight"])
        bad("bad-quantity.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n"
            "    resources:\n      requests:\n        cpu: lots\n",
            ["bad-quantity.yaml", "Pod/", "cpu"])
        bad("malformed.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n", ["malformed.yaml:"])

    # 5. Quantities of any size Kubernetes accepts: a 10Pi pod and a 1e30-CPU pod are
    #    unschedulable with a reason, every other pod of the examples is still planned.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "huge.yaml")
        with open(path, "w") as f:
            for name, cpu, memory in (("huge-memory", "1", "10Pi"), ("huge-cpu", "1e30", "1Gi")):
                f.write("---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: default\n"
                        "spec:\n  containers:\n  - name: c\n    image: x\n    resources:\n"
                        "      requests: {cpu: \"%s\", memory: \"%s\"}\n" % (name, cpu, memory))
        r = run(binary, "-f", EXAMPLES, "-f", path, *aws_args, "-o", "json")
        check("huge quantities: exit code 0", r.returncode == 0, r.stderr[:300])
        if r.returncode == 0:
            plan = json.loads(r.stdout)
            unschedulable = {u["pod"]: u["reason"] for u in plan["unschedulable"]}
            check("huge quantities: exactly the two huge pods are unschedulable, with reasons",
                  set(unschedulable) == {"default/huge-memory", "default/huge-cpu"}
                  and all(unschedulable.values()), unschedulable)
            placed = sum(len(c["pods"]) for c in plan["nodeClaims"]) + \
                sum(len(n["pods"]) for n in plan["existingNodes"])
            check("huge quantities: every other pod is planned", placed == EXPECTED_PODS,
                  f"{placed} placed")

    # 6. Volume topology (dovetail/scenario/volume_topology.h): a pod whose claim is bound to a
    #    volume in us-east-1b lands there; one whose unbound claim's StorageClass allows only
    #    us-east-1c lands there; one with both fits nowhere.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "volumes.yaml")
        pod = ("---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: default\n"
               "spec:\n  containers:\n  - name: c\n    image: x\n    resources:\n"
               "      requests: {cpu: \"1\", memory: 1Gi}\n  volumes:\n%s")
        claim = "  - name: %s\n    persistentVolumeClaim: {claimName: %s}\n"
        with open(path, "w") as f:
            f.write("---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: only-c}\n"
                    "provisioner: ebs.csi.aws.com\nvolumeBindingMode: WaitForFirstConsumer\n"
                    "allowedTopologies:\n- matchLabelExpressions:\n"
                    "  - {key: topology.kubernetes.io/zone, values: [us-east-1c]}\n")
            f.write("---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv-b}\nspec:\n"
                    "  capacity: {storage: 10Gi}\n  accessModes: [ReadWriteOnce]\n"
                    "  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}\n"
                    "  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n"
                    "      - matchExpressions:\n"
                    "        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1b]}\n")
            for name, spec in (("bound", "volumeName: pv-b"), ("fresh", "storageClassName: only-c")):
                f.write("---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n"
                        "  name: %s\n  namespace: default\nspec:\n  accessModes: [ReadWriteOnce]\n"
                        "  resources: {requests: {storage: 10Gi}}\n  %s\n" % (name, spec))
            f.write(pod % ("on-bound", claim % ("v", "bound")))
            f.write(pod % ("on-fresh", claim % ("v", "fresh")))
            f.write(pod % ("on-both", claim % ("a", "bound") + claim % ("b", "fresh")))
        r = run(binary, "-f", os.path.join(EXAMPLES, "nodepools.yaml"), "-f", path, *aws_args,
                "-o", "json")
        check("volumes: exit code 0", r.returncode == 0, r.stderr[:300])
        if r.returncode == 0:
            plan = json.loads(r.stdout)
            zone_of = {p: c["zone"] for c in plan["nodeClaims"] for p in c["pods"]}
            check("volumes: a bound claim's pod lands in its volume's zone",
                  zone_of.get("default/on-bound") == "us-east-1b", zone_of)
            check("volumes: an unbound claim's pod lands where its StorageClass allows",
                  zone_of.get("default/on-fresh") == "us-east-1c", zone_of)
            check("volumes: claims in two zones leave the pod unschedulable",
                  [u["pod"] for u in plan["unschedulable"]] == ["default/on-both"], plan["unschedulable"])

    return summary()


if __name__ == "__main__":
    sys.exit(main())
