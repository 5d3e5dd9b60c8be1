#!/usr/bin/env python3
"""`dovetail controller --cloud-provider aws` against moto on a local control plane: seeds moto,
starts the controller with its environment pointing at moto, and stands in for the kubelets of
the instances it launches (the "joiner"). Used by test/system/aws_e2e_test.py and by hand
(docs/aws.md, "Running against moto").

  aws_local.py up   --dir DIR --dovetail BIN [--kubeconfig KC] [--endpoint URL] [--cluster NAME]
                    [--catalog DIR] [--no-example]
  aws_local.py down --dir DIR
  aws_local.py run  (the options of up): up, wait for Ctrl-C, down
  aws_local.py env  --dir DIR                  the controller's environment as `export` lines
  aws_local.py interrupt --dir DIR INSTANCE_ID|NODE   spot interruption warning into the queue
  aws_local.py seed --endpoint URL [--cluster NAME]   seed only (JSON of what exists)
  aws_local.py join --endpoint URL --kubeconfig KC [--cluster NAME]   the joiner in the foreground

`up` starts, each only when not given: a control plane (tools/k8s/cluster.py up --all: etcd,
kube-apiserver, kube-scheduler, kube-controller-manager, kwok) in DIR/kube unless --kubeconfig,
and moto (test/integration/aws/moto_fixture.py, .cache/venv/bin/moto_server) in DIR/moto unless
--endpoint. It seeds moto (idempotent):
  - a VPC, subnets in us-east-1a and us-east-1b and a security group, tagged
    karpenter.sh/discovery=<cluster>;
  - an AMI moto ships (x86_64 Linux; tagged karpenter.sh/discovery=<cluster> as well), used by id:
    aliases resolve through SSM parameters under /aws/service, which moto refuses to store;
  - the node role DovetailNodeRole-<cluster> (the controller creates the instance profile);
  - the SQS interruption queue <cluster>-interruption;
installs the CRDs and, unless --no-example, an EC2NodeClass and a NodePool named `default`; and
starts, detached, `dovetail controller --cloud-provider aws` (DIR/controller.log) and the joiner
(DIR/joiner.log). `down` stops what `up` started (DIR/state.json).

The joiner, every second: DescribeInstances for instances tagged
kubernetes.io/cluster/<cluster>=owned; for each running one without a Node, once its NodeClaim
(tag karpenter.sh/nodeclaim) carries the instance's provider id, it creates the Node a kubelet
started by Karpenter's user data would register: name = PrivateDnsName, spec.providerID
aws:///<zone>/<instance-id>, the NodeClaim's labels plus the kubelet's own (hostname, os, arch,
instance type, zone, region) and kwok.x-k8s.io/node=fake (kwok then keeps it Ready and runs its
pods), the NodeClaim's taints and startup taints plus karpenter.sh/unregistered:NoExecute, and
capacity/allocatable from the NodeClaim's status. An instance is joined once. When moto reports an
instance shutting-down, terminated, stopping or stopped, the joiner deletes its Node (stand-in for
the cloud node lifecycle controller). It also gives fleet instances the security groups of their
launch template, which moto 5.2.5 does not apply to CreateFleet instances (else every node would
be SecurityGroupDrift).

Python standard library, plus boto3 (from the interpreter or .cache/venv) to talk to moto.
"""
from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from e2e_common import wait_established

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b")
ACCOUNT = "123456789012"
SERVICE_CIDR = "10.96.0.0/16"  # tools/k8s/cluster.py's kube-apiserver --service-cluster-ip-range
DISCOVERY = "karpenter.sh/discovery"
LOCAL_TAG = "dovetail.sh/aws-local"  # marks what seed() created, to find it again
KWOK_LABEL = ("kwok.x-k8s.io/node", "fake")
UNREGISTERED = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
GONE_STATES = ("shutting-down", "terminated", "stopping", "stopped")


