#!/usr/bin/env python3
"""End-to-end comparison (issue 9, item 3): upstream Karpenter's kwok build and
`dovetail controller --cloud-provider kwok`, in turn, on a fresh local cluster each
(tools/k8s/cluster.py: kube-apiserver, etcd, kube-scheduler, kube-controller-manager, kwok).

For each pod count N and each controller:
  1. scale-out: a Deployment of N pods (250m CPU, 512Mi) is created; measured: seconds until all N
     are Running, NodeClaims launched, Nodes, cost per hour, controller CPU seconds and peak RSS;
     then a short quiet period (no NodeClaim created or deleted for --quiet-after-provision s).
  2. scale-in: the Deployment is scaled to 70% of N; measured: seconds until consolidation settles
     (see SETTLE below), NodeClaims removed and created, pods evicted, cost after, CPU and RSS.

SETTLE: the cluster is settled once, for --settle seconds in a row, no NodeClaim was created or
deleted and every replica of the Deployment is Running (no pod of it Pending or terminating).
The time reported is that of the last change (last NodeClaim created/deleted, or the last moment
not every replica was Running), counted from the scale-in. A run that does not settle within
--settle-timeout is reported with settled=false and what was reached.

Cost per hour: the sum of the Nodes' eks-node-viewer/instance-price labels (both kwok providers
set the price of the offering they launched), Nodes being deleted excluded.
Pods evicted: pods of the Deployment created after the scale-in (the ReplicaSet replaces every
evicted pod; scaling in itself creates none), sampled every few seconds.

Catalog (--catalog): `upstream` (default) gives both sides upstream kwok's built-in instance types:
upstream uses them as built in; Dovetail gets a catalog directory (aws_catalog.h format) written from
the same JSON with the same names, vCPUs, pods, zones and prices, and a memory size chosen so that
Dovetail's AL2023 overhead rules leave the same allocatable memory as upstream kwok's (capacity
minus 10Mi). `native` runs each with its own built-in catalog (not comparable on cost).

Usage: compare_e2e.py --pods 1000 [--pods 5000] [--json OUT] [--dovetail BIN]
       [--controllers upstream,dovetail] [--timeout S] [--settle S] [--settle-timeout S]
"""
import argparse
import json
import math
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import traceback
import http.client
import urllib.parse
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
MODULE_DIR = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "bench/e2e"))
sys.path.insert(0, os.path.join(ROOT, "tools/k8s"))
import scale_bench  # noqa: E402  (run, proc_stats, scrape, histogram)
import cluster as kcluster  # noqa: E402  (admin_tls)

from scale_bench import run, proc_stats, scrape, histogram  # noqa: E402

CLUSTER = os.path.join(ROOT, "tools/k8s/cluster.py")
GO = "/usr/local/go/bin/go"
PRICE_LABEL = "eks-node-viewer/instance-price"
ZONES = ["test-zone-a", "test-zone-b", "test-zone-c"]
DOVETAIL_REGION = "test-region"


