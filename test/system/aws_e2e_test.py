#!/usr/bin/env python3
"""E2E test of `dovetail controller --cloud-provider aws` against moto, on its own full local
control plane (kube-apiserver, etcd, kube-scheduler, kube-controller-manager, kwok) and its own
moto server. test/system/aws_local.py seeds moto (VPC, subnets in two zones, security group, AMI,
node role, SQS interruption queue) and stands in for the kubelets: each instance Dovetail launches
is joined as a Node with the instance's providerID and kwok keeps it Ready (after a 5 s "boot").

  1. The EC2NodeClass resolves Ready (subnets, security groups, AMI by id, instance profile).
  2. Pending pods (a Deployment spread over the two zones) => NodeClaims => CreateFleet (instant
     fleets in moto tagged for the NodeClaim) => instances with the ownership tags
     (karpenter.sh/nodepool, karpenter.sh/nodeclaim, kubernetes.io/cluster/<cluster>=owned,
     karpenter.k8s.aws/ec2nodeclass) => Nodes joined => NodeClaims Launched/Registered/Initialized,
     not drifted => every pod Running on them.
  3. At t0 an EventBridge "EC2 Spot Instance Interruption Warning" for one node's instance is sent
     to the SQS queue. Within 120 s of t0: a replacement NodeClaim is Initialized and its Node
     Ready BEFORE the interrupted instance leaves the running state in moto (replace first, then
     drain); the instance is terminated, its NodeClaim and Node are gone, every pod runs on other
     nodes; the message is consumed and a SpotInterrupted event recorded.
  3b. Twice more, the controller is killed with SIGKILL during an interruption: right after the
     message was consumed, and after the replacement NodeClaim was created. The restarted
     controller resumes the command recorded on the NodeClaim: the node is drained before its
     instance stops, and the NodeClaim and Node are gone, within 120 s of the warning.
  4. Instances in moto without ownership tags (none at all; the cluster tag alone) are never
     touched (still running, never joined).
  4b. The controller kills itself with SIGKILL at the crash point `nodeclaim-launched`
     (DOVETAIL_CRASH_POINT): CreateFleet returned, the NodeClaim's status does not name the
     instance yet. Restarted, its launch finds the instance tagged with the NodeClaim's name and
     UID: the NodeClaim ends with that instance, no second one is launched for it, and its pod
     runs.
  5. Deleting the NodePool terminates its instances; SIGTERM stops the controller (exit 0).

Usage: aws_e2e_test.py DOVETAIL_BINARY [CATALOG_DIR]. Needs KUBECONFIG, DOVETAIL_K8S_BIN (set by
dovetail_kube_test) and DOVETAIL_MOTO_DIR (the moto fixture). Prints `N passed, M failed` last;
exits non-zero if anything failed.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from aws_local import Aws, Joiner, Kubectl, node_class_yaml, node_pool_yaml, provider_id, seed, \
    send_spot_interruption, tags_of, controller_env
from e2e_common import KUBECONFIG, KUBECTL, ControllerProcess, MetricsScraper, Tally, apply_crds, check, \
    check_upstream_families, condition, deployment, get, kubectl, wait_established, wait_for, zone_spread

RUN_ID = uuid.uuid4().hex[:6]
CLUSTER = f"e2e-{RUN_ID}"
NS = f"dovetail-aws-{RUN_ID}"
POOL = f"aws-{RUN_ID}"
NODE_CLASS = f"aws-{RUN_ID}"
REPLICAS = 6
BOOT_SECONDS = 5.0  # instance running => Node registered
INTERRUPTION_DEADLINE = 120.0
# Upstream's AWS provider families (the rest are disruption_e2e_test's), scraped during the run.
AWS_FAMILIES = ("aws_sdk_go", "karpenter_cloudprovider_instance", "karpenter_ec2nodeclasses",
                "karpenter_interruption", "operator_ec2nodeclass")
AWS_NOT_SERVED: dict[str, str] = {}
AWS_NO_SAMPLES = {
    "karpenter_cloudprovider_instance_launch_failures_total": "moto launches every request",
    "karpenter_cloudprovider_instance_termination_failures_total": "moto terminates every request",
    "operator_ec2nodeclass_status_condition_transition_seconds":
        "the class's conditions change once, from none (no earlier status to time)",
    "operator_ec2nodeclass_termination_*": "the EC2NodeClass is not deleted in this run",
    "karpenter_interruption_instance_status_unhealthy_total":
        "moto reports every instance healthy (aws_instance_status_integration_test counts them)",
}

DEPLOYMENT = deployment("app", NS, REPLICAS, "cpu: 500m, memory: 256Mi", app="aws-e2e",
                        spec=zone_spread("aws-e2e"))

# One pod that fits no node of the Deployment's: it needs a NodeClaim of its own (an empty
# xlarge; the pool's largest types have 4 vCPUs).
BIG_POD = deployment("big", NS, 1, "cpu: 3500m, memory: 256Mi", app="aws-e2e-big")

# No consolidation: the only disruption in this test is the interruption.
DISRUPTION = """  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: Never
"""


def claims() -> list[dict]:
    return [c for c in get("nodeclaims")["items"]
            if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == POOL]


def nodes() -> dict[str, dict]:
    return {n["metadata"]["name"]: n for n in get("nodes")["items"]}


def app_pods() -> list[dict]:
    return [p for p in get("pods", "-n", NS)["items"] if not p["metadata"].get("deletionTimestamp")]


def all_running(avoid: str = "") -> bool:
    pods = app_pods()
    return len(pods) == REPLICAS and all(
        p["status"].get("phase") == "Running" and p["spec"].get("nodeName") not in ("", None, avoid)
        for p in pods)


def node_ready(node: dict | None) -> bool:
    return node is not None and condition(node, "Ready") == "True" and \
        not node["metadata"].get("deletionTimestamp")


def instance_id(claim: dict) -> str:
    return claim.get("status", {}).get("providerID", "").rsplit("/", 1)[-1]


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    binary = sys.argv[1]
    catalog = sys.argv[2] if len(sys.argv) == 3 else None
    moto_dir = os.environ.get("DOVETAIL_MOTO_DIR", "")
    endpoint = (Path(moto_dir) / "endpoint").read_text().strip() if moto_dir else ""
    if not endpoint:
        print("DOVETAIL_MOTO_DIR/endpoint missing (run under ctest)")
        return 2

    t_start = time.monotonic()
    aws = Aws(endpoint)
    s = seed(aws, CLUSTER)
    print(f"moto {endpoint}, cluster {CLUSTER}: {s}")
    # Instances that are not Dovetail's: no tags at all, and the cluster tag without a NodePool.
    foreign = {}
    for name, tags in (("untagged", {}), ("cluster-tag-only", {f"kubernetes.io/cluster/{CLUSTER}": "owned"})):
        kw = {"TagSpecifications": [{"ResourceType": "instance",
                                     "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]} if tags else {}
        r = aws.ec2.run_instances(ImageId=s.ami, InstanceType="m5.large", MinCount=1, MaxCount=1,
                                  SubnetId=s.subnets["us-east-1a"], **kw)
        foreign[name] = r["Instances"][0]["InstanceId"]

    apply_crds()
    wait_established(lambda *a: kubectl(*a, check_rc=False).returncode == 0, ("ec2nodeclasses.karpenter.k8s.aws",))
    kubectl("create", "namespace", NS)
    kubectl("apply", "-f", "-", stdin=node_class_yaml(s, NODE_CLASS))
    kubectl("apply", "-f", "-", stdin=node_pool_yaml(POOL, NODE_CLASS, DISRUPTION))

    server = Kubectl(KUBECONFIG, KUBECTL).server()
    os.environ.update(controller_env(endpoint, CLUSTER, s.queue, server, catalog))
    # The offering gauges too (off by default: a series per offering), so that they are checked.
    os.environ["DOVETAIL_INSTANCE_TYPE_METRICS"] = "true"
    log_dir = Path(os.environ.get("DOVETAIL_E2E_LOG_DIR", "/tmp"))
    log_path = log_dir / f"dovetail-aws-controller-{RUN_ID}.log"
    joiner_log = open(log_dir / f"dovetail-aws-joiner-{RUN_ID}.log", "w")
    process = ControllerProcess(binary, log_path, ["--cloud-provider", "aws"])
    controller = process.start()
    print(f"controller pid {controller.pid}, log {log_path}, joiner log {joiner_log.name}")
    scraper = MetricsScraper(log_path).start()
    joiner = Joiner(aws, CLUSTER, Kubectl(KUBECONFIG, KUBECTL), boot_seconds=BOOT_SECONDS,
                    log=lambda m: (joiner_log.write(f"{time.strftime('%H:%M:%S')} {m}\n"), joiner_log.flush()))
    _, stop_joiner = joiner.start(interval=0.5)
    try:
        return run(aws, s, foreign, process, joiner, scraper, t_start)
    finally:
        scraper.stop()
        stop_joiner.set()
        if process.proc is not None:
            print(f"controller stopped (exit {process.stop()})")
        joiner_log.close()
        if Tally.failed:
            print("--- controller log (tail)")
            print(process.tail(60))


def run(aws: Aws, s, foreign: dict[str, str], process: ControllerProcess, joiner: Joiner,
        scraper: MetricsScraper, t_start: float) -> int:
    controller = process.proc

    # 1. The EC2NodeClass.
    def class_ready() -> bool:
        return condition(get("ec2nodeclass", NODE_CLASS), "Ready") == "True"
    if not check("the EC2NodeClass resolves Ready", wait_for("EC2NodeClass Ready", class_ready, controller, 60)):
        print("      ", get("ec2nodeclass", NODE_CLASS).get("status"))
        return finish()
    nc = get("ec2nodeclass", NODE_CLASS)["status"]
    check("its subnets are the two seeded zones", sorted(x["zone"] for x in nc.get("subnets", [])) ==
          sorted(s.subnets), str(nc.get("subnets")))
    check("its AMI is the selected id", [a["id"] for a in nc.get("amis", [])] == [s.ami], str(nc.get("amis")))
    check("it has an instance profile", bool(nc.get("instanceProfile")))

    # 2. Pending pods => CreateFleet => Nodes => pods Running.
    t1 = time.monotonic()
    kubectl("apply", "-f", "-", stdin=DEPLOYMENT)
    if check("every pod of the Deployment runs on joined instances",
             wait_for("all pods Running", all_running, controller, 120)):
        print(f"      ({time.monotonic() - t1:.1f} s from apply to all Running)")
    else:
        print("      ", kubectl("get", "nodeclaims,nodes", "-o", "wide").stdout)
        return finish()
    cs = claims()
    check("NodeClaims were created for the NodePool", len(cs) >= 2, str(len(cs)))
    by_node = nodes()
    fleets = aws.ec2.describe_fleets()["Fleets"]
    for c in cs:
        name = c["metadata"]["name"]
        for cond in ("Launched", "Registered", "Initialized"):
            check(f"{name} {cond}=True", condition(c, cond) == "True", condition(c, cond))
        check(f"{name} is not drifted", condition(c, "Drifted") != "True",
              str([x for x in c["status"].get("conditions") or [] if x["type"] == "Drifted"]))
        iid = instance_id(c)
        found = aws.instances(ids=[iid]) if iid.startswith("i-") else []
        if not check(f"{name}'s instance {iid} exists in moto", len(found) == 1):
            continue
        inst = found[0]
        tags = tags_of(inst)
        want = {"karpenter.sh/nodepool": POOL, "karpenter.sh/nodeclaim": name,
                f"kubernetes.io/cluster/{CLUSTER}": "owned", "karpenter.k8s.aws/ec2nodeclass": NODE_CLASS}
        check(f"{iid} carries the ownership tags", all(tags.get(k) == v for k, v in want.items()),
              str(tags))
        check(f"{iid} was launched by an instant CreateFleet for {name}",
              any(f.get("Type") == "instant" and tags_of(f).get("karpenter.sh/nodeclaim") == name and
                  any(iid in i.get("InstanceIds", []) for i in f.get("Instances", [])) for f in fleets))
        labels = c["metadata"].get("labels", {})
        check(f"{iid} is {labels.get('karpenter.sh/capacity-type')} as the NodeClaim says",
              (inst.get("InstanceLifecycle") == "spot") == (labels.get("karpenter.sh/capacity-type") == "spot"))
        check(f"{iid} runs the class's AMI in a seeded subnet",
              inst["ImageId"] == s.ami and inst["SubnetId"] in s.subnets.values())
        node = by_node.get(c["status"].get("nodeName", ""))
        if not check(f"{name} has a Ready Node", node_ready(node)):
            continue
        check(f"{name}'s Node has the instance's providerID", node["spec"].get("providerID") == provider_id(inst))
        taints = [t["key"] for t in node["spec"].get("taints", []) or []]
        check(f"{name}'s Node has no unregistered taint", "karpenter.sh/unregistered" not in taints, str(taints))
    zones = {c["metadata"]["labels"].get("topology.kubernetes.io/zone") for c in cs}
    check("the NodeClaims span both zones", zones == set(s.subnets), str(zones))

    # 3. Spot interruption.
    spot = [c for c in cs if c["metadata"]["labels"].get("karpenter.sh/capacity-type") == "spot"]
    if not check("a NodeClaim runs on spot capacity", bool(spot)):
        return finish()
    victim = sorted(spot, key=lambda c: c["metadata"]["name"])[0]
    victim_name, victim_iid = victim["metadata"]["name"], instance_id(victim)
    victim_node = victim["status"]["nodeName"]
    before = {c["metadata"]["name"] for c in cs}
    moved_pods = {p["metadata"]["name"] for p in app_pods() if p["spec"].get("nodeName") == victim_node}
    print(f"      interrupting {victim_iid} (NodeClaim {victim_name}, Node {victim_node}, "
          f"{len(moved_pods)} pods)")
    t0 = time.monotonic()
    send_spot_interruption(aws, s.queue_url, victim_iid)
    t_left = t_repl = t_moved = t_gone = None
    repl_name = ""
    while time.monotonic() - t0 < INTERRUPTION_DEADLINE:
        if controller.poll() is not None:
            print(f"controller exited with {controller.returncode}")
            break
        now = time.monotonic() - t0
        if t_left is None and aws.instance_state(victim_iid) != "running":
            t_left = now
        if t_repl is None:
            ns = nodes()
            for c in claims():
                if c["metadata"]["name"] not in before and condition(c, "Initialized") == "True" and \
                        node_ready(ns.get(c.get("status", {}).get("nodeName", ""))):
                    t_repl, repl_name = now, c["metadata"]["name"]
        if t_moved is None and all_running(avoid=victim_node):
            t_moved = now
        if t_gone is None and victim_name not in {c["metadata"]["name"] for c in claims()} and \
                victim_node not in nodes():
            t_gone = now
        if None not in (t_left, t_repl, t_moved, t_gone):
            break
        time.sleep(0.25)
    fmt = lambda t: "never" if t is None else f"{t:.1f} s"  # noqa: E731
    print(f"      after t0: instance left running {fmt(t_left)}, replacement {repl_name or '-'} "
          f"Initialized and Ready {fmt(t_repl)}, pods moved {fmt(t_moved)}, "
          f"NodeClaim and Node gone {fmt(t_gone)}")
    check(f"a replacement NodeClaim is Initialized and its Node Ready within {INTERRUPTION_DEADLINE:.0f} s",
          t_repl is not None)
    check("the replacement is Ready before the interrupted instance leaves running "
          "(replace first, then drain)",
          t_repl is not None and (t_left is None or t_repl < t_left),
          f"instance left running at {fmt(t_left)}, replacement Ready at {fmt(t_repl)}")
    check(f"the interrupted instance is terminated within {INTERRUPTION_DEADLINE:.0f} s",
          t_left is not None and aws.instance_state(victim_iid) in ("shutting-down", "terminated"),
          aws.instance_state(victim_iid))
    check(f"every pod runs on another node within {INTERRUPTION_DEADLINE:.0f} s", t_moved is not None)
    check(f"the interrupted NodeClaim and its Node are gone within {INTERRUPTION_DEADLINE:.0f} s",
          t_gone is not None)
    if repl_name:
        repl = next((c for c in claims() if c["metadata"]["name"] == repl_name), None)
        if repl is not None:
            zone = repl["metadata"]["labels"].get("topology.kubernetes.io/zone")
            ct = repl["metadata"]["labels"].get("karpenter.sh/capacity-type")
            itype = repl["metadata"]["labels"].get("node.kubernetes.io/instance-type")
            vlabels = victim["metadata"]["labels"]
            print(f"      replacement: {itype} {ct} in {zone}")
            check("the replacement avoids the interrupted spot offering (marked unavailable)",
                  (itype, ct, zone) != (vlabels.get("node.kubernetes.io/instance-type"), "spot",
                                        vlabels.get("topology.kubernetes.io/zone")))
    attrs = aws.sqs.get_queue_attributes(QueueUrl=s.queue_url, AttributeNames=[
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    check("the interruption message was consumed (queue empty)",
          attrs["ApproximateNumberOfMessages"] == "0" and attrs["ApproximateNumberOfMessagesNotVisible"] == "0",
          str(attrs))

    def spot_event() -> bool:
        return any(e.get("reason") == "SpotInterrupted" for e in get("events.events.k8s.io", "-A")["items"])
    check("a SpotInterrupted event is recorded", wait_for("the SpotInterrupted event", spot_event, controller, 20))

    # 3b. The interruption survives kill -9: the command lives on the NodeClaim, not only in the
    #     controller's memory. Once right after the message is consumed, once after the
    #     replacement NodeClaim was created.
    for when in ("the message is consumed", "the replacement is created"):
        controller = interrupt_and_kill(aws, s, process, when)
        if controller is None:
            return finish()

    # 4. Foreign instances.
    for what, iid in foreign.items():
        check(f"the {what} instance {iid} is never touched",
              aws.instance_state(iid) == "running" and iid not in joiner.joined, aws.instance_state(iid))
    check("the joiner hit no errors", joiner.errors == 0, str(joiner.errors))

    # 4b. kill -9 between CreateFleet's answer and the NodeClaim's status write.
    controller = crash_after_launch(aws, process)
    if controller is None:
        return finish()

    # 5. Deleting the NodePool terminates its instances.
    kubectl("delete", "deployment", "app", "big", "-n", NS, "--wait=false")
    owned = [i["InstanceId"] for i in aws.instances(filters=[
        {"Name": "tag:karpenter.sh/nodepool", "Values": [POOL]},
        {"Name": "instance-state-name", "Values": ["pending", "running"]}])]
    kubectl("delete", "nodepool", POOL, "--wait=false")

    def terminated() -> bool:
        return not claims() and all(aws.instance_state(i) in ("shutting-down", "terminated") for i in owned)
    check("deleting the NodePool terminates its instances and removes its NodeClaims",
          wait_for("the pool's instances terminated", terminated, controller, 90),
          str([(i, aws.instance_state(i)) for i in owned]))
    for what, iid in foreign.items():
        check(f"the {what} instance still runs after the pool is gone", aws.instance_state(iid) == "running")
    scraper.stop()
    check_upstream_families(scraper, AWS_NOT_SERVED, AWS_NO_SAMPLES, only=AWS_FAMILIES)
    rc = process.stop()
    process.proc = None
    check("SIGTERM stops the controller with exit status 0", rc == 0, str(rc))
    print(f"      total {time.monotonic() - t_start:.0f} s")
    return finish()


def interrupt_and_kill(aws: Aws, s, process: ControllerProcess, when: str):
    """Sends a spot interruption for a node with pods, kill -9s the controller once `when`
    happened and restarts it; the restarted controller must drain the node (no app pod left on
    it) before its instance leaves running, and remove the NodeClaim and Node, within the notice.
    Returns the new controller process, or None when the test cannot go on."""
    cs = [c for c in claims() if not c["metadata"].get("deletionTimestamp") and
          c.get("status", {}).get("nodeName")]
    pods_by_node: dict[str, int] = {}
    for p in app_pods():
        pods_by_node[p["spec"].get("nodeName", "")] = pods_by_node.get(p["spec"].get("nodeName", ""), 0) + 1
    with_pods = [c for c in cs if pods_by_node.get(c["status"]["nodeName"], 0) > 0]
    if not check(f"kill -9 after {when}: a NodeClaim with pods to interrupt", bool(with_pods)):
        return None
    victim = sorted(with_pods, key=lambda c: (c["metadata"]["labels"].get("karpenter.sh/capacity-type") != "spot",
                                              c["metadata"]["name"]))[0]
    name, iid, node = victim["metadata"]["name"], instance_id(victim), victim["status"]["nodeName"]
    before = {c["metadata"]["name"] for c in claims()}
    print(f"      interrupting {iid} (NodeClaim {name}, {pods_by_node[node]} pods); kill -9 after {when}")
    t0 = time.monotonic()
    send_spot_interruption(aws, s.queue_url, iid)

    def recorded() -> bool:
        c = next((c for c in claims() if c["metadata"]["name"] == name), None)
        return c is not None and "dovetail.sh/involuntary-disruption" in (c["metadata"].get("annotations") or {})

    def consumed() -> bool:
        attrs = aws.sqs.get_queue_attributes(QueueUrl=s.queue_url, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        return attrs["ApproximateNumberOfMessages"] == "0" and attrs["ApproximateNumberOfMessagesNotVisible"] == "0"

    def replacement_created() -> bool:
        return any(c["metadata"]["name"] not in before for c in claims())

    ready = (lambda: consumed() and recorded()) if when.startswith("the message") else replacement_created
    if not check(f"{when} (and the command is recorded on the NodeClaim) within 60 s",
                 wait_for(when, ready, process, 60) and recorded()):
        return None
    controller = process.kill9_and_restart()
    print(f"      killed with SIGKILL {time.monotonic() - t0:.1f} s after the warning; "
          f"restarted: pid {controller.pid}")
    t_drained = t_left = t_gone = None
    while time.monotonic() - t0 < INTERRUPTION_DEADLINE:
        if controller.poll() is not None:
            print(f"controller exited with {controller.returncode}")
            break
        now = time.monotonic() - t0
        if t_left is None and aws.instance_state(iid) != "running":
            t_left = now
        if t_drained is None and not any(p["spec"].get("nodeName") == node
                                         for p in get("pods", "-n", NS)["items"]):
            t_drained = now
        if t_gone is None and name not in {c["metadata"]["name"] for c in claims()} and node not in nodes():
            t_gone = now
        if None not in (t_drained, t_left, t_gone):
            break
        time.sleep(0.25)
    fmt = lambda t: "never" if t is None else f"{t:.1f} s"  # noqa: E731
    print(f"      after the warning: drained {fmt(t_drained)}, instance left running {fmt(t_left)}, "
          f"NodeClaim and Node gone {fmt(t_gone)}")
    check(f"kill -9 after {when}: the restarted controller drains the node before its instance "
          f"stops, within {INTERRUPTION_DEADLINE:.0f} s of the warning",
          t_drained is not None and t_left is not None and t_drained <= t_left,
          f"drained {fmt(t_drained)}, instance left running {fmt(t_left)}")
    check(f"kill -9 after {when}: the NodeClaim and its Node are gone within the notice", t_gone is not None)
    check(f"kill -9 after {when}: every pod runs again",
          wait_for("all pods Running", lambda: all_running(avoid=node), controller, 60))
    return controller


def crash_after_launch(aws: Aws, process: ControllerProcess):
    """Restarts the controller with DOVETAIL_CRASH_POINT=nodeclaim-launched, creates a pod that
    needs a new node, and expects the controller to die by SIGKILL once that NodeClaim's instance
    is launched, before its status names it; restarted without the crash point, the controller
    must finish the launch with that same instance. Returns the new controller process, or None
    when the test cannot go on."""
    before = {c["metadata"]["name"] for c in claims()}
    os.environ["DOVETAIL_CRASH_POINT"] = "nodeclaim-launched"
    process.kill9_and_restart()
    del os.environ["DOVETAIL_CRASH_POINT"]
    kubectl("apply", "-f", "-", stdin=BIG_POD)
    try:
        rc = process.proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        rc = None
    if not check("crash point nodeclaim-launched: the controller kills itself with SIGKILL after a launch",
                 rc == -9, str(rc)):
        return None
    new = [c for c in claims() if c["metadata"]["name"] not in before]
    if not check("crash point nodeclaim-launched: one new NodeClaim, its status without the instance",
                 len(new) == 1 and not new[0].get("status", {}).get("providerID"),
                 str([(c["metadata"]["name"], c.get("status", {}).get("providerID")) for c in new])):
        return None
    name = new[0]["metadata"]["name"]
    tagged = lambda: aws.instances(filters=[{"Name": "tag:karpenter.sh/nodeclaim", "Values": [name]}])  # noqa: E731
    launched = tagged()
    if not check(f"crash point nodeclaim-launched: {name} has one instance in moto, tagged with its UID",
                 len(launched) == 1 and tags_of(launched[0]).get("dovetail.sh/nodeclaim-uid") ==
                 new[0]["metadata"]["uid"], str([(i["InstanceId"], tags_of(i)) for i in launched])):
        return None
    iid = launched[0]["InstanceId"]
    controller = process.start()
    print(f"      killed at the crash point with {iid} launched for {name}; restarted: pid {controller.pid}")

    def big_running() -> bool:
        pods = get("pods", "-n", NS, "-l", "app=aws-e2e-big")["items"]
        return len(pods) == 1 and pods[0]["status"].get("phase") == "Running"
    check("crash point nodeclaim-launched: after the restart the pod runs",
          wait_for("the big pod Running", big_running, controller, 90))
    claim = next((c for c in claims() if c["metadata"]["name"] == name), {})
    check(f"crash point nodeclaim-launched: {name} names the instance launched before the crash",
          instance_id(claim) == iid if claim else False, str(claim.get("status", {}).get("providerID")))
    check(f"crash point nodeclaim-launched: no second instance for {name}", len(tagged()) == 1,
          str([i["InstanceId"] for i in tagged()]))
    return controller


def finish() -> int:
    print(f"{Tally.passed} passed, {Tally.failed} failed")
    return 1 if Tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