def _boto3():
    try:
        import boto3  # noqa: F401
    except ImportError:
        for site in glob.glob(str(ROOT / ".cache/venv/lib/python3*/site-packages")):
            sys.path.append(site)
        try:
            import boto3  # noqa: F401,F811
        except ImportError:
            raise SystemExit("aws_local.py: boto3 not found; run scripts/install-deps "
                             "(it installs moto[server] and boto3 into .cache/venv)")
    import boto3
    return boto3


class Aws:
    """boto3 clients of one moto endpoint (moto accepts any credentials)."""

    def __init__(self, endpoint: str, region: str = REGION):
        boto3 = _boto3()
        from botocore.config import Config
        kw = dict(endpoint_url=endpoint, region_name=region, aws_access_key_id="testing",
                  aws_secret_access_key="testing",
                  config=Config(retries={"max_attempts": 3}, connect_timeout=5, read_timeout=30))
        self.endpoint = endpoint
        self.region = region
        self.ec2 = boto3.client("ec2", **kw)
        self.iam = boto3.client("iam", **kw)
        self.sqs = boto3.client("sqs", **kw)

    def instances(self, filters: list[dict] | None = None, ids: list[str] | None = None) -> list[dict]:
        kw: dict = {}
        if filters:
            kw["Filters"] = filters
        if ids:
            kw["InstanceIds"] = ids
        out = []
        for page in self.ec2.get_paginator("describe_instances").paginate(**kw):
            for r in page["Reservations"]:
                out.extend(r["Instances"])
        return out

    def instance_state(self, instance_id: str) -> str:
        found = self.instances(ids=[instance_id])
        return found[0]["State"]["Name"] if found else "absent"


def tags_of(resource: dict) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", []) or []}


def provider_id(instance: dict) -> str:
    return f"aws:///{instance['Placement']['AvailabilityZone']}/{instance['InstanceId']}"


# ------------------------------------------------------------------------------------------ seed


@dataclass
class Seed:
    cluster: str
    vpc: str
    subnets: dict[str, str]  # zone -> subnet id
    security_group: str
    ami: str
    role: str
    queue: str
    queue_url: str


def _tag_spec(kind: str, tags: dict[str, str]) -> list[dict]:
    return [{"ResourceType": kind, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


def seed(aws: Aws, cluster: str) -> Seed:
    """Creates (or finds, when seeded before) what an EC2NodeClass of `cluster` selects."""
    ec2 = aws.ec2
    tags = {DISCOVERY: cluster, LOCAL_TAG: cluster}
    vpcs = ec2.describe_vpcs(Filters=[{"Name": f"tag:{LOCAL_TAG}", "Values": [cluster]}])["Vpcs"]
    if vpcs:
        vpc = vpcs[0]["VpcId"]
    else:
        vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16",
                             TagSpecifications=_tag_spec("vpc", {"Name": f"dovetail-{cluster}", **tags})
                             )["Vpc"]["VpcId"]
    existing = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["Subnets"]
    subnets = {s["AvailabilityZone"]: s["SubnetId"] for s in existing if LOCAL_TAG in tags_of(s)}
    for i, zone in enumerate(ZONES):
        if zone not in subnets:
            subnets[zone] = ec2.create_subnet(
                VpcId=vpc, CidrBlock=f"10.42.{i * 16}.0/20", AvailabilityZone=zone,
                TagSpecifications=_tag_spec("subnet", {"Name": f"dovetail-{cluster}-{zone}", **tags})
            )["Subnet"]["SubnetId"]
    groups = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc]},
                                                   {"Name": f"tag:{LOCAL_TAG}", "Values": [cluster]}]
                                          )["SecurityGroups"]
    if groups:
        sg = groups[0]["GroupId"]
    else:
        sg = ec2.create_security_group(GroupName=f"dovetail-{cluster}-nodes", Description="nodes",
                                       VpcId=vpc, TagSpecifications=_tag_spec("security-group", tags)
                                       )["GroupId"]
    tagged = ec2.describe_images(Filters=[{"Name": f"tag:{LOCAL_TAG}", "Values": [cluster]}])["Images"]
    if tagged:
        ami = tagged[0]["ImageId"]
    else:
        images = ec2.describe_images(Owners=["amazon"], Filters=[
            {"Name": "architecture", "Values": ["x86_64"]}])["Images"]
        linux = sorted((i for i in images if i.get("Platform") != "windows" and
                        "windows" not in i.get("Name", "").lower()), key=lambda i: i["ImageId"])
        if not linux:
            raise RuntimeError("moto lists no x86_64 Linux image")
        ami = linux[0]["ImageId"]
        ec2.create_tags(Resources=[ami], Tags=[{"Key": k, "Value": v} for k, v in tags.items()])
    role = f"DovetailNodeRole-{cluster}"
    try:
        aws.iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                    "Principal": {"Service": "ec2.amazonaws.com"}}]}))
    except aws.iam.exceptions.EntityAlreadyExistsException:
        pass
    queue = f"{cluster}-interruption"
    queue_url = aws.sqs.create_queue(QueueName=queue, Attributes={"MessageRetentionPeriod": "300"}
                                     )["QueueUrl"]
    return Seed(cluster, vpc, subnets, sg, ami, role, queue, queue_url)