def log(msg):
    print(f"[{datetime.now(timezone.utc).strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------ upstream build


def go_env():
    env = dict(os.environ)
    env["PATH"] = "/usr/local/go/bin:" + env.get("PATH", "")
    env.setdefault("GOMAXPROCS", "1")  # the build only; the controller runs with Go's default
    return env


def go(*args):
    r = subprocess.run([GO, *args], cwd=MODULE_DIR, env=go_env(), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"go {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def karpenter_module_dir():
    return go("list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/karpenter").strip()


def build_upstream(out):
    """Builds upstream's kwok controller (sigs.k8s.io/karpenter/kwok at the go.mod version) unless
    `out` is newer than go.mod and go.sum."""
    stamp = max(os.path.getmtime(os.path.join(MODULE_DIR, f)) for f in ("go.mod", "go.sum"))
    if os.path.exists(out) and os.path.getmtime(out) >= stamp:
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    log(f"building upstream kwok controller -> {out}")
    go("build", "-o", out, "sigs.k8s.io/karpenter/kwok")
    return out


# ----------------------------------------------------------------------- shared catalog (Dovetail)

TYPE_COLUMNS = [
    "name", "category", "family", "generation", "size", "arch", "os", "cpu_manufacturer",
    "cpu_sustained_clock_speed_mhz", "capability_flex", "vcpu", "memory_mib", "gpu_name",
    "gpu_manufacturer", "gpu_count", "gpu_memory_mib", "accelerator_name",
    "accelerator_manufacturer", "accelerator_count", "local_nvme_gib", "network_bandwidth_mbps",
    "ebs_bandwidth_mbps", "hypervisor", "encryption_in_transit_supported", "bare_metal", "max_pods",
    "allocatable_cpu_millicores", "allocatable_memory_mib", "allocatable_ephemeral_storage_gib",
    "pod_eni", "efa", "nvidia_gpu", "amd_gpu", "neuron", "neuroncore"]


def quantity_mib(q):
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 ** 2}
    for u, f in units.items():
        if q.endswith(u):
            return int(float(q[:-len(u)]) * f)
    return int(q) // 2 ** 20


def dovetail_alloc_memory_mib(memory_mib, arch, pods):
    """Allocatable memory (MiB) of a catalog row under aws_catalog.h's rules (capacity = memory
    less 64 MiB on arm64 less 7.5%; kube-reserved 11 x pods + 255 MiB; eviction 100 MiB)."""
    m = memory_mib - (64 if arch == "arm64" else 0)
    return m - math.ceil(0.075 * m) - (11 * pods + 255) - 100


def dovetail_alloc_cpu_m(vcpu):
    reserved = 60 + (10 if vcpu > 1 else 0) + 5 * max(0, min(vcpu, 4) - 2) + 2.5 * max(0, vcpu - 4)
    return vcpu * 1000 - int(reserved)


def write_shared_catalog(module_dir, out_dir):
    """Writes upstream kwok's built-in instance types (linux) as a Dovetail catalog directory;
    returns a summary of how allocatable compares."""
    types = json.load(open(os.path.join(module_dir, "kwok/cloudprovider/instance_types.json")))
    os.makedirs(out_dir, exist_ok=True)
    rows, od, spot, worst_cpu = [], [], [], 0
    for t in types:
        if "linux" not in t["operatingSystems"]:
            continue
        res = t["resources"]
        vcpu = int(res["cpu"])
        pods = int(res.get("pods", "110"))
        target = quantity_mib(res["memory"]) - 10  # upstream kwok: capacity - 10Mi kube-reserved
        mib = target
        while dovetail_alloc_memory_mib(mib, t["architecture"], pods) < target:
            mib += 1
        worst_cpu = max(worst_cpu, (vcpu * 1000 - 100) - dovetail_alloc_cpu_m(vcpu))
        family = t["name"].split("-")[0]
        rows.append({
            "name": t["name"], "category": family, "family": family, "generation": 0,
            "size": str(vcpu), "arch": t["architecture"], "os": "linux", "cpu_manufacturer": "",
            "cpu_sustained_clock_speed_mhz": 0, "capability_flex": "false", "vcpu": vcpu,
            "memory_mib": mib, "gpu_name": "", "gpu_manufacturer": "", "gpu_count": 0,
            "gpu_memory_mib": 0, "accelerator_name": "", "accelerator_manufacturer": "",
            "accelerator_count": 0, "local_nvme_gib": 0, "network_bandwidth_mbps": "",
            "ebs_bandwidth_mbps": "", "hypervisor": "", "encryption_in_transit_supported": "false",
            "bare_metal": "no", "max_pods": pods,
            "allocatable_cpu_millicores": dovetail_alloc_cpu_m(vcpu),
            "allocatable_memory_mib": dovetail_alloc_memory_mib(mib, t["architecture"], pods),
            "allocatable_ephemeral_storage_gib": 17, "pod_eni": 0, "efa": 0, "nvidia_gpu": 0,
            "amd_gpu": 0, "neuron": 0, "neuroncore": 0})
        for o in t["offerings"]:
            req = {r["key"]: r["values"][0] for r in o["Requirements"]}
            zone, ct = req["topology.kubernetes.io/zone"], req["karpenter.sh/capacity-type"]
            if zone not in ZONES:
                continue
            if ct == "on-demand" and zone == ZONES[0]:
                od.append((DOVETAIL_REGION, t["name"], o["Price"]))
            elif ct == "spot":
                spot.append((DOVETAIL_REGION, zone, t["name"], o["Price"]))
    with open(os.path.join(out_dir, "instance-types.csv"), "w") as f:
        f.write(",".join(TYPE_COLUMNS) + "\n")
        for r in sorted(rows, key=lambda r: r["name"]):
            f.write(",".join(str(r[c]) for c in TYPE_COLUMNS) + "\n")
    with open(os.path.join(out_dir, "on-demand-prices.csv"), "w") as f:
        f.write("region,instance_type,usd_per_hour\n")
        for r in sorted(od, key=lambda r: r[1]):
            f.write(f"{r[0]},{r[1]},{r[2]!r}\n")
    with open(os.path.join(out_dir, "spot-prices.csv"), "w") as f:
        f.write("region,zone,instance_type,usd_per_hour\n")
        for r in sorted(spot, key=lambda r: (r[2], r[1])):
            f.write(f"{r[0]},{r[1]},{r[2]},{r[3]!r}\n")
    return {"types": len(rows), "max_allocatable_cpu_difference_millicores": worst_cpu}


# ---------------------------------------------------------------------------------- API access


class Api:
    """Minimal reads against the local API server with the cluster's admin certificate."""

    def __init__(self, cluster_dir):
        state = json.load(open(os.path.join(cluster_dir, "state.json")))
        self.port = state["components"]["kube-apiserver"]["ports"]["secure"]
        self.tls = kcluster.admin_tls(kcluster.Path(cluster_dir) / "pki")

    def get(self, path, metadata_only=False):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=60, context=self.tls)
        headers = {"Accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
                   if metadata_only else "application/json"}
        try:
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"GET {path}: {resp.status} {body[:200]!r}")
            return json.loads(body)
        finally:
            conn.close()

    def pods(self, phase=None):
        q = {"labelSelector": "app=scale"}
        if phase:
            q["fieldSelector"] = f"status.phase={phase}"
        return self.get("/api/v1/namespaces/default/pods?" + urllib.parse.urlencode(q),
                        metadata_only=True)["items"] or []

    def node_claims(self):
        return {x["metadata"]["name"] for x in
                self.get("/apis/karpenter.sh/v1/nodeclaims", metadata_only=True)["items"] or []}

    def nodes(self):
        return [x for x in self.get("/api/v1/nodes", metadata_only=True)["items"] or []
                if not x["metadata"].get("deletionTimestamp")]


