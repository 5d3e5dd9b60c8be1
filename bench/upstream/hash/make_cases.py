#!/usr/bin/env python3
"""Writes cases.json: the NodePools and EC2NodeClasses whose drift hashes bench/upstream/hash
computes with upstream's own Hash() functions. Deterministic (fixed seed): every hashed field of
a NodePool's template and of an EC2NodeClass's spec, alone and combined, the ignored fields, zero
values next to absent ones, permuted lists (hashed as sets), quantity spellings, and CA bundles.

    python3 make_cases.py > cases.json
"""
from __future__ import annotations

import copy
import json
import random

rng = random.Random(18)


def pool(name: str, template: dict, **outside) -> dict:
    spec = {"template": template, **outside}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def base_template() -> dict:
    return {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                     "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}}


def node_pools() -> list[dict]:
    out = []
    add = lambda name, t, **o: out.append(pool(f"np-{len(out):02d}-{name}", t, **o))  # noqa: E731
    add("base", base_template())
    # Ignored: requirements, and everything outside the template.
    t = base_template()
    t["spec"]["requirements"] = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                                 {"key": "node.kubernetes.io/instance-type", "operator": "In",
                                  "values": ["m5.large", "c5.large"], "minValues": 2}]
    add("requirements-ignored", t)
    add("outside-ignored", base_template(), weight=50, limits={"cpu": "1000"},
        disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s",
                    "budgets": [{"nodes": "10%"}, {"nodes": "0", "schedule": "@daily", "duration": "10m"}]})
    # nodeClassRef.
    for group, kind, name in (("karpenter.k8s.aws", "EC2NodeClass", "gpu"), ("karpenter.kwok.sh", "KWOKNodeClass", "default"),
                              ("", "", "default")):
        t = base_template()
        t["spec"]["nodeClassRef"] = {k: v for k, v in (("group", group), ("kind", kind), ("name", name)) if v}
        add(f"ref-{kind or 'bare'}-{name}", t)
    # Labels and annotations: absent, empty, one, several (map order irrelevant).
    for i, meta in enumerate([{"labels": {}}, {"annotations": {}}, {"labels": {"team": "a"}},
                              {"labels": {"team": "a", "tier": "web"}}, {"labels": {"tier": "web", "team": "a"}},
                              {"labels": {"team": ""}}, {"annotations": {"example.com/owner": "sre"}},
                              {"labels": {"team": "b"}, "annotations": {"a": "1", "b": "2"}}]):
        t = base_template()
        t["metadata"] = meta
        add(f"meta-{i}", t)
    # Taints and startup taints: order, effects, empty value, both lists.
    taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
              {"key": "spot", "effect": "PreferNoSchedule"},
              {"key": "example.com/x", "value": "", "effect": "NoExecute"}]
    for i, ts in enumerate([taints[:1], taints[:2], list(reversed(taints[:2])), taints, [], [taints[2]]]):
        t = base_template()
        t["spec"]["taints"] = ts
        add(f"taints-{i}", t)
    for i, ts in enumerate([taints[:1], list(reversed(taints)), []]):
        t = base_template()
        t["spec"]["startupTaints"] = ts
        add(f"startup-{i}", t)
    t = base_template()
    t["spec"]["taints"] = taints[:1]
    t["spec"]["startupTaints"] = taints[:1]
    add("taints-and-startup", t)
    # expireAfter and terminationGracePeriod.
    for v in ("720h", "Never", "1h30m", "90m", "0s"):
        t = base_template()
        t["spec"]["expireAfter"] = v
        add(f"expire-{v}", t)
    for v in ("30s", "1h", "0s", "48h"):
        t = base_template()
        t["spec"]["terminationGracePeriod"] = v
        add(f"tgp-{v}", t)
    # Random combinations.
    keys = ["team", "tier", "env", "app", "cost-center"]
    while len(out) < 64:
        t = base_template()
        if rng.random() < 0.7:
            t["metadata"] = {"labels": {k: rng.choice(["a", "b", "c", ""]) for k in rng.sample(keys, rng.randint(0, 3))}}
            if rng.random() < 0.4:
                t["metadata"]["annotations"] = {f"example.com/{k}": str(rng.randint(0, 9)) for k in rng.sample(keys, 2)}
        if rng.random() < 0.6:
            t["spec"]["taints"] = rng.sample(taints, rng.randint(1, 3))
        if rng.random() < 0.3:
            t["spec"]["startupTaints"] = rng.sample(taints, 1)
        if rng.random() < 0.5:
            t["spec"]["expireAfter"] = rng.choice(["24h", "168h", "Never", "720h"])
        if rng.random() < 0.4:
            t["spec"]["terminationGracePeriod"] = rng.choice(["5m", "1h", "24h"])
        if rng.random() < 0.3:
            t["spec"]["nodeClassRef"]["name"] = rng.choice(["default", "gpu", "arm"])
        add("mix", t)
    return out


def node_class(name: str, spec: dict) -> dict:
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name}, "spec": spec}