def node_class_yaml(s: Seed, name: str = "default") -> str:
    return f"""apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {{name: {name}}}
spec:
  amiFamily: AL2023
  amiSelectorTerms: [{{id: {s.ami}}}]
  subnetSelectorTerms: [{{tags: {{{DISCOVERY}: {s.cluster}}}}}]
  securityGroupSelectorTerms: [{{tags: {{{DISCOVERY}: {s.cluster}}}}}]
  role: {s.role}
  tags: {{team: local}}
"""


def node_pool_yaml(name: str = "default", node_class: str = "default", extra_spec: str = "") -> str:
    """Spot and on-demand, a few general-purpose types (moto serves the whole EC2 catalog)."""
    return f"""apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: {node_class}}}
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}}
        - {{key: kubernetes.io/arch, operator: In, values: [amd64]}}
        - {{key: node.kubernetes.io/instance-type, operator: In,
           values: [m5.large, m5.xlarge, c5.large, c5.xlarge]}}
{extra_spec}"""


# ------------------------------------------------------------------------------- interruption


def spot_interruption_body(instance_id: str, region: str = REGION) -> str:
    """The EventBridge event `EC2 Spot Instance Interruption Warning` as the rule delivers it."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return json.dumps({
        "version": "0", "id": str(uuid.uuid4()), "detail-type": "EC2 Spot Instance Interruption Warning",
        "source": "aws.ec2", "account": ACCOUNT, "time": now, "region": region,
        "resources": [f"arn:aws:ec2:{region}:{ACCOUNT}:instance/{instance_id}"],
        "detail": {"instance-id": instance_id, "instance-action": "terminate"}})


def send_spot_interruption(aws: Aws, queue_url: str, instance_id: str) -> str:
    return aws.sqs.send_message(QueueUrl=queue_url,
                                MessageBody=spot_interruption_body(instance_id, aws.region))["MessageId"]


# ------------------------------------------------------------------------------------ kubectl


def default_kubectl() -> str:
    bin_dir = os.environ.get("DOVETAIL_K8S_BIN")
    if not bin_dir:
        r = subprocess.run([str(ROOT / "tools/k8s/build"), "--print-bin-dir"], capture_output=True,
                           text=True)
        bin_dir = r.stdout.strip() if r.returncode == 0 else ""
    if bin_dir and (Path(bin_dir) / "kubectl").exists():
        return str(Path(bin_dir) / "kubectl")
    return "kubectl"


class Kubectl:
    def __init__(self, kubeconfig: str, kubectl: str | None = None):
        self.kubeconfig = kubeconfig
        self.path = kubectl or default_kubectl()

    def __call__(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run([self.path, "--kubeconfig", self.kubeconfig, *args], input=stdin,
                           capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
        return r

    def items(self, resource: str) -> list[dict]:
        return json.loads(self("get", resource, "-o", "json").stdout)["items"]

    def server(self) -> str:
        return self("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}").stdout


# ------------------------------------------------------------------------------------- joiner


@dataclass
class JoinEvent:
    at: float  # time.monotonic()
    what: str  # "joined" | "deleted"
    instance_id: str
    node: str


class Joiner:
    """The kubelets of the instances Dovetail launches in moto, and the cloud node lifecycle
    controller that deletes the Nodes of terminated instances (see the module docstring)."""

    def __init__(self, aws: Aws, cluster: str, kubectl: Kubectl, log: Callable[[str], None] = print,
                 boot_seconds: float = 0.0):
        self.aws = aws
        self.boot_seconds = boot_seconds  # from first seen running to the Node (kubelet start-up)
        self._running_since: dict[str, float] = {}
        self.cluster = cluster
        self.kubectl = kubectl
        self.log = log
        self.joined: dict[str, str] = {}  # instance id -> node name
        self.events: list[JoinEvent] = []
        self.errors = 0
        self._sg_fixed: set[str] = set()
        self._lt_groups: dict[str, list[str]] = {}

    def step(self) -> None:
        instances = self.aws.instances(filters=[
            {"Name": f"tag:kubernetes.io/cluster/{self.cluster}", "Values": ["owned"]}])
        nodes = {n["spec"].get("providerID", ""): n for n in self.kubectl.items("nodes")}
        claims = None
        for inst in instances:
            iid = inst["InstanceId"]
            state = inst["State"]["Name"]
            pid = provider_id(inst)
            node = nodes.get(pid)
            if state in ("pending", "running") and "karpenter.sh/nodeclaim" in tags_of(inst):
                self._fix_security_groups(inst)
            if state == "running" and node is None and iid not in self.joined:
                since = self._running_since.setdefault(iid, time.monotonic())
                if time.monotonic() - since < self.boot_seconds:
                    continue
                if claims is None:
                    claims = {c["metadata"]["name"]: c for c in self.kubectl.items("nodeclaims")}
                claim = claims.get(tags_of(inst).get("karpenter.sh/nodeclaim", ""))
                if claim is None or claim.get("status", {}).get("providerID") != pid:
                    continue  # not launched yet as far as the NodeClaim knows
                self._join(inst, claim)
            elif state in GONE_STATES and node is not None and \
                    not node["metadata"].get("deletionTimestamp"):
                name = node["metadata"]["name"]
                self.kubectl("delete", "node", name, "--wait=false", check=False)
                self.events.append(JoinEvent(time.monotonic(), "deleted", iid, name))
                self.log(f"joiner: {iid} is {state}: deleted Node {name}")

    def _join(self, inst: dict, claim: dict) -> None:
        iid = inst["InstanceId"]
        zone = inst["Placement"]["AvailabilityZone"]
        name = inst.get("PrivateDnsName") or f"ip-{iid}.ec2.internal"
        status = claim.get("status", {})
        arch = {"x86_64": "amd64", "arm64": "arm64"}.get(inst.get("Architecture", ""), "amd64")
        labels = dict(claim["metadata"].get("labels", {}))
        labels.update({
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": labels.get("kubernetes.io/arch", arch),
            "node.kubernetes.io/instance-type": inst["InstanceType"],
            "topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": self.aws.region,
            KWOK_LABEL[0]: KWOK_LABEL[1]})
        spec = claim.get("spec", {})
        taints = [*(spec.get("taints") or []), *(spec.get("startupTaints") or []), UNREGISTERED]
        node = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels,
                         "annotations": {KWOK_LABEL[0]: KWOK_LABEL[1],
                                         "alpha.kubernetes.io/provided-node-ip":
                                             inst.get("PrivateIpAddress", "")}},
            "spec": {"providerID": provider_id(inst), "taints": taints},
            "status": {"capacity": status.get("capacity", {}),
                       "allocatable": status.get("allocatable", {})},
        }
        r = self.kubectl("create", "-f", "-", stdin=json.dumps(node), check=False)
        if r.returncode != 0 and "AlreadyExists" not in r.stderr:
            self.errors += 1
            self.log(f"joiner: creating Node {name} for {iid}: {r.stderr.strip()}")
            return
        self.joined[iid] = name
        self.events.append(JoinEvent(time.monotonic(), "joined", iid, name))
        self.log(f"joiner: {iid} ({inst['InstanceType']}, {zone}) joined as Node {name} "
                 f"for NodeClaim {claim['metadata']['name']}")

    def _fix_security_groups(self, inst: dict) -> None:
        """moto 5.2.5 gives CreateFleet instances the VPC's default group instead of their launch
        template's groups: attach the template's, as EC2 would have. The template is the newest
        one owned by the cluster for the instance's NodePool and EC2NodeClass with its image."""
        iid = inst["InstanceId"]
        if iid in self._sg_fixed:
            return
        tags = tags_of(inst)
        filters = [{"Name": f"tag:kubernetes.io/cluster/{self.cluster}", "Values": ["owned"]}]
        for key in ("karpenter.sh/nodepool", "karpenter.k8s.aws/ec2nodeclass"):
            if key in tags:
                filters.append({"Name": f"tag:{key}", "Values": [tags[key]]})
        templates = self.aws.ec2.describe_launch_templates(Filters=filters)["LaunchTemplates"]
        best = None
        for lt in sorted(templates, key=lambda t: t["CreateTime"], reverse=True):
            groups = self._lt_groups.get(lt["LaunchTemplateId"])
            if groups is None:
                data = self.aws.ec2.describe_launch_template_versions(
                    LaunchTemplateId=lt["LaunchTemplateId"], Versions=["$Latest"]
                )["LaunchTemplateVersions"][0]["LaunchTemplateData"]
                groups = [data.get("ImageId", ""), *data.get("SecurityGroupIds", [])]
                self._lt_groups[lt["LaunchTemplateId"]] = groups
            if groups[0] == inst.get("ImageId"):
                best = groups[1:]
                break
        self._sg_fixed.add(iid)
        have = sorted(g["GroupId"] for g in inst.get("SecurityGroups", []) or [])
        if best and sorted(best) != have:
            self.aws.ec2.modify_instance_attribute(InstanceId=iid, Groups=best)
            self.log(f"joiner: {iid}: security groups {have} => {best} (its launch template's)")

    def run(self, stop: threading.Event, interval: float = 1.0) -> None:
        while not stop.is_set():
            try:
                self.step()
            except Exception as e:  # noqa: BLE001 - keep standing in; the log says what failed
                self.errors += 1
                self.log(f"joiner: {type(e).__name__}: {e}")
            stop.wait(interval)

    def start(self, interval: float = 1.0) -> tuple[threading.Thread, threading.Event]:
        stop = threading.Event()
        t = threading.Thread(target=self.run, args=(stop, interval), daemon=True, name="joiner")
        t.start()
        return t, stop


