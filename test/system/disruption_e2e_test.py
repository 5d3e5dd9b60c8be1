#!/usr/bin/env python3
"""E2E test of voluntary disruption in `dovetail controller` (the whole binary, kwok provider) on
its own full local control plane (kube-apiserver, etcd, kube-scheduler, kube-controller-manager,
kwok).

  1. Budget windows: a NodePool whose only budget is `nodes: "0"` inside a cron window that is
     open now; after a scale-in nothing is disrupted while the window is open.
  2. Scale-in: the window is moved to a time that is not now and a `nodes: "2"` budget added; the
     empty and underutilized nodes are removed (never more than 2 disrupting at once), every pod
     keeps running, and the NodePool ends with fewer nodes.
  3. Protection: a pod annotated karpenter.sh/do-not-disrupt and the pods of a Deployment under a
     PodDisruptionBudget with maxUnavailable 0 are never evicted, by consolidation or by drift, and
     their nodes get an event that says why.
  4. Drift: after a scale-up, a requirement the nodes do not satisfy drifts them
     (RequirementsDrifted); with a budget of 1 they are replaced one at a time, every other
     NodeClaim of the pool Initialized whenever a drifted one starts terminating; the new
     NodeClaims carry the new label.
  5. kill -9 of the controller while a drifted node is tainted karpenter.sh/disrupted, then a
     restart: the drift completes with no stale taint or DisruptionReason condition, no more
     NodeClaims than before and every pod running.
  6. Chaos: every new node of another NodePool gets a NoExecute taint its pod does not tolerate;
     over two minutes the pool does not grow without bound (emptiness removes the nodes the pod
     was evicted from). Meanwhile a third NodePool with expireAfter 30s and a budget of 0 has its
     nodes expire and replaced again and again (expiration is forceful), and its pod runs.
Throughout, /metrics is scraped every 2 s: every metric family upstream Karpenter exports
(test/testdata/upstream-metrics.json) is served with upstream's type, and has samples with exactly
upstream's labels, except the families listed below with the reason.
Then SIGTERM stops the controller with exit status 0.

Usage: disruption_e2e_test.py DOVETAIL_BINARY. Needs KUBECONFIG and DOVETAIL_K8S_BIN (set by
dovetail_kube_test). Prints `N passed, M failed` last; exits non-zero if anything failed.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path

from e2e_common import deployment as common_deployment
from e2e_common import (ControllerProcess, MetricsScraper, Tally, apply_crds, check,
                        check_upstream_families, condition, get, kubectl, kwok_nodepool, wait_for)

RUN_ID = uuid.uuid4().hex[:6]
NS = f"dovetail-disruption-{RUN_ID}"
POOL = f"disrupt-{RUN_ID}"
CHAOS_POOL = f"chaos-{RUN_ID}"
WEB = 24
WEB_SCALED = 4
DISRUPTED_TAINT = "karpenter.sh/disrupted"
CHAOS_SECONDS = 120
CHAOS_MAX_NODES = 35  # upstream's bound in its runaway scale-up test


def nodepool(budgets: str, extra_requirement: str = "") -> str:
    requirements = ["key: kubernetes.io/arch, operator: In, values: [amd64]",
                    "key: karpenter.sh/capacity-type, operator: In, values: [on-demand]",
                    "key: karpenter.kwok.sh/instance-family, operator: In, values: [c7k]",
                    'key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["4", "8"]']
    if extra_requirement:
        requirements.append(extra_requirement)
    # The limit is far above what the test uses (karpenter_nodepools_limit).
    return kwok_nodepool(POOL, requirements, spec=f"""  limits: {{cpu: "1000"}}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
    budgets: {budgets}""")


CLOSED_NOW = '[{nodes: "0", schedule: "* * * * *", duration: 2h}]'
OPEN_NOW = '[{nodes: "0", schedule: "0 0 1 1 *", duration: 1h}, {nodes: "2"}]'
DRIFT_BUDGET = '[{nodes: "1"}]'
# A requirement the existing nodes do not satisfy (they have no such label): RequirementsDrifted.
DRIFT_REQUIREMENT = 'key: e2e-drift, operator: In, values: [v2]'
WEB_DRIFT = 14  # scaled up again before the drift so that new nodes hold no protected pod
GUARDED = 1  # the PDB's pod; the do-not-disrupt pod joins it on its node (pod affinity)


def deployment(name: str, replicas: int, cpu: str, extra_meta: str = "") -> str:
    return common_deployment(name, NS, replicas, f'cpu: "{cpu}", memory: 256Mi', pool=POOL,
                             pod_meta=extra_meta, limits="memory: 256Mi")


PINNED = f"""
apiVersion: v1
kind: Pod
metadata:
  name: pinned
  namespace: {NS}
  labels: {{app: pinned}}
  annotations: {{karpenter.sh/do-not-disrupt: "true"}}
