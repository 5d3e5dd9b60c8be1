#!/usr/bin/env python3
"""Integration test of the HTTP endpoints of `dovetail controller` (issue 20, item 8), the whole
binary against a real kube-apiserver (the kube_integration fixture), with the kwok provider and no
NodePool, so nothing is launched, and with leader election on a Lease of its own:

  1. /readyz answers 200 once the informers synced; /healthz answers 200 "ok" while leading
     (dovetail/operator/health.h; its failures are unit-tested in dovetail_operator_health_test);
  2. the metrics port listens on DOVETAIL_METRICS_BIND_ADDRESS only: bound to 127.0.0.1, it refuses
     a connection to 127.0.0.2 (also this machine), which the probe port, on every interface,
     accepts;
  3. /disruption/explanations answers 404 naming DOVETAIL_DISRUPTION_EXPLANATIONS; with
     --disruption-explanations it answers 200 with a JSON array;
  4. both ports answer 405 to anything but GET.

Usage: operator_endpoints_test.py DOVETAIL_BINARY. Needs KUBECONFIG and DOVETAIL_K8S_BIN (set by
dovetail_kube_test). Prints `N passed, M failed` last; exits non-zero if anything failed.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "system"))
from e2e_common import KUBECONFIG, Tally, apply_crds, check, controller_ports, wait_for  # noqa: E402

RUN_ID = uuid.uuid4().hex[:6]


def fetch(url: str, method: str = "GET") -> tuple[int, str]:
    """(status, body); status 0 when the connection failed."""
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def connects(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=5):
            return True
    except OSError:
        return False


class Controller:
    def __init__(self, binary: str, log: Path, args: list[str]):
        self.log = log
        env = dict(os.environ, LEADER_ELECTION_NAME=f"endpoints-{RUN_ID}",
                   LEADER_ELECTION_NAMESPACE="default")
        self.proc = subprocess.Popen(
            [binary, "controller", "--kubeconfig", KUBECONFIG, "--cloud-provider", "kwok",
             "--metrics-port", "0", "--health-probe-port", "0", *args],
            stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env)
        self.ports: dict = {}

    def wait_serving(self) -> bool:
        def serving() -> bool:
            self.ports = controller_ports(self.log)
            return bool(self.ports.get("metrics")) and bool(self.ports.get("health"))
        return wait_for("the controller to log its ports", serving, self.proc, timeout=120)

    def stop(self) -> int | None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None

    def tail(self) -> str:
        return "".join(open(self.log).readlines()[-20:])


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = argv[1]
    apply_crds()
    work = Path(tempfile.mkdtemp(prefix="dovetail-endpoints-"))

    c = Controller(binary, work / "off.log", ["--metrics-bind-address", "127.0.0.1"])
    try:
        if not check("the controller serves (bind address 127.0.0.1)", c.wait_serving(), c.tail()):
            return 1
        metrics = f"http://127.0.0.1:{c.ports['metrics']}"
        health = f"http://127.0.0.1:{c.ports['health']}"
        check("/readyz answers 200 once synced",
              wait_for("/readyz 200", lambda: fetch(health + "/readyz")[0] == 200, c.proc,
                       timeout=120), str(fetch(health + "/readyz")))
        check("it leads its own Lease",
              wait_for("started leading", lambda: '"started leading"' in c.log.read_text(), c.proc,
                       timeout=120), c.tail())
        check("/healthz answers 200 ok while leading", fetch(health + "/healthz") == (200, "ok"),
              str(fetch(health + "/healthz")))
        status, body = fetch(metrics + "/metrics")
        check("/metrics answers on 127.0.0.1", status == 200 and "karpenter_build_info" in body,
              str(status))
        check("the metrics port refuses 127.0.0.2 (bound to 127.0.0.1 only)",
              not connects("127.0.0.2", c.ports["metrics"]))
        check("the probe port accepts 127.0.0.2 (every interface)",
              connects("127.0.0.2", c.ports["health"]))
        status, body = fetch(metrics + "/disruption/explanations")
        check("/disruption/explanations is off by default: 404 naming the setting",
              status == 404 and "DOVETAIL_DISRUPTION_EXPLANATIONS=true" in body, f"{status} {body}")
        for url in (metrics + "/metrics", health + "/healthz"):
            check(f"POST {url.split('/', 3)[3]} is refused with 405",
                  fetch(url, method="POST")[0] == 405, str(fetch(url, method="POST")))
    finally:
        check("SIGTERM stops it with status 0", c.stop() == 0, c.tail())

    c = Controller(binary, work / "on.log", ["--disruption-explanations"])
    try:
        if not check("the controller serves (explanations on)", c.wait_serving(), c.tail()):
            return 1
        metrics = f"http://127.0.0.1:{c.ports['metrics']}"

        def explanations_served() -> bool:
            status, body = fetch(metrics + "/disruption/explanations")
            return status == 200 and isinstance(json.loads(body), list)
        check("with --disruption-explanations it answers 200 with a JSON array",
              wait_for("/disruption/explanations 200", explanations_served, c.proc, timeout=60),
              str(fetch(metrics + "/disruption/explanations")))
        check("the metrics port accepts 127.0.0.2 by default (every interface)",
              connects("127.0.0.2", c.ports["metrics"]))
    finally:
        check("SIGTERM stops it with status 0", c.stop() == 0, c.tail())

    print(f"{Tally.passed} passed, {Tally.failed} failed")
    return 1 if Tally.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