# --------------------------------------------------------------------------------- controller


def controller_env(endpoint: str, cluster: str, queue: str, cluster_endpoint: str = "",
                   catalog: str | None = None) -> dict[str, str]:
    """The controller's environment for moto (docs/aws.md, Settings)."""
    env = {
        "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true", "CLUSTER_NAME": cluster,
        "INTERRUPTION_QUEUE": queue, "DOVETAIL_CLUSTER_CIDR": SERVICE_CIDR,
    }
    if cluster_endpoint:
        env["CLUSTER_ENDPOINT"] = cluster_endpoint
    if catalog:
        env["DOVETAIL_AWS_CATALOG"] = catalog
    return env


def controller_args(kubeconfig: str) -> list[str]:
    return ["controller", "--cloud-provider", "aws", "--kubeconfig", kubeconfig,
            "--disable-leader-election", "--metrics-port", "0", "--health-probe-port", "0"]


# ------------------------------------------------------------------------------------ up/down


def _state_path(d: Path) -> Path:
    return d / "state.json"


def _read_state(d: Path) -> dict:
    p = _state_path(d)
    return json.loads(p.read_text()) if p.exists() else {}


def _write_state(d: Path, state: dict) -> None:
    _state_path(d).write_text(json.dumps(state, indent=1))