spec:
  terminationGracePeriodSeconds: 1
  nodeSelector: {{karpenter.sh/nodepool: {POOL}}}
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: kubernetes.io/hostname
          labelSelector: {{matchLabels: {{app: guarded}}}}
  containers:
    - name: app
      image: registry.example/app:1
      resources: {{requests: {{cpu: 500m, memory: 128Mi}}}}
"""

PDB = f"""
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: guarded, namespace: {NS}}}
spec:
  maxUnavailable: 0
  selector: {{matchLabels: {{app: guarded}}}}
"""

CHAOS_NODEPOOL = kwok_nodepool(
    CHAOS_POOL, ["key: kubernetes.io/arch, operator: In, values: [amd64]", "key: karpenter.sh/capacity-type, operator: In, values: [on-demand]"],
    spec="""  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
    budgets: [{nodes: "100%"}]""")

EXPIRE_POOL = f"expire-{RUN_ID}"
# expireAfter 30s and a budget of 0: expiration is forceful, budgets do not hold it.
EXPIRE_NODEPOOL = kwok_nodepool(EXPIRE_POOL, ["key: kubernetes.io/arch, operator: In, values: [amd64]"], template="      expireAfter: 30s",
                                spec='  disruption:\n    budgets: [{nodes: "0"}]')

EXPIRE_DEPLOYMENT = common_deployment("expiring", NS, 1, "cpu: 500m, memory: 128Mi", pool=EXPIRE_POOL)

CHAOS_DEPLOYMENT = common_deployment("chaos", NS, 1, "cpu: 500m, memory: 128Mi", pool=CHAOS_POOL)


def pool_claims(pool: str = POOL) -> list[dict]:
    return [c for c in get("nodeclaims")["items"]
            if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == pool]


def pool_nodes(pool: str = POOL) -> list[dict]:
    return [n for n in get("nodes")["items"]
            if n["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == pool]


def has_disrupted_taint(node: dict) -> bool:
    return any(t.get("key") == DISRUPTED_TAINT for t in node.get("spec", {}).get("taints", []) or [])


def disrupting(pool: str = POOL) -> set[str]:
    """NodeClaims of the pool being disrupted: deleting, or their Node tainted disrupted."""
    out = {c["metadata"]["name"] for c in pool_claims(pool) if c["metadata"].get("deletionTimestamp")}
    by_node = {c.get("status", {}).get("nodeName"): c["metadata"]["name"] for c in pool_claims(pool)}
    for n in pool_nodes(pool):
        if has_disrupted_taint(n) and n["metadata"]["name"] in by_node:
            out.add(by_node[n["metadata"]["name"]])
    return out


def pods(app: str) -> list[dict]:
    return [p for p in get("pods", "-n", NS)["items"]
            if p["metadata"].get("labels", {}).get("app") == app and not p["metadata"].get("deletionTimestamp")]


def running(app: str, expected: int) -> bool:
    ps = pods(app)
    return len(ps) == expected and all(p["status"].get("phase") == "Running" for p in ps)


def uids(app: str) -> set[str]:
    return {p["metadata"]["uid"] for p in pods(app)}


class Monitor:
    """Samples the pool every half second in the background and records the largest number of
    NodeClaims disrupting at once, and any drifted NodeClaim that started terminating while
    another NodeClaim of the pool was not yet Initialized."""

    def __init__(self, pool: str = POOL):
        self.pool = pool
        self.max_disrupting = 0
        self.seen_deleting: set[str] = set()
        self.early_deletes: list[str] = []
        self.max_claims = 0
        self.deleted_total = 0
        self.current: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Monitor":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sample()
            except Exception as e:  # a transient kubectl failure must not end the monitor
                print(f"      (monitor: {e})")
            time.sleep(0.5)

    def sample(self) -> None:
        cs = pool_claims(self.pool)
        names = {c["metadata"]["name"] for c in cs}
        self.deleted_total += len(self.current - names)  # gone since the last sample
        self.current = names
        self.max_claims = max(self.max_claims, len([c for c in cs if not c["metadata"].get("deletionTimestamp")]))
        self.max_disrupting = max(self.max_disrupting, len(disrupting(self.pool)))
        for c in cs:
            name = c["metadata"]["name"]
            if not c["metadata"].get("deletionTimestamp") or name in self.seen_deleting:
                continue
            self.seen_deleting.add(name)
            if condition(c, "Drifted") != "True":
                continue
            waiting = [o["metadata"]["name"] for o in cs
                       if not o["metadata"].get("deletionTimestamp") and condition(o, "Initialized") != "True"]
            if waiting:
                self.early_deletes.append(f"{name} while {waiting} not Initialized")


def events_for(node_names: set[str]) -> list[dict]:
    return [e for e in get("events.events.k8s.io", "-A")["items"]
            if e.get("regarding", {}).get("name") in node_names]


# Upstream families this run does not serve, and why.
NOT_SERVED = {
    "go_*": "Dovetail is not a Go program",
    "aws_sdk_go_*": "the AWS provider's (aws_e2e_test)",
    "karpenter_cloudprovider_instance_*": "the AWS provider's (aws_e2e_test)",
    "karpenter_cloudprovider_batcher_*": "Dovetail batches no EC2 calls",
    "karpenter_ec2nodeclasses_userdata_bytes": "the AWS provider's (aws_e2e_test)",
    "karpenter_interruption_*": "the AWS provider's (aws_e2e_test)",
    "operator_ec2nodeclass_*": "the AWS provider's (aws_e2e_test)",
    "operator_capacitybuffer_*": "Dovetail serves no CapacityBuffer (the gate is refused)",
    "karpenter_nodeclaims_unhealthy_disrupted_total": "no node repair (NodeRepair is refused)",
    "certwatcher_*": "Dovetail watches no certificate",
    "controller_runtime_webhook_*": "Dovetail serves no webhook",
    "controller_runtime_conversion_webhook_panics_total": "Dovetail serves no webhook",
    "leader_election_master_status": "this run disables leader election",
}
# Families served whose events this run does not produce (their type is still checked).
NO_SAMPLES = {
    "karpenter_scheduler_unfinished_work_seconds": "only while a simulation runs (milliseconds)",
    "karpenter_pods_provisioning_scheduling_undecided_time_seconds":
        "only between a pass's ack of a pod and its decision",
    "karpenter_voluntary_disruption_queue_failures_total": "no command fails",
    "karpenter_nodepools_cost_tracker_errors_total": "kwok prices every offering",
    "karpenter_voluntary_disruption_failed_validations_total": "no command fails validation",
    "karpenter_nodes_total_daemon_*": "no DaemonSet here (observability's metrics_test counts them)",
    "karpenter_consolidation_score": "no Balanced NodePool here (disruption_test scores them)",
    "operator_node_status_condition_transition_seconds":
        "a kwok Node's Ready condition changes once, from none (no earlier status to time)",
    "operator_nodepool_termination_*": "no NodePool is deleted in this run",
    "karpenter_consolidation_moves_total":
        "no consolidation method settled a move in these runs (disruption_test counts them)",
}


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    apply_crds()
    kubectl("create", "namespace", NS)
    # Pods are refused until kube-controller-manager has made the namespace's service account.
    wait_for("the namespace's default service account",
             lambda: kubectl("get", "serviceaccount", "default", "-n", NS,
                             check_rc=False).returncode == 0,
             None, timeout=60)
    kubectl("apply", "-f", "-", stdin=nodepool(CLOSED_NOW))
    log_path = Path(os.environ.get("DOVETAIL_E2E_LOG_DIR", "/tmp")) / f"dovetail-disruption-{RUN_ID}.log"
    process = ControllerProcess(binary, log_path)
    controller = process.start()
    print(f"controller pid {controller.pid}, log {log_path}")
    scraper = MetricsScraper(log_path).start()
    try:
        kubectl("apply", "-f", "-", stdin=deployment("web", WEB, "1500m"))
        kubectl("apply", "-f", "-", stdin=deployment("guarded", GUARDED, "500m"))
        kubectl("apply", "-f", "-", stdin=PDB)
        kubectl("apply", "-f", "-", stdin=PINNED)
        ok = wait_for("every pod Running", lambda: running("web", WEB) and running("guarded", GUARDED) and
                      running("pinned", 1), process)
        check("the workload runs on nodes Dovetail launched", ok)
        before = {c["metadata"]["name"] for c in pool_claims()}
        print(f"      ({len(before)} NodeClaims)")
        protected_uids = uids("guarded") | uids("pinned")
        protected_nodes = {p["spec"].get("nodeName") for p in pods("guarded") + pods("pinned")}

        # 1. Scale-in inside a closed budget window: nothing is disrupted.
        kubectl("scale", "deployment", "web", "-n", NS, f"--replicas={WEB_SCALED}")
        wait_for("the scale-in", lambda: running("web", WEB_SCALED), process, timeout=60)
        monitor = Monitor().start()
        time.sleep(40)
        monitor.stop()
        check("a budget of 0 inside its schedule window blocks disruption",
              monitor.max_disrupting == 0 and {c["metadata"]["name"] for c in pool_claims()} == before,
              f"max disrupting {monitor.max_disrupting}")

        # 2. The window closes (moved to 1 January) and a budget of 2 applies: consolidation.
        kubectl("apply", "-f", "-", stdin=nodepool(OPEN_NOW))
        monitor = Monitor().start()
        shrunk = wait_for("the NodePool to shrink by at least 2 NodeClaims",
                          lambda: len([c for c in pool_claims() if not c["metadata"].get("deletionTimestamp")])
                          <= len(before) - 2, process, timeout=240)
        check("scale-in: empty and underutilized nodes are removed", shrunk,
              f"{len(pool_claims())} NodeClaims of {len(before)}")

        def quiet() -> bool:
            return not disrupting() and running("web", WEB_SCALED)
        wait_for("no disruption in flight", quiet, process, timeout=120)
        # Let consolidation run to the end: no change for 30 s.
        last, stable_since = None, time.monotonic()
        end = time.monotonic() + 180
        while time.monotonic() < end and time.monotonic() - stable_since < 30:
            now = sorted(c["metadata"]["name"] for c in pool_claims())
            if now != last:
                last, stable_since = now, time.monotonic()
            time.sleep(1)
        monitor.stop()
        after = pool_claims()
        print(f"      ({len(before)} -> {len(after)} NodeClaims)")
        check("never more than 2 nodes disrupting at once (budget nodes: \"2\")",
              0 < monitor.max_disrupting <= 2, str(monitor.max_disrupting))
        check("every pod runs after consolidation",
              running("web", WEB_SCALED) and running("guarded", GUARDED) and running("pinned", 1))
        check("the do-not-disrupt pod and the PDB-guarded pods were never evicted by consolidation",
              uids("guarded") | uids("pinned") == protected_uids)
        blocked = events_for(protected_nodes)
        notes = " ".join((e.get("note") or "") for e in blocked)
        check("the protected pods' nodes get an event that says why they are not disrupted",
              "do-not-disrupt" in notes or "pdb" in notes.lower(), notes[:300])

        # 4 + 5. Drift one at a time, with kill -9 in the middle of a replacement. Scale up first
        # so that some nodes hold only web pods (the protected pods' nodes cannot drift).
        kubectl("scale", "deployment", "web", "-n", NS, f"--replicas={WEB_DRIFT}")
        check("the scale-up before the drift runs",
              wait_for("web Running", lambda: running("web", WEB_DRIFT), process, timeout=120))
        protected_nodes = {p["spec"].get("nodeName") for p in pods("guarded") + pods("pinned")}
        before_drift = pool_claims()
        before_names = {c["metadata"]["name"] for c in before_drift}
        unprotected = [c["metadata"]["name"] for c in before_drift
                       if c.get("status", {}).get("nodeName") not in protected_nodes]
        print(f"      ({len(before_drift)} NodeClaims, {len(unprotected)} without protected pods)")
        check("some nodes hold no protected pod before the drift", bool(unprotected))
        kubectl("apply", "-f", "-", stdin=nodepool(DRIFT_BUDGET, DRIFT_REQUIREMENT))
        monitor = Monitor().start()
        tainted = wait_for("a drifted node tainted karpenter.sh/disrupted",
                           lambda: any(has_disrupted_taint(n) for n in pool_nodes()), process, timeout=120)
        check("changing the NodePool's requirements drifts a node", tainted)
        controller = process.kill9_and_restart()
        print(f"killed with SIGKILL during a replacement and restarted: controller pid {controller.pid}")

        def drift_done() -> bool:
            cs = pool_claims()
            unprotected_old = [c for c in cs if c["metadata"]["name"] in before_names and
                               c.get("status", {}).get("nodeName") not in protected_nodes]
            return (not unprotected_old and not disrupting() and running("web", WEB_DRIFT) and
                    running("guarded", GUARDED) and running("pinned", 1))
        check("every drifted node without protected pods is replaced and every pod runs",
              wait_for("the drift to complete", drift_done, process, timeout=360))
        monitor.stop()
        cs = pool_claims()
        new = [c for c in cs if c["metadata"]["name"] not in before_names]
        check("the replacements carry the NodePool's new label",
              all(c["metadata"].get("labels", {}).get("e2e-drift") == "v2" for c in new),
              str([c["metadata"]["name"] for c in new]))
        check("drift disrupts one node at a time (budget nodes: \"1\")",
              monitor.max_disrupting <= 1, str(monitor.max_disrupting))
        check("every other NodeClaim was Initialized whenever a drifted one started terminating",
              not monitor.early_deletes, "; ".join(monitor.early_deletes[:3]))
        check("no more NodeClaims after the drift than before it (no duplicate replacement)",
              len(cs) <= len(before_drift), f"{len(before_drift)} -> {len(cs)}")
        stale = [n["metadata"]["name"] for n in pool_nodes()
                 if has_disrupted_taint(n) and not n["metadata"].get("deletionTimestamp")]
        check("no stale karpenter.sh/disrupted taint after kill -9", not stale, str(stale))
        stale_cond = [c["metadata"]["name"] for c in cs
                      if condition(c, "DisruptionReason") == "True" and not c["metadata"].get("deletionTimestamp")]
        check("no stale DisruptionReason condition after kill -9", not stale_cond, str(stale_cond))
        check("the do-not-disrupt pod and the PDB-guarded pods were never evicted by drift",
              uids("guarded") | uids("pinned") == protected_uids)

        # 6. Chaos: every new node of the chaos pool is tainted NoExecute. Meanwhile, in another
        # pool, expiration replaces nodes every 30 s despite a budget of 0.
        kubectl("apply", "-f", "-", stdin=EXPIRE_NODEPOOL)
        kubectl("apply", "-f", "-", stdin=EXPIRE_DEPLOYMENT)
        expiring = Monitor(EXPIRE_POOL).start()
        kubectl("apply", "-f", "-", stdin=CHAOS_NODEPOOL)
        stop = threading.Event()

        def taint_new_nodes() -> None:
            while not stop.is_set():
                try:
                    for n in pool_nodes(CHAOS_POOL):
                        taints = n.get("spec", {}).get("taints", []) or []
                        if not any(t.get("key") == "chaos" for t in taints):
                            kubectl("taint", "node", n["metadata"]["name"], "chaos=true:NoExecute",
                                    check_rc=False)
                except Exception as e:
                    print(f"      (tainter: {e})")
                time.sleep(0.5)
        tainter = threading.Thread(target=taint_new_nodes, daemon=True)
        tainter.start()
        chaos = Monitor(CHAOS_POOL).start()
        kubectl("apply", "-f", "-", stdin=CHAOS_DEPLOYMENT)
        time.sleep(CHAOS_SECONDS)
        chaos.stop()
        expiring.stop()
        stop.set()
        tainter.join(timeout=10)
        kubectl("delete", "deployment", "chaos", "-n", NS, "--wait=false", check_rc=False)
        print(f"      (chaos: at most {chaos.max_claims} NodeClaims at once, {chaos.deleted_total} removed)")
        check(f"chaos: tainted nodes do not make the pool grow without bound (<= {CHAOS_MAX_NODES})",
              0 < chaos.max_claims <= CHAOS_MAX_NODES, str(chaos.max_claims))
        check("chaos: emptiness removes the nodes the pod was evicted from", chaos.deleted_total > 0,
              str(chaos.deleted_total))
        print(f"      (expiration: {expiring.deleted_total} NodeClaims expired in {CHAOS_SECONDS} s)")
        check("expireAfter 30s replaces nodes again and again, whatever the budget (nodes: \"0\")",
              expiring.deleted_total >= 2, str(expiring.deleted_total))
        check("the expiring pool's pod runs", wait_for("the expiring pod Running",
                                                       lambda: running("expiring", 1), process, timeout=60))
        scraper.stop()
        scraper.scrape_once()
        check_upstream_families(scraper, NOT_SERVED, NO_SAMPLES)
    finally:
        scraper.stop()
        rc = process.stop()
        check("SIGTERM stops the controller with exit status 0", rc == 0, str(rc))
        for d in ("web", "guarded", "chaos", "expiring"):
            kubectl("delete", "deployment", d, "-n", NS, "--wait=false", check_rc=False)
        if Tally.failed:
            print(f"--- controller log ({log_path}), last 60 lines:")
            print(process.tail(60))
    print(f"{Tally.passed} passed, {Tally.failed} failed")
    return 1 if Tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
