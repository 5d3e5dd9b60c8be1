#!/usr/bin/env python3
"""The live part of `make demo`: Dovetail autoscaling a real local control plane.

Starts kube-apiserver, etcd, kube-scheduler, kube-controller-manager and kwok (tools/k8s), installs
the CRDs, a NodePool and two Deployments (examples/demo), runs `dovetail controller` with the kwok
cloud provider, and reports how long it took for every pod to run, which nodes it launched and what
they cost. Then it deletes one NodeClaim and shows it drained, replaced and gone. Everything is torn
down at the end (--keep leaves the cluster and the controller running and prints how to reach it).

Exit status 0 when every step succeeded, 1 otherwise; the controller's log is in
<dir>/controller.log.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, check=True, capture=True, env=None):
    r = subprocess.run(list(args), check=False, text=True, env=env,
                       stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}): {r.stderr.strip() if capture else ''}")
    return r.stdout if capture else ""


class Demo:
    def __init__(self, args):
        self.dir = os.path.abspath(args.dir)
        self.dovetail = os.path.abspath(args.dovetail)
        self.timeout = args.timeout
        self.bin = run(os.path.join(ROOT, "tools/k8s/build"), "--print-bin-dir").strip()
        self.kubectl = os.path.join(self.bin, "kubectl")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.controller = None
        self.log = None

    def k(self, *args, check=True):
        return run(self.kubectl, "--kubeconfig", self.kubeconfig, *args, check=check)

    def kj(self, *args):
        return json.loads(self.k(*args, "-o", "json"))

    def up(self):
        cluster = os.path.join(ROOT, "tools/k8s/cluster.py")
        run(sys.executable, cluster, "down", "--dir", self.dir, check=False)
        print("Starting kube-apiserver, etcd, kube-scheduler, kube-controller-manager and kwok ...")
        run(sys.executable, cluster, "up", "--dir", self.dir, "--all", capture=False)
        env = run(sys.executable, cluster, "env", "--dir", self.dir)
        for line in env.splitlines():
            if "KUBECONFIG=" in line:
                self.kubeconfig = line.split("KUBECONFIG=", 1)[1].strip().strip("'\"")
        self.k("apply", "-f", os.path.join(ROOT, "charts/dovetail/crds"))
        # Retried: `kubectl wait` fails at once on a CRD whose status has no conditions yet.
        deadline = time.monotonic() + 60
        while True:
            try:
                self.k("wait", "--for=condition=Established", "crd/nodepools.karpenter.sh",
                       "crd/nodeclaims.karpenter.sh", "--timeout=30s")
                break
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def start_controller(self):
        self.log = open(os.path.join(self.dir, "controller.log"), "w")
        env = dict(os.environ, KUBECONFIG=self.kubeconfig)
        self.controller = subprocess.Popen(
            [self.dovetail, "controller", "--kubeconfig", self.kubeconfig, "--cloud-provider", "kwok",
             "--disable-leader-election", "--batch-idle-duration", "1s", "--batch-max-duration", "10s"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        print(f"Started dovetail controller (pid {self.controller.pid}), log: {self.log.name}")

    def stop_controller(self):
        if self.controller and self.controller.poll() is None:
            self.controller.send_signal(signal.SIGTERM)
            try:
                self.controller.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.controller.kill()
        if self.log:
            self.log.close()

    def wait(self, what, predicate, timeout, progress=None):
        deadline = time.monotonic() + timeout
        last = 0.0
        while time.monotonic() < deadline:
            if progress and time.monotonic() - last >= 2:
                print(f"  {progress()}", flush=True)
                last = time.monotonic()
            if self.controller and self.controller.poll() is not None:
                raise RuntimeError(f"dovetail controller exited ({self.controller.returncode}) while waiting for {what}")
            if predicate():
                return
            time.sleep(0.5)
        raise RuntimeError(f"timed out after {timeout}s waiting for {what}")

    def pods(self):
        return [p for p in self.kj("get", "pods", "-n", "default")["items"]
                if p["metadata"].get("labels", {}).get("app") in ("web", "batch")]

    def all_running(self, expected):
        pods = self.pods()
        running = [p for p in pods if p["status"].get("phase") == "Running" and
                   not p["metadata"].get("deletionTimestamp")]
        return len(running) >= expected

    def progress(self):
        pods = self.pods()
        phases = {}
        for p in pods:
            phases[p["status"].get("phase", "?")] = phases.get(p["status"].get("phase", "?"), 0) + 1
        claims = self.kj("get", "nodeclaims")["items"]
        ready = sum(1 for c in claims for cond in c.get("status", {}).get("conditions", [])
                    if cond.get("type") == "Ready" and cond.get("status") == "True")
        summary = ", ".join(f"{k} {v}" for k, v in sorted(phases.items())) or "none created yet"
        return (f"pods {summary}; "
                f"NodeClaims {len(claims)} ({ready} ready)")

    def report(self):
        claims = self.kj("get", "nodeclaims")["items"]
        nodes = {n["metadata"]["name"]: n for n in self.kj("get", "nodes")["items"]}
        pods_on = {}
        for p in self.pods():
            pods_on.setdefault(p["spec"].get("nodeName", ""), []).append(p["metadata"]["name"])
        total = 0.0
        print(f"\n{'NODECLAIM':28} {'NODE':28} {'TYPE':16} {'CAPACITY':10} {'ZONE':14} {'$/h':>8} PODS")
        for c in sorted(claims, key=lambda c: c["metadata"]["name"]):
            labels = c["metadata"].get("labels", {})
            node_name = c.get("status", {}).get("nodeName", "")
            node = nodes.get(node_name, {})
            price = node.get("metadata", {}).get("labels", {}).get("eks-node-viewer/instance-price", "")
            try:
                total += float(price)
            except ValueError:
                pass
            print(f"{c['metadata']['name']:28} {node_name:28} {labels.get('node.kubernetes.io/instance-type', ''):16} "
                  f"{labels.get('karpenter.sh/capacity-type', ''):10} {labels.get('topology.kubernetes.io/zone', ''):14} "
                  f"{price:>8} {len(pods_on.get(node_name, []))}")
        print(f"{len(claims)} NodeClaims, {total:.4f} $/h ({total * 730:.2f} $/month)")
        return claims

    def main(self, keep):
        ok = False
        try:
            self.up()
            self.k("apply", "-f", os.path.join(ROOT, "examples/demo/nodepool.yaml"))
            self.start_controller()
            t0 = time.monotonic()
            self.k("apply", "-f", os.path.join(ROOT, "examples/demo/workload.yaml"))
            expected = 40 + 10
            print(f"Applied examples/demo: {expected} pending pods; waiting for all to run ...")
            self.wait("every pod Running", lambda: self.all_running(expected), self.timeout,
                      progress=self.progress)
            print(f"All {expected} pods Running after {time.monotonic() - t0:.1f} s")
            claims = self.report()

            victim = sorted(claims, key=lambda c: c["metadata"]["name"])[0]["metadata"]["name"]
            print(f"\nDeleting NodeClaim {victim}: its node is cordoned, drained and removed, "
                  "and its pods land on a replacement ...")
            t1 = time.monotonic()
            self.k("delete", "nodeclaim", victim, "--wait=false")
            self.wait(f"NodeClaim {victim} gone",
                      lambda: victim not in [c["metadata"]["name"] for c in self.kj("get", "nodeclaims")["items"]],
                      self.timeout)
            self.wait("every pod Running again", lambda: self.all_running(expected), self.timeout)
            print(f"{victim} terminated and every pod Running again after {time.monotonic() - t1:.1f} s")
            self.report()
            ok = True
        except KeyboardInterrupt:
            print("\ndemo: interrupted; tearing everything down", file=sys.stderr)
            keep = False
        except RuntimeError as e:
            print(f"demo: {e}", file=sys.stderr)
            if self.log:
                self.log.flush()
                print(f"demo: the controller's log is {self.log.name}; last lines:", file=sys.stderr)
                with open(self.log.name) as f:
                    for line in f.readlines()[-20:]:
                        print("  " + line.rstrip(), file=sys.stderr)
        finally:
            if keep and ok:
                print(f"\nLeft running (--keep): export KUBECONFIG={self.kubeconfig}; "
                      f"stop with: kill {self.controller.pid}; {sys.executable} tools/k8s/cluster.py down --dir {self.dir}")
            else:
                self.stop_controller()
                run(sys.executable, os.path.join(ROOT, "tools/k8s/cluster.py"), "down", "--dir", self.dir, check=False)
        return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", default=os.path.join(ROOT, "build/demo-cluster"))
    p.add_argument("--dovetail", default=os.path.join(ROOT, "build/release/dovetail/cli/dovetail"))
    p.add_argument("--timeout", type=int, default=180, help="seconds per wait")
    p.add_argument("--keep", action="store_true", help="leave the cluster and controller running")
    args = p.parse_args()
    return Demo(args).main(args.keep)


if __name__ == "__main__":
    sys.exit(main())
