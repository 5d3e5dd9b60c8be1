#!/usr/bin/env python3
"""Older Karpenter API versions read directly by `dovetail validate` and `dovetail simulate`, and
the karpenter-global-settings ConfigMap converted by `dovetail convert --helm-values` (issue 8).

Usage: old_api_cli_test.py DOVETAIL_BINARY. Runs on the convert testdata (the seeds' style of
v1alpha5 / v1alpha1 / v1beta1 manifests). Needs PyYAML (in .cache/venv, installed with moto by
scripts/install-deps). Prints one line per check and `N passed, M failed`.
"""
import json
import os
import subprocess
import sys
import tempfile

import yaml

from cli_checks import check, summary

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTDATA = os.path.join(REPO, "dovetail", "apis", "convert", "testdata")
VALUES = os.path.join(REPO, "charts", "dovetail", "values.yaml")


def run(binary, *args, stdin=None):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=300, input=stdin)


def crashed(proc):
    return proc.returncode < 0 or proc.returncode > 2


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 24
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: web
          resources: {requests: {cpu: 900m, memory: 1500Mi}}
"""


def plan_summary(plan):
    claims = sorted((c["nodePool"], c["instanceType"], len(c["pods"])) for c in plan["nodeClaims"])
    return claims, round(plan["totalPricePerHour"], 6), len(plan["unschedulable"])


def main():
    binary = sys.argv[1]

    # validate: every old manifest is checked as its v1 conversion.
    for name in sorted(os.listdir(TESTDATA)):
        path = os.path.join(TESTDATA, name)
        proc = run(binary, "validate", "-o", "json", "-f", path)
        check(f"validate {name}: no crash", not crashed(proc), proc.stderr)
        try:
            report = json.loads(proc.stdout)
        except json.JSONDecodeError as e:
            check(f"validate {name}: JSON report", False, str(e))
            continue
        objects = [o for f in report["files"] for o in f["objects"]]
        if name == "errors.yaml":
            errors = [e for o in objects for e in o["errors"]]
            check("validate errors.yaml: exit 1", proc.returncode == 1, proc.stdout)
            check("validate errors.yaml: conversion errors name the old fields",
                  {"spec.provider", "spec.launchTemplate"} <= {e["field"] for e in errors}
                  and all("cannot convert to v1" in e["message"] for e in errors), errors)
        else:
            check(f"validate {name}: exit 0, all valid", proc.returncode == 0 and report["valid"],
                  proc.stdout)
            old = [o for o in objects if o["apiVersion"] not in ("karpenter.sh/v1", "karpenter.k8s.aws/v1", "v1")]
            check(f"validate {name}: old objects validated as their conversion",
                  old and all(o["validated"] and any("validated as its conversion" in n for n in o["notes"])
                              for o in old), old)

    # validate: an old object that breaks a v1 rule is invalid, at the v1 field.
    bad = open(os.path.join(TESTDATA, "v1beta1_split.yaml")).read().replace("weight: 10", "weight: 1000")
    if "weight: 1000" not in bad:
        bad = bad.replace("spec:\n  template:", "spec:\n  weight: 1000\n  template:", 1)
    proc = run(binary, "validate", "-f", "-", stdin=bad)
    check("validate v1beta1 NodePool with weight 1000: exit 1, spec.weight reported",
          proc.returncode == 1 and "spec.weight" in proc.stdout, proc.stdout + proc.stderr)

    # simulate: old manifests plan exactly like their `dovetail convert` output.
    with tempfile.TemporaryDirectory() as tmp:
        old_dir = os.path.join(tmp, "old")
        new_dir = os.path.join(tmp, "new")
        os.makedirs(old_dir)
        os.makedirs(new_dir)
        for d in (old_dir, new_dir):
            with open(os.path.join(d, "web.yaml"), "w") as f:
                f.write(DEPLOYMENT)
        for name in ("v1beta1_split.yaml", "consolidation.yaml", "global_settings.yaml"):
            src = os.path.join(TESTDATA, name)
            conv = run(binary, "convert", "-f", src)
            check(f"convert {name}: exit 0", conv.returncode == 0, conv.stderr)
            with open(os.path.join(new_dir, "pools.yaml"), "w") as f:
                f.write(conv.stdout)
            with open(os.path.join(old_dir, "pools.yaml"), "w") as f:
                f.write(open(src).read())
            old = run(binary, "simulate", "-o", "json", "-f", old_dir)
            new = run(binary, "simulate", "-o", "json", "-f", new_dir)
            check(f"simulate {name} as written: exit 0", old.returncode == 0, old.stderr)
            check(f"simulate {name} converted: exit 0", new.returncode == 0, new.stderr)
            if old.returncode == 0 and new.returncode == 0:
                a, b = plan_summary(json.loads(old.stdout)), plan_summary(json.loads(new.stdout))
                check(f"simulate {name}: same plan as its conversion ({len(a[0])} NodeClaims, ${a[1]}/h)",
                      a == b and a[0] and a[2] == 0, f"{a} vs {b}")
        proc = run(binary, "simulate", "-f", os.path.join(TESTDATA, "errors.yaml"), "-f",
                   os.path.join(old_dir, "web.yaml"))
        check("simulate errors.yaml: exit 1 naming the file and field",
              proc.returncode == 1 and not crashed(proc) and "errors.yaml:" in proc.stderr
              and "spec.launchTemplate" in proc.stderr, proc.stderr)

        # convert --helm-values: the ConfigMap's settings become values the chart knows.
        values_path = os.path.join(tmp, "values.yaml")
        conv = run(binary, "convert", "--explain", "--helm-values", values_path, "-f",
                   os.path.join(TESTDATA, "global_settings.yaml"))
        check("convert global_settings.yaml --helm-values: exit 0", conv.returncode == 0, conv.stderr)
        docs = [d for d in yaml.safe_load_all(conv.stdout) if d]
        check("convert global_settings.yaml: the ConfigMap is not in the output",
              [d["kind"] for d in docs] == ["NodePool", "EC2NodeClass"], [d["kind"] for d in docs])
        try:
            values = yaml.safe_load(open(values_path))
        except (OSError, yaml.YAMLError) as e:
            values = None
            check("convert --helm-values: values file written", False, str(e))
        if values is not None:
            chart = yaml.safe_load(open(VALUES))["settings"]
            settings = values.get("settings", {})
            check("helm values: clusterName, clusterEndpoint, interruptionQueue",
                  settings.get("clusterName") == "my-cluster"
                  and settings.get("interruptionQueue") == "my-cluster"
                  and settings.get("clusterEndpoint", "").startswith("https://"), settings)
            unknown = sorted(set(settings) - set(chart))
            check("helm values: every key is a settings.* value of charts/dovetail", not unknown, unknown)
            check("helm values: types match the chart's defaults",
                  all(type(settings[k]) is type(chart[k]) for k in settings if k in chart),
                  {k: (settings[k], chart.get(k)) for k in settings})
        check("convert --explain lists the global settings mapping",
              "aws.defaultInstanceProfile" in conv.stderr and "settings.clusterName" in conv.stderr,
              conv.stderr)
        conv = run(binary, "convert", "-f", os.path.join(TESTDATA, "global_settings.yaml"))
        check("convert without --helm-values prints the values on stderr",
              conv.returncode == 0 and "clusterName: my-cluster" in conv.stderr, conv.stderr)
        garbage = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: karpenter-global-settings}\ndata:\n  aws.nope: x\n"
        conv = run(binary, "convert", "-f", "-", stdin=garbage)
        check("convert unknown global setting: exit 1, nothing written, path named",
              conv.returncode == 1 and conv.stdout == "" and 'data["aws.nope"]' in conv.stderr,
              conv.stderr)

    return summary()


if __name__ == "__main__":
    sys.exit(main())