def created_at(obj):
    return datetime.strptime(obj["metadata"]["creationTimestamp"],
                             "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def cost_of(nodes):
    return round(sum(float(n["metadata"].get("labels", {}).get(PRICE_LABEL) or 0) for n in nodes), 4)


def instance_mix(nodes):
    mix = {}
    for n in nodes:
        t = n["metadata"].get("labels", {}).get("node.kubernetes.io/instance-type", "?")
        mix[t] = mix.get(t, 0) + 1
    return dict(sorted(mix.items()))


# ------------------------------------------------------------------------------------ one run


NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: topology.kubernetes.io/zone, operator: In, values: [%s]}
      expireAfter: Never
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
""" % ", ".join(ZONES)

KWOK_NODECLASS = """
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
"""


def deployment(replicas):
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: scale, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: scale}}}}
  template:
    metadata: {{labels: {{app: scale}}}}
    spec:
      containers:
        - name: app
          image: registry.example/app:1
          resources: {{requests: {{cpu: 250m, memory: 512Mi}}}}
"""


class Run:
    def __init__(self, args, which, pods, module_dir, upstream_bin, catalog_dir):
        self.args, self.which, self.n = args, which, pods
        self.module_dir, self.upstream_bin, self.catalog_dir = module_dir, upstream_bin, catalog_dir
        self.dir = os.path.join(args.dir, "cluster")
        self.kubectl = os.path.join(run(os.path.join(ROOT, "tools/k8s/build"),
                                        "--print-bin-dir").strip(), "kubectl")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.controller = None
        self.api = None

    def k(self, *a, stdin=None):
        return run(self.kubectl, "--kubeconfig", self.kubeconfig, *a, stdin=stdin)

    def check_controller(self):
        if self.controller.poll() is not None:
            raise RuntimeError(f"{self.which} controller exited with {self.controller.returncode}")

    def install(self):
        if self.which == "upstream":
            crds = [os.path.join(self.module_dir, "kwok/charts/crds"),
                    os.path.join(self.module_dir, "kwok/apis/crds")]
        else:
            crds = [os.path.join(ROOT, "charts/dovetail/crds")]
        for c in crds:
            self.k("apply", "--server-side", "-f", c)
        self.k("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        if self.which == "upstream":
            self.k("apply", "-f", "-", stdin=KWOK_NODECLASS)
            # Nothing in upstream's kwok build reports the KWOKNodeClass Ready; without it the
            # NodePool is not Ready and nothing launches.
            now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            status = {"status": {"conditions": [{
                "type": "Ready", "status": "True", "reason": "Ready", "message": "",
                "lastTransitionTime": now, "observedGeneration": 1}]}}
            self.k("patch", "kwoknodeclass", "default", "--subresource=status", "--type=merge",
                   "-p", json.dumps(status))
        self.k("apply", "-f", "-", stdin=NODEPOOL)

    def start_controller(self):
        self.metrics_port = free_port()
        logf = open(os.path.join(self.args.dir, f"{self.which}-{self.n}.log"), "w")
        if self.which == "upstream":
            env = dict(os.environ, KUBECONFIG=self.kubeconfig, DISABLE_LEADER_ELECTION="true",
                       METRICS_PORT=str(self.metrics_port), HEALTH_PROBE_PORT=str(free_port()),
                       LOG_LEVEL="info")
            env.pop("INSTANCE_TYPES_FILE_PATH", None)  # its built-in types in both modes
            argv = [self.upstream_bin]
        else:
            env = dict(os.environ)
            argv = [self.args.dovetail, "controller", "--cloud-provider", "kwok",
                    "--kubeconfig", self.kubeconfig, "--disable-leader-election",
                    "--metrics-port", str(self.metrics_port), "--health-probe-port", "-1"]
            if self.catalog_dir:
                argv += ["--kwok-catalog", self.catalog_dir]
        self.controller = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 120
        while not scrape(self.metrics_port):
            self.check_controller()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.which}: no /metrics within 120 s")
            time.sleep(0.5)
        time.sleep(2)

    def snapshot(self):
        cpu, rss = proc_stats(self.controller.pid)
        nodes = self.api.nodes()
        return {"node_claims": len(self.api.node_claims()), "nodes": len(nodes),
                "cost_per_hour": cost_of(nodes), "instance_types": instance_mix(nodes),
                "controller_cpu_seconds": round(cpu, 2),
                "controller_peak_rss_mb": round(rss / 2 ** 20, 1)}

    def replica_state(self, target):
        """(running, pending, terminating) pods of the Deployment."""
        running = [p for p in self.api.pods("Running") if not p["metadata"].get("deletionTimestamp")]
        all_pods = self.api.pods()
        terminating = sum(1 for p in all_pods if p["metadata"].get("deletionTimestamp"))
        return len(running), len(all_pods) - len(running) - terminating, terminating, all_pods

    def quiet(self, target, t0, quiet_s, timeout_s, on_sample=None):
        """Waits until for quiet_s no NodeClaim was created or deleted and all `target` replicas
        are Running. Returns (settled, seconds of the last change since t0, samples)."""
        claims = self.api.node_claims()
        seen = set(claims)
        last_change = time.monotonic()
        while True:
            self.check_controller()
            now = time.monotonic()
            cur = self.api.node_claims()
            running, pending, terminating, all_pods = self.replica_state(target)
            if on_sample:
                on_sample(all_pods)
            if cur != claims or running != target or pending or terminating:
                last_change = now
            seen |= cur
            claims = cur
            if now - last_change >= quiet_s:
                return True, round(last_change - t0, 2), seen
            if now - t0 > timeout_s:
                return False, round(last_change - t0, 2), seen
            time.sleep(self.args.poll)

    def execute(self):
        a = self.args
        result = {"controller": self.which, "pods": self.n}
        run(sys.executable, CLUSTER, "down", "--dir", self.dir, check=False)
        run(sys.executable, CLUSTER, "up", "--dir", self.dir, "--all")
        try:
            self.api = Api(self.dir)
            self.install()
            self.start_controller()
            cpu0, _ = proc_stats(self.controller.pid)
            result["controller_cpu_seconds_at_start"] = round(cpu0, 2)

            # ---- scale-out
            log(f"{self.which} N={self.n}: creating the Deployment")
            t0 = time.monotonic()
            self.k("apply", "-f", "-", stdin=deployment(self.n))
            seen, running = set(), 0
            while time.monotonic() - t0 < a.timeout:
                self.check_controller()
                seen |= self.api.node_claims()
                running = len([p for p in self.api.pods("Running")
                               if not p["metadata"].get("deletionTimestamp")])
                if running >= self.n:
                    break
                time.sleep(a.poll)
            done_wall = time.time()
            up = {"all_running": running >= self.n, "running": running,
                  "seconds_to_running": round(time.monotonic() - t0, 2)}
            # The ReplicaSet creates the pods at kube-controller-manager's API rate; how long the
            # last one created waited (creationTimestamp has a resolution of one second).
            created = [created_at(p) for p in self.api.pods()]
            if created:
                up["seconds_to_create_pods"] = round(max(created) - (done_wall - up["seconds_to_running"]), 1)
                up["seconds_running_after_last_pod_created"] = round(done_wall - max(created), 1)
            up.update(self.snapshot())
            up["node_claims_launched"] = len(seen | self.api.node_claims())
            log(f"{self.which} N={self.n}: scale-out {json.dumps(up)}")
            result["scale_out"] = up
            if not up["all_running"]:
                result["error"] = f"timeout: {running}/{self.n} Running after {a.timeout} s"
                return result

            # ---- quiet period before the scale-in
            t1 = time.monotonic()
            settled, last, seen2 = self.quiet(self.n, t1, a.quiet_after_provision,
                                              a.quiet_timeout)
            pre = {"settled": settled, "seconds_to_quiet": last,
                   "node_claims_seen": len(seen2)}
            pre.update(self.snapshot())
            result["before_scale_in"] = pre
            log(f"{self.which} N={self.n}: before scale-in {json.dumps(pre)}")

            # ---- scale-in
            target = int(round(self.n * a.scale_in))
            claims_before = self.api.node_claims()
            pods_before = {p["metadata"]["name"] for p in self.api.pods()}
            t_wall = time.time()
            t2 = time.monotonic()
            self.k("scale", "deployment/scale", "-n", "default", f"--replicas={target}")
            replacements = set()

            def sample(pods):
                for p in pods:
                    name = p["metadata"]["name"]
                    if name not in pods_before and created_at(p) >= math.floor(t_wall):
                        replacements.add(name)

            settled, last, seen3 = self.quiet(target, t2, a.settle, a.settle_timeout, sample)
            claims_after = self.api.node_claims()
            down = {"replicas": target, "settled": settled, "seconds_to_settle": last,
                    "settle_window_seconds": a.settle,
                    "node_claims_removed": len(claims_before - claims_after),
                    "node_claims_created": len(claims_after - claims_before),
                    "node_claims_seen": len(seen3), "pods_evicted": len(replacements)}
            down.update(self.snapshot())
            log(f"{self.which} N={self.n}: scale-in {json.dumps(down)}")
            result["scale_in"] = down
            # The provisioner's scheduling simulations (both export upstream v1's name).
            text = "\n".join(line for line in scrape(self.metrics_port).splitlines()
                             if 'controller="provisioner"' in line)
            total, count, _ = histogram(text, "karpenter_scheduler_scheduling_duration_seconds")
            result["scheduling_simulations"] = int(count)
            result["scheduling_seconds_total"] = round(total, 3)
            if not settled:
                result["error"] = f"scale-in did not settle within {a.settle_timeout} s"
            return result
        finally:
            if self.controller and self.controller.poll() is None:
                self.controller.send_signal(signal.SIGTERM)
                try:
                    self.controller.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.controller.kill()
                    self.controller.wait()
            if not a.keep:
                run(sys.executable, CLUSTER, "down", "--dir", self.dir, check=False)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, action="append", help="pod count (repeatable; default 1000)")
    p.add_argument("--controllers", default="upstream,dovetail")
    p.add_argument("--dovetail", default=os.path.join(ROOT, "build/release/dovetail/cli/dovetail"))
    p.add_argument("--upstream-bin", default=os.path.join(ROOT, "build/bench-upstream/karpenter-kwok"))
    p.add_argument("--dir", default=os.path.join(ROOT, "build/bench-e2e-compare"))
    p.add_argument("--catalog", choices=["upstream", "native"], default="upstream")
    p.add_argument("--timeout", type=float, default=600, help="scale-out limit (s)")
    p.add_argument("--quiet-after-provision", type=float, default=30)
    p.add_argument("--quiet-timeout", type=float, default=180)
    p.add_argument("--scale-in", type=float, default=0.7, help="fraction of N kept")
    p.add_argument("--settle", type=float, default=60, help="quiet window that ends the scale-in (s)")
    p.add_argument("--settle-timeout", type=float, default=600)
    p.add_argument("--poll", type=float, default=2.0)
    p.add_argument("--keep", action="store_true", help="leave the last cluster running")
    p.add_argument("--json", default="")
    args = p.parse_args()
    sizes = args.pods or [1000]
    controllers = [c for c in args.controllers.split(",") if c]
    for c in controllers:
        if c not in ("upstream", "dovetail"):
            p.error(f"--controllers: unknown controller {c!r} (upstream, dovetail)")
    if any(n <= 0 for n in sizes):
        p.error("--pods must be positive")
    if "dovetail" in controllers and not os.access(args.dovetail, os.X_OK):
        p.error(f"--dovetail {args.dovetail}: not an executable")
    os.makedirs(args.dir, exist_ok=True)

    module_dir = karpenter_module_dir()
    upstream_bin = build_upstream(args.upstream_bin) if "upstream" in controllers else None
    catalog_dir, catalog = None, {"mode": args.catalog}
    if args.catalog == "upstream":
        catalog_dir = os.path.join(args.dir, "catalog-upstream-kwok")
        catalog.update(write_shared_catalog(module_dir, catalog_dir))
        catalog["dovetail_catalog_dir"] = catalog_dir
    out = {
        "benchmark": "compare_e2e", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "upstream": {"module": "sigs.k8s.io/karpenter", "version": os.path.basename(module_dir).split("@")[-1],
                     "binary": upstream_bin},
        "dovetail": {"binary": args.dovetail,
                     "version": run(args.dovetail, "version", check=False).strip()
                     if "dovetail" in controllers else None},
        "catalog": catalog, "nproc": os.cpu_count(),
        "nodepool": {"requirements": "amd64, linux, on-demand, zones " + ",".join(ZONES),
                     "consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"},
        "pod": {"cpu": "250m", "memory": "512Mi"},
        "settle_definition": f"no NodeClaim created/deleted and all replicas Running for {args.settle:g} s; "
                             "reported = time of the last change since the scale-in",
        "runs": [],
    }

    def save():
        if args.json:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as f:
                json.dump(out, f, indent=2)

    rc = 0
    for n in sizes:
        for c in controllers:
            try:
                r = Run(args, c, n, module_dir, upstream_bin, catalog_dir).execute()
            except Exception as e:  # a failed run is recorded; the others still run
                log(traceback.format_exc())
                r = {"controller": c, "pods": n, "error": str(e)}
            if "error" in r:
                rc = 1
            out["runs"].append(r)
            save()
    print(json.dumps(out, indent=2))
    return rc


if __name__ == "__main__":
    sys.exit(main())