def _stop_pid(pid: int, grace: float = 20) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + grace
    while time.time() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def up(args) -> int:
    d = Path(args.dir).resolve()
    d.mkdir(parents=True, exist_ok=True)
    state = _read_state(d)
    if state.get("controller") or state.get("joiner"):
        print(f"aws_local.py: {d} is up already; run `down` first", file=sys.stderr)
        return 1
    py = sys.executable
    kubeconfig = args.kubeconfig
    if not kubeconfig:
        rc = subprocess.call([py, str(ROOT / "tools/k8s/cluster.py"), "up", "--dir", str(d / "kube"),
                              "--all"])
        if rc != 0:
            return rc
        kubeconfig = str(d / "kube/kubeconfig")
        state["kube"] = str(d / "kube")
    endpoint = args.endpoint
    if not endpoint:
        rc = subprocess.call([py, str(ROOT / "test/integration/aws/moto_fixture.py"), "up", "--dir",
                              str(d / "moto"), "--moto-server", args.moto_server])
        if rc != 0:
            return rc
        endpoint = (d / "moto/endpoint").read_text().strip()
        state["moto"] = str(d / "moto")
    state.update(kubeconfig=kubeconfig, endpoint=endpoint, cluster=args.cluster)
    _write_state(d, state)

    aws = Aws(endpoint)
    s = seed(aws, args.cluster)
    (d / "seed.json").write_text(json.dumps(asdict(s), indent=1))
    kubectl = Kubectl(kubeconfig)
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "charts/dovetail/crds"))
    wait_established(lambda *a: kubectl(*a, check=False).returncode == 0,
                     ("nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"))
    if not args.no_example:
        kubectl("apply", "-f", "-", stdin=node_class_yaml(s) + "---\n" + node_pool_yaml())

    env = controller_env(endpoint, args.cluster, s.queue, kubectl.server(), args.catalog)
    (d / "env").write_text("".join(f"export {k}={v}\n" for k, v in env.items()))
    with open(d / "controller.log", "ab") as log:
        ctl = subprocess.Popen([args.dovetail, *controller_args(kubeconfig)], stdout=log,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               env={**os.environ, **env}, start_new_session=True)
    state["controller"] = ctl.pid
    _write_state(d, state)
    with open(d / "joiner.log", "ab") as log:
        joiner = subprocess.Popen([py, str(Path(__file__).resolve()), "join", "--endpoint", endpoint,
                                   "--kubeconfig", kubeconfig, "--cluster", args.cluster,
                                   "--boot-seconds", str(args.boot_seconds)],
                                  stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
    state["joiner"] = joiner.pid
    _write_state(d, state)
    print(f"""aws_local.py: up in {d}
  moto        {endpoint}
  kubeconfig  {kubeconfig}
  controller  pid {ctl.pid}, log {d / 'controller.log'}
  joiner      pid {joiner.pid}, log {d / 'joiner.log'}
  seeded      {json.dumps(asdict(s))}
Try:
  export KUBECONFIG={kubeconfig}
  kubectl create deployment inflate --image=registry.example/app:1 --replicas=3
  kubectl set resources deployment inflate --requests=cpu=500m
  kubectl get nodeclaims,nodes -w
  {sys.argv[0]} interrupt --dir {d} <instance-id or node name>
  {sys.argv[0]} down --dir {d}""")
    return 0


def down(args) -> int:
    d = Path(args.dir).resolve()
    state = _read_state(d)
    for key in ("joiner", "controller"):
        if state.get(key):
            _stop_pid(int(state[key]))
            state.pop(key)
            _write_state(d, state)
    if state.get("moto"):
        subprocess.call([sys.executable, str(ROOT / "test/integration/aws/moto_fixture.py"), "down",
                         "--dir", state.pop("moto")])
    if state.get("kube"):
        subprocess.call([sys.executable, str(ROOT / "tools/k8s/cluster.py"), "down", "--dir",
                         state.pop("kube")])
    _write_state(d, state)
    return 0


def run(args) -> int:
    rc = up(args)
    if rc != 0:
        down(args)
        return rc
    print("aws_local.py: running; Ctrl-C stops everything", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    return down(args)


def interrupt(args) -> int:
    d = Path(args.dir).resolve()
    state = _read_state(d)
    s = json.loads((d / "seed.json").read_text())
    aws = Aws(state["endpoint"])
    target = args.target
    if not target.startswith("i-"):
        node = json.loads(Kubectl(state["kubeconfig"])("get", "node", target, "-o", "json").stdout)
        target = node["spec"]["providerID"].rsplit("/", 1)[-1]
    print(send_spot_interruption(aws, s["queue_url"], target))
    return 0


def env_cmd(args) -> int:
    print((Path(args.dir).resolve() / "env").read_text(), end="")
    return 0


def seed_cmd(args) -> int:
    print(json.dumps(asdict(seed(Aws(args.endpoint), args.cluster)), indent=1))
    return 0


def join_cmd(args) -> int:
    joiner = Joiner(Aws(args.endpoint), args.cluster, Kubectl(args.kubeconfig),
                    log=lambda m: print(time.strftime("%H:%M:%S ") + m, flush=True),
                    boot_seconds=args.boot_seconds)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        joiner.run(stop, args.interval)
    except KeyboardInterrupt:
        pass
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def up_options(sp):
        sp.add_argument("--dir", required=True)
        sp.add_argument("--dovetail", required=True, help="the dovetail binary")
        sp.add_argument("--kubeconfig", help="an existing cluster (default: start one in DIR/kube)")
        sp.add_argument("--endpoint", help="an existing moto (default: start one in DIR/moto)")
        sp.add_argument("--moto-server", default=str(ROOT / ".cache/venv/bin/moto_server"))
        sp.add_argument("--cluster", default="dev")
        sp.add_argument("--catalog", default=None,
                        help="DOVETAIL_AWS_CATALOG (default: the catalog compiled into dovetail)")
        sp.add_argument("--boot-seconds", type=float, default=0.0,
                        help="how long an instance runs before the joiner registers its Node")
        sp.add_argument("--no-example", action="store_true",
                        help="do not create the EC2NodeClass and NodePool `default`")
    up_options(sub.add_parser("up"))
    up_options(sub.add_parser("run"))
    for name in ("down", "env"):
        sub.add_parser(name).add_argument("--dir", required=True)
    sp = sub.add_parser("interrupt")
    sp.add_argument("--dir", required=True)
    sp.add_argument("target", help="instance id or node name")
    sp = sub.add_parser("seed")
    sp.add_argument("--endpoint", required=True)
    sp.add_argument("--cluster", default="dev")
    sp = sub.add_parser("join")
    sp.add_argument("--endpoint", required=True)
    sp.add_argument("--kubeconfig", required=True)
    sp.add_argument("--cluster", default="dev")
    sp.add_argument("--interval", type=float, default=1.0)
    sp.add_argument("--boot-seconds", type=float, default=0.0,
                    help="how long an instance runs before its Node registers")
    args = p.parse_args()
    return {"up": up, "down": down, "run": run, "interrupt": interrupt, "env": env_cmd,
            "seed": seed_cmd, "join": join_cmd}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
