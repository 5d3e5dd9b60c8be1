#!/usr/bin/env python3
"""`dovetail catalog export` against moto, then `dovetail simulate --catalog` on the export.

  catalog_export_test.py DOVETAIL_BINARY

Needs DOVETAIL_MOTO_DIR (the moto fixture's directory, holding `endpoint`). moto has no Pricing
API, so the export must fall back to the static on-demand table compiled into the binary (no
DOVETAIL_AWS_CATALOG) and say so. The plan's NodeClaims
must use instance types that moto offers (those in the exported instance-types.csv).
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

MANIFEST = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 4
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: nginx
          resources:
            requests:
              cpu: "1"
              memory: 2Gi
"""

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL: " + message)


def run(args, env):
    print("$ " + " ".join(args))
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=240)
    print(p.stdout[-4000:])
    print(p.stderr[-4000:], file=sys.stderr)
    return p


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    binary = sys.argv[1]
    with open(os.path.join(os.environ["DOVETAIL_MOTO_DIR"], "endpoint")) as f:
        endpoint = f.read().strip()
    region = "us-east-1"
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("AWS_"):
            del env[key]
    env.update({
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": region,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
    })
    env.pop("DOVETAIL_AWS_CATALOG", None)  # the static table compiled into the binary

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "catalog")

        # Without credentials: a clear error and exit 1, no crash.
        no_creds = {k: v for k, v in env.items()
                    if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
        no_creds["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(tmp, "missing-credentials")
        no_creds["AWS_CONFIG_FILE"] = os.path.join(tmp, "missing-config")
        p = run([binary, "catalog", "export", "--output", out], no_creds)
        check(p.returncode == 1, "export without credentials exits 1, got %d" % p.returncode)
        check("credentials" in p.stderr, "export without credentials names credentials")

        p = run([binary, "catalog", "export", "--output", out], env)
        check(p.returncode == 0, "export exits 0, got %d" % p.returncode)
        check("Pricing API unavailable" in p.stderr and "static on-demand price table" in p.stderr,
              "export says it fell back to the static on-demand price table")
        for name in ("instance-types.csv", "on-demand-prices.csv", "spot-prices.csv"):
            check(os.path.exists(os.path.join(out, name)), name + " written")
        if failures:
            return 1
        types = {r["name"] for r in read_csv(os.path.join(out, "instance-types.csv"))}
        check(len(types) > 0, "moto offers instance types")
        prices = read_csv(os.path.join(out, "on-demand-prices.csv"))
        check(any(r["region"] == region and r["instance_type"] in types for r in prices),
              "on-demand prices of the region for exported types")

        manifest = os.path.join(tmp, "workload.yaml")
        with open(manifest, "w") as f:
            f.write(MANIFEST)
        p = run([binary, "simulate", "--catalog", out, "-f", manifest, "-o", "json"], env)
        check(p.returncode == 0, "simulate exits 0, got %d" % p.returncode)
        if p.returncode == 0:
            plan = json.loads(p.stdout)
            claims = plan.get("nodeClaims", [])
            check(len(claims) > 0, "the plan has NodeClaims")
            for c in claims:
                check(c["instanceType"] in types,
                      "NodeClaim type %s is one moto offers" % c["instanceType"])
                check(c["capacityType"] == "on-demand", "NodeClaim is on-demand")
            check(not plan.get("unschedulable"), "every pod is scheduled: %s"
                  % plan.get("unschedulable"))

    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