def base_spec() -> dict:
    return {"role": "KarpenterNodeRole-test", "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}]}


def node_classes() -> list[dict]:
    out = []
    add = lambda name, spec, ca=None: out.append({**node_class(f"nc-{len(out):02d}-{name}", spec), **({"caBundle": ca} if ca is not None else {})})  # noqa: E731
    add("base", base_spec())
    add("ca-empty", base_spec(), "")
    add("ca-value", base_spec(), "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==")
    # Ignored fields: selector terms, ipPrefixCount, capacity reservations, amiFamily's literal.
    s = base_spec()
    s["subnetSelectorTerms"] = [{"id": "subnet-123"}, {"tags": {"Name": "*private*"}}]
    s["securityGroupSelectorTerms"] = [{"name": "nodes"}]
    s["capacityReservationSelectorTerms"] = [{"id": "cr-123"}]
    s["ipPrefixCount"] = 4
    add("selectors-ignored", s)
    # The AMI family: from the alias, from amiFamily, custom.
    for alias, family in (("al2@latest", None), ("bottlerocket@latest", None), ("al2023@v20240807", None),
                          (None, "AL2023"), (None, "Bottlerocket"), (None, "Custom"), (None, "AL2")):
        s = base_spec()
        if alias:
            s["amiSelectorTerms"] = [{"alias": alias}]
        else:
            s["amiSelectorTerms"] = [{"id": "ami-0123456789abcdef0"}]
            s["amiFamily"] = family
        add(f"family-{alias or family}", s)
    # role vs instanceProfile, tags, userData, context, monitoring, public IP.
    s = base_spec(); s.pop("role"); s["instanceProfile"] = "KarpenterNodeInstanceProfile"; add("instance-profile", s)
    for i, tags in enumerate([{"team": "a"}, {"team": "a", "env": "prod"}, {"env": "prod", "team": "a"}, {}]):
        s = base_spec(); s["tags"] = tags; add(f"tags-{i}", s)
    for i, ud in enumerate(["#!/bin/bash\necho hi\n", "", "[settings.kubernetes]\nmax-pods = 10\n"]):
        s = base_spec(); s["userData"] = ud; add(f"userdata-{i}", s)
    for key, values in (("context", ["arn:aws:ec2:us-east-1:1:launch-template/lt-1"]),
                        ("detailedMonitoring", [True, False]), ("associatePublicIPAddress", [True, False])):
        for v in values:
            s = base_spec(); s[key] = v; add(f"{key}-{v}", s)
    # kubelet.
    kubelets = [{"maxPods": 110}, {"maxPods": 0}, {"podsPerCore": 10}, {"clusterDNS": ["10.0.0.10"]},
                {"clusterDNS": ["10.0.0.10", "10.0.0.11"]}, {"clusterDNS": ["10.0.0.11", "10.0.0.10"]},
                {"systemReserved": {"cpu": "100m", "memory": "100Mi"}},
                {"kubeReserved": {"cpu": "200m", "ephemeral-storage": "1Gi"}},
                {"evictionHard": {"memory.available": "5%"}},
                {"evictionSoft": {"memory.available": "10%"}, "evictionSoftGracePeriod": {"memory.available": "1m"}},
                {"evictionMaxPodGracePeriod": 60}, {"imageGCHighThresholdPercent": 85, "imageGCLowThresholdPercent": 80},
                {"cpuCFSQuota": True}, {"cpuCFSQuota": False}, {}]
    for i, k in enumerate(kubelets):
        s = base_spec(); s["kubelet"] = k; add(f"kubelet-{i}", s)
    # Block devices: sizes spelled differently, root volume, several devices (order).
    devices = [{"deviceName": "/dev/xvda", "rootVolume": True,
                "ebs": {"volumeSize": "100Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}},
               {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "200Gi", "volumeType": "io2", "iops": 3000}},
               {"deviceName": "/dev/xvdc", "ebs": {"volumeSize": "50G", "throughput": 250, "kmsKeyID": "k",
                                                  "snapshotID": "snap-1", "volumeInitializationRate": 200}}]
    for i, bdm in enumerate([devices[:1], devices[:2], list(reversed(devices[:2])), devices,
                             [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "107374182400"}}],
                             [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi"}}]]):
        s = base_spec(); s["blockDeviceMappings"] = bdm; add(f"bdm-{i}", s)
    s = base_spec(); s["instanceStorePolicy"] = "RAID0"; add("raid0", s)
    for i, md in enumerate([{"httpEndpoint": "enabled", "httpPutResponseHopLimit": 1, "httpTokens": "required"},
                            {"httpEndpoint": "disabled"}, {"httpPutResponseHopLimit": 2}]):
        s = base_spec(); s["metadataOptions"] = md; add(f"metadata-{i}", s)
    s = base_spec(); s["networkInterfaces"] = [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                                              {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "efa-only"}]
    add("network-interfaces", s)
    s = base_spec(); s["connectionTracking"] = {"tcpEstablishedTimeout": 600, "udpStreamTimeout": 60}; add("conntrack", s)
    s = base_spec(); s["cpuOptions"] = {"nestedVirtualization": "enabled"}; add("cpu-options", s)
    s = base_spec(); s["placementGroupSelector"] = {"name": "pg-1"}; add("placement-group", s)
    # Combinations with a CA.
    for i in range(6):
        s = base_spec()
        s["tags"] = {"team": rng.choice(["a", "b"]), "n": str(i)}
        s["kubelet"] = copy.deepcopy(rng.choice(kubelets))
        s["blockDeviceMappings"] = rng.sample(devices, rng.randint(1, 2))
        add("mix", s, rng.choice([None, "", "Y2E="]))
    # As the API server stores them: the CRD's metadataOptions defaults filled in (what
    # `dovetail hash` hashes after applying them).
    stored = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": 1,
              "httpTokens": "required"}
    for i, ca in enumerate([None, "", "Y2E=", "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="]):
        s = base_spec(); s["metadataOptions"] = dict(stored)
        if i % 2:
            s["tags"] = {"team": "a"}
        add(f"stored-{i}", s, ca)
    return out


if __name__ == "__main__":
    print(json.dumps({
        "comment": "Written by make_cases.py; bench/upstream/hash hashes them with upstream's Hash().",
        "nodePools": node_pools(), "ec2NodeClasses": node_classes()}, indent=1))
