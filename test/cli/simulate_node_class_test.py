#!/usr/bin/env python3
"""`dovetail simulate` plans with the instance types an EC2NodeClass gives (issue 18, item 6):
ephemeral storage from the class's root volume, pods from its kubelet maxPods. The same pods,
once with a class that changes nothing and once with the class's settings.

Usage: simulate_node_class_test.py DOVETAIL_BINARY. Prints one line per check and
`N passed, M failed`.
"""
import json
import os
import subprocess
import sys
import tempfile

from cli_checks import check, summary


def node_class(name, extra=""):
    return f"""apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: {name}
spec:
  role: NodeRole
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo
{extra}---
"""


def node_pool(name, node_class_name, types):
    return f"""apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: {name}
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: {node_class_name}
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: {json.dumps(types)}
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
---
"""


def pods(prefix, count, cpu, storage=None):
    out = []
    for i in range(count):
        requests = {"cpu": cpu}
        if storage:
            requests["ephemeral-storage"] = storage
        out.append(json.dumps({"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": f"{prefix}-{i}", "namespace": "default"},
                               "spec": {"containers": [{"name": "c", "image": "x",
                                                        "resources": {"requests": requests}}]}}))
    return "\n---\n".join(out) + "\n"


def simulate(binary, text):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "in.yaml")
        with open(path, "w") as f:
            f.write(text)
        r = subprocess.run([binary, "simulate", "-f", path, "--catalog", "aws", "--region",
                            "us-east-1", "-o", "json"], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return None, r.stderr
    return json.loads(r.stdout), ""


def main():
    binary = sys.argv[1]

    # A pod asking for 50Gi of ephemeral storage: the default 20Gi root volume leaves ~17Gi
    # allocatable, a 100Gi root volume 89Gi.
    big_root = """  blockDeviceMappings:
    - deviceName: /dev/xvda
      rootVolume: true
      ebs:
        volumeSize: 100Gi
        volumeType: gp3
"""
    plain, err = simulate(binary, node_class("default") + node_pool("p", "default", ["m5.large"])
                          + pods("disk", 1, "100m", "50Gi"))
    check("default root volume: exit 0", plain is not None, err)
    if plain is not None:
        check("default root volume: the 50Gi pod is unschedulable",
              [u["pod"] for u in plain["unschedulable"]] == ["default/disk-0"]
              and not plain["nodeClaims"], json.dumps(plain)[:400])
    big, err = simulate(binary, node_class("big", big_root) + node_pool("p", "big", ["m5.large"])
                        + pods("disk", 1, "100m", "50Gi"))
    check("100Gi root volume: exit 0", big is not None, err)
    if big is not None:
        check("100Gi root volume: the 50Gi pod gets a node",
              not big["unschedulable"] and len(big["nodeClaims"]) == 1
              and big["nodeClaims"][0]["pods"] == ["default/disk-0"], json.dumps(big)[:400])

    # kubelet maxPods: 8 on a type the ENI limit lets hold 234 pods (m5.4xlarge): 20 small pods
    # need 3 nodes, none with more than 8.
    capped, err = simulate(binary, node_class("capped", "  kubelet:\n    maxPods: 8\n")
                           + node_pool("p", "capped", ["m5.4xlarge"]) + pods("small", 20, "10m"))
    check("maxPods 8: exit 0", capped is not None, err)
    if capped is not None:
        sizes = sorted(len(c["pods"]) for c in capped["nodeClaims"])
        check("maxPods 8: at most 8 pods per node, every pod placed",
              sizes and max(sizes) <= 8 and sum(sizes) == 20 and not capped["unschedulable"],
              sizes)
    free, err = simulate(binary, node_class("default") + node_pool("p", "default", ["m5.4xlarge"])
                         + pods("small", 20, "10m"))
    if free is not None:
        check("without maxPods: the 20 pods share one node",
              len(free["nodeClaims"]) == 1, [len(c["pods"]) for c in free["nodeClaims"]])

    # A class whose kubelet quantities do not parse is an error naming it, not a crash.
    bad, err = simulate(binary, node_class("bad", "  kubelet:\n    kubeReserved:\n      cpu: lots\n")
                        + node_pool("p", "bad", ["m5.large"]) + pods("x", 1, "100m"))
    check("a bad kubeReserved quantity is refused with its field",
          bad is None and "kubeReserved" in err, err[:300])

    return summary()


if __name__ == "__main__":
    sys.exit(main())
