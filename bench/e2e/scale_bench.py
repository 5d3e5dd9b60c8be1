#!/usr/bin/env python3
"""End-to-end provisioning benchmark (issue 5, item 9): N pending pods to all Running on a real
local control plane (kube-apiserver, etcd, kube-scheduler, kube-controller-manager, kwok) with
`dovetail controller` and the kwok cloud provider.

Reports, from one run:
  - seconds from the Deployment's creation to every pod Running;
  - NodeClaims launched and their cost per hour (kwok's instance-price label);
  - the controller's CPU seconds (utime + stime from /proc) and peak RSS (VmHWM);
  - the controller's decision time: the provisioner's scheduling-simulation histogram
    (karpenter_scheduler_scheduling_duration_seconds{controller="provisioner"}: sum, count, max
    bucket) from /metrics.

Usage: bench/e2e/scale_bench.py [--pods 1000] [--dovetail BIN] [--json OUT]
Targets (docs/benchmarks.md): decision time <= 100 ms at 1,000 pods; peak RSS <= 80 MB.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "tools/k8s/cluster.py")


def run(*args, stdin=None, check=True):
    r = subprocess.run(list(args), input=stdin, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def proc_stats(pid):
    hz = os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / hz
    hwm = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    return cpu, hwm


def scrape(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return r.read().decode()
    except OSError:
        return ""


def histogram(text, name):
    total = count = 0.0
    buckets = []
    for line in text.splitlines():
        if line.startswith(name + "_sum"):
            total += float(line.split()[-1])
        elif line.startswith(name + "_count"):
            count += float(line.split()[-1])
        elif line.startswith(name + "_bucket") and 'le="+Inf"' not in line:
            le = float(line.split('le="')[1].split('"')[0])
            buckets.append((le, float(line.split()[-1])))
    return total, count, buckets


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, default=1000)
    p.add_argument("--dovetail", default=os.path.join(ROOT, "build/release/dovetail/cli/dovetail"))
    p.add_argument("--dir", default=os.path.join(ROOT, "build/bench-cluster"))
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--json", default="")
    args = p.parse_args()

    bindir = run(os.path.join(ROOT, "tools/k8s/build"), "--print-bin-dir").strip()
    kubectl = os.path.join(bindir, "kubectl")
    run(sys.executable, CLUSTER, "down", "--dir", args.dir, check=False)
    run(sys.executable, CLUSTER, "up", "--dir", args.dir, "--all")
    kubeconfig = os.path.join(args.dir, "kubeconfig")

    def k(*a, stdin=None):
        return run(kubectl, "--kubeconfig", kubeconfig, *a, stdin=stdin)

    controller = None
    try:
        k("apply", "-f", os.path.join(ROOT, "charts/dovetail/crds"))
        k("wait", "--for=condition=Established", "crd/nodepools.karpenter.sh", "--timeout=60s")
        k("apply", "-f", os.path.join(ROOT, "examples/demo/nodepool.yaml"))
        port = 18000 + os.getpid() % 1000
        log = open(os.path.join(args.dir, "controller.log"), "w")
        controller = subprocess.Popen(
            [args.dovetail, "controller", "--cloud-provider", "kwok", "--kubeconfig", kubeconfig,
             "--disable-leader-election", "--metrics-port", str(port), "--health-probe-port", "-1"],
            stdout=log, stderr=subprocess.STDOUT)
        time.sleep(2)
        deployment = f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: scale, namespace: default}}
spec:
  replicas: {args.pods}
  selector: {{matchLabels: {{app: scale}}}}
  template:
    metadata: {{labels: {{app: scale}}}}
    spec:
      containers:
        - name: app
          image: registry.example/app:1
          resources: {{requests: {{cpu: 250m, memory: 512Mi}}}}
"""
        t0 = time.monotonic()
        k("apply", "-f", "-", stdin=deployment)
        running = 0
        while time.monotonic() - t0 < args.timeout:
            if controller.poll() is not None:
                raise RuntimeError(f"controller exited with {controller.returncode}")
            pods = json.loads(k("get", "pods", "-n", "default", "-l", "app=scale", "-o", "json"))["items"]
            running = sum(1 for x in pods if x["status"].get("phase") == "Running")
            if running >= args.pods:
                break
            time.sleep(1)
        elapsed = time.monotonic() - t0
        cpu, rss = proc_stats(controller.pid)
        claims = json.loads(k("get", "nodeclaims", "-o", "json"))["items"]
        nodes = json.loads(k("get", "nodes", "-o", "json"))["items"]
        price = sum(float(n["metadata"].get("labels", {}).get("eks-node-viewer/instance-price", "0") or 0)
                    for n in nodes)
        total, count, buckets = histogram(
            "\n".join(l for l in scrape(port).splitlines() if 'controller="provisioner"' in l),
            "karpenter_scheduler_scheduling_duration_seconds")
        result = {
            "pods": args.pods, "running": running, "seconds_to_running": round(elapsed, 2),
            "node_claims": len(claims), "cost_per_hour": round(price, 4),
            "controller_cpu_seconds": round(cpu, 2), "controller_peak_rss_mb": round(rss / 2**20, 1),
            "scheduling_simulations": int(count),
            "scheduling_seconds_total": round(total, 4),
            "scheduling_seconds_mean": round(total / count, 4) if count else None,
        }
        print(json.dumps(result, indent=2))
        if args.json:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as f:
                json.dump(result, f, indent=2)
        return 0 if running >= args.pods else 1
    finally:
        if controller and controller.poll() is None:
            controller.send_signal(signal.SIGTERM)
            try:
                controller.wait(timeout=30)
            except subprocess.TimeoutExpired:
                controller.kill()
        run(sys.executable, CLUSTER, "down", "--dir", args.dir, check=False)


if __name__ == "__main__":
    sys.exit(main())
