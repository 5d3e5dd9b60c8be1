"""Helpers shared by the system tests: kubectl, checks with a pass/fail tally, polling while the
controller runs, and the controller process itself (the `dovetail` binary, JSON log to a file).

Needs KUBECONFIG and DOVETAIL_K8S_BIN (set by dovetail_kube_test).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = str(Path(os.environ.get("DOVETAIL_K8S_BIN", "")) / "kubectl")
KUBECONFIG = os.environ.get("KUBECONFIG", "")
DEADLINE_S = float(os.environ.get("DOVETAIL_E2E_DEADLINE", "180"))


class Tally:
    passed = 0
    failed = 0


def check(name: str, ok: bool, detail: str = "") -> bool:
    if ok:
        Tally.passed += 1
        print(f"ok    {name}", flush=True)
    else:
        Tally.failed += 1
        print(f"FAIL  {name}{': ' + detail if detail else ''}", flush=True)
    return ok


def kubectl(*args: str, check_rc: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    r = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, timeout=60)
    if check_rc and r.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def get(*args: str) -> dict:
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def condition(obj: dict, kind: str) -> str:
    for c in obj.get("status", {}).get("conditions", []) or []:
        if c.get("type") == kind:
            return c.get("status", "")
    return ""


def cpu_millis(q: str) -> int:
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


def wait_established(run, crds: tuple[str, ...] = (), timeout: float = 60.0) -> None:
    """Waits until `crds` (every CRD when empty) are Established. `run(*kubectl_args)` runs
    kubectl and returns whether it succeeded. `kubectl wait` is retried: it fails at once, instead
    of waiting, on a CRD created so recently that its status has no conditions yet."""
    targets = [f"crd/{c}" for c in crds] or ["crd", "--all"]
    deadline = time.monotonic() + timeout
    while True:
        left = max(1, min(30, int(deadline - time.monotonic())))
        if run("wait", "--for=condition=Established", *targets, f"--timeout={left}s"):
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"CRDs {' '.join(targets)} not Established within {timeout:.0f} s")
        time.sleep(0.5)


def apply_crds() -> None:
    kubectl("apply", "-f", str(ROOT / "charts/dovetail/crds"))
    wait_established(lambda *a: kubectl(*a, check_rc=False).returncode == 0,
                     ("nodepools.karpenter.sh", "nodeclaims.karpenter.sh"))


def kwok_nodepool(name: str, requirements: list[str], *, template: str = "", spec: str = "") -> str:
    """The YAML of a NodePool NAME on the kwok node class with `requirements` (each the inside of a
    YAML flow map: 'key: kubernetes.io/arch, operator: In, values: [amd64]'). `template` lines
    (indented six spaces) are added to the template's spec, `spec` lines (indented two: limits,
    disruption) to the NodePool's spec."""
    lines = ["apiVersion: karpenter.sh/v1", "kind: NodePool", "metadata:", f"  name: {name}", "spec:",
             "  template:", "    spec:",
             "      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}"]
    if template:
        lines.append(template.rstrip("\n"))
    lines.append("      requirements:")
    lines += [f"        - {{{r}}}" for r in requirements]
    if spec:
        lines.append(spec.rstrip("\n"))
    return "\n" + "\n".join(lines) + "\n"


def zone_spread(app: str) -> str:
    """A pod spec's DoNotSchedule spread of pods labelled app=APP across zones (maxSkew 1), as
    `deployment`'s `spec` lines."""
    return f"""      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {{matchLabels: {{app: {app}}}}}"""


def deployment(name: str, namespace: str, replicas: int, requests: str, *, app: str | None = None,
               pool: str | None = None, grace: int | None = 1, pod_meta: str = "",
               limits: str = "", spec: str = "") -> str:
    """The YAML of a Deployment NAME of `replicas` pods labelled app=APP (NAME by default), one
    container `app` requesting `requests` (the inside of a YAML flow map: 'cpu: 500m, memory:
    128Mi') and limited to `limits` when given, pinned to NodePool `pool` when given.
    `terminationGracePeriodSeconds` is `grace` (None: the default); `pod_meta` is added to the pod
    template's metadata map (", annotations: {...}"); `spec` lines (indented six spaces) to its
    spec."""
    app = app or name
    lines = ["apiVersion: apps/v1", "kind: Deployment",
             f"metadata: {{name: {name}, namespace: {namespace}}}", "spec:",
             f"  replicas: {replicas}", f"  selector: {{matchLabels: {{app: {app}}}}}",
             "  template:", f"    metadata: {{labels: {{app: {app}}}{pod_meta}}}", "    spec:"]
    if grace is not None:
        lines.append(f"      terminationGracePeriodSeconds: {grace}")
    if pool:
        lines.append(f"      nodeSelector: {{karpenter.sh/nodepool: {pool}}}")
    if spec:
        lines.append(spec.rstrip("\n"))
    resources = f"requests: {{{requests}}}" + (f", limits: {{{limits}}}" if limits else "")
    lines += ["      containers:", "        - name: app", "          image: registry.example/app:1",
              f"          resources: {{{resources}}}"]
    return "\n" + "\n".join(lines) + "\n"


class ControllerProcess:
    """`dovetail controller` with the kwok provider (unless `extra_args` names another),
    restartable, logging to one file."""

    def __init__(self, binary: str, log_path: Path, extra_args: list[str] | None = None):
        self.binary = binary
        self.log_path = log_path
        self.extra_args = extra_args or []
        if "--cloud-provider" not in self.extra_args:
            self.extra_args = ["--cloud-provider", "kwok", *self.extra_args]
        self.log = open(log_path, "w")
        self.proc: subprocess.Popen | None = None

    def start(self) -> subprocess.Popen:
        self.proc = subprocess.Popen(
            [self.binary, "controller", "--kubeconfig", KUBECONFIG, "--disable-leader-election",
             "--metrics-port", "0", "--health-probe-port", "0",
             "--batch-idle-duration", "500ms", "--batch-max-duration", "3s", *self.extra_args],
            stdout=self.log, stderr=subprocess.STDOUT)
        return self.proc

    def kill9_and_restart(self) -> subprocess.Popen:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        return self.start()

    def stop(self) -> int | None:
        """SIGTERM; the exit status, or None when it had to be killed."""
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = None
        self.log.close()
        return rc

    def tail(self, lines: int = 40) -> str:
        return "".join(open(self.log_path).readlines()[-lines:])


def wait_for(what: str, predicate, controller: subprocess.Popen | ControllerProcess | None,
             timeout: float = DEADLINE_S, interval: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = controller.proc if isinstance(controller, ControllerProcess) else controller
        if proc is not None and proc.poll() is not None:
            print(f"controller exited with {proc.returncode} while waiting for {what}")
            return False
        if predicate():
            return True
        time.sleep(interval)
    print(f"timed out after {timeout:.0f}s waiting for {what}")
    return False


_BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_SUFFIXES = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
                     "P": 1e15, "E": 1e18}


def quantity(q: str) -> float:
    """A Kubernetes quantity ("512Mi", "1.5", "250m", "1e3") as a number of base units."""
    for suffix, factor in _BINARY_SUFFIXES.items():
        if q.endswith(suffix):
            return float(q[:-len(suffix)]) * factor
    if q and q[-1] in _DECIMAL_SUFFIXES and not q[-1].isdigit():
        return float(q[:-1]) * _DECIMAL_SUFFIXES[q[-1]]
    return float(q)


def controller_ports(log_path: Path) -> dict:
    """The metrics and health ports a controller logged (`"message":"serving"`), or {}."""
    ports: dict = {}
    for line in open(log_path):
        if '"message":"serving"' in line:
            entry = json.loads(line)
            ports = {"metrics": entry.get("metricsPort"), "health": entry.get("healthProbePort")}
    return ports


# ---- Upstream's metric families (test/testdata/upstream-metrics.json) ------------------------

UPSTREAM_METRICS = ROOT / "test" / "testdata" / "upstream-metrics.json"


def parse_exposition(text: str) -> tuple[dict[str, str], dict[str, set[frozenset[str]]]]:
    """Prometheus text: the type of each family (`# TYPE`), and the label-name sets its samples
    carry (le and quantile dropped; a histogram's _bucket/_sum/_count and a summary's _sum/_count
    count as the family)."""
    types: dict[str, str] = {}
    labels: dict[str, set[frozenset[str]]] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind.strip()
            continue
        if not line or line.startswith("#"):
            continue
        head = line.rsplit(" ", 1)[0]
        name, _, rest = head.partition("{")
        names: set[str] = set()
        if rest:
            # label="value" pairs; values may hold escaped quotes and commas.
            i, body = 0, rest[:-1] if rest.endswith("}") else rest
            while i < len(body):
                eq = body.index("=", i)
                names.add(body[i:eq].strip(", "))
                j = eq + 2  # past ="
                while body[j] != '"':
                    j += 2 if body[j] == "\\" else 1
                i = j + 1
        names -= {"le", "quantile"}
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and name[: -len(suffix)] in types:
                family = name[: -len(suffix)]
        labels.setdefault(family, set()).add(frozenset(names))
    return types, labels


class MetricsScraper:
    """Scrapes /metrics every `interval` s on a thread, keeping the union of what it saw."""

    def __init__(self, log_path: Path, interval: float = 2.0):
        self.log_path = log_path
        self.interval = interval
        self.types: dict[str, str] = {}
        self.labels: dict[str, set[frozenset[str]]] = {}
        self.scrapes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "MetricsScraper":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def scrape_once(self) -> None:
        port = controller_ports(self.log_path).get("metrics")
        if not port:
            return
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return  # a restart in progress
        types, labels = parse_exposition(text)
        self.types.update(types)
        for family, sets in labels.items():
            self.labels.setdefault(family, set()).update(sets)
        self.scrapes += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self.scrape_once()
            self._stop.wait(self.interval)


def check_upstream_families(scraper: MetricsScraper, not_served: dict[str, str],
                            no_samples: dict[str, str], only: tuple[str, ...] = ()) -> None:
    """Every family of upstream's inventory is served with upstream's type, and its samples carry
    exactly upstream's labels; except those in `not_served` (name or prefix ending in "*" →
    why) and, for samples only, `no_samples` (the run has nothing to count; the type is still
    checked). `only`: the name prefixes to check (all when empty)."""
    def listed(name: str, table: dict[str, str]) -> bool:
        return any(name == k or (k.endswith("*") and name.startswith(k[:-1])) for k in table)

    inventory = json.loads(UPSTREAM_METRICS.read_text())
    missing, wrong_type, no_series, wrong_labels = [], [], [], []
    for family in inventory:
        name = family["name"]
        if listed(name, not_served) or (only and not name.startswith(only)):
            continue
        if name not in scraper.types:
            missing.append(name)
            continue
        if scraper.types[name] != family["type"]:
            wrong_type.append(f"{name}: {scraper.types[name]} != {family['type']}")
        seen = scraper.labels.get(name, set())
        if not seen:
            if not listed(name, no_samples):
                no_series.append(name)
            continue
        want = frozenset(family["labels"])
        bad = [sorted(s) for s in seen if s != want]
        if bad:
            wrong_labels.append(f"{name}: {bad[0]} != {sorted(want)}")
    check(f"every upstream family is served ({scraper.scrapes} scrapes)", not missing,
          ", ".join(missing))
    check("with upstream's types", not wrong_type, "; ".join(wrong_type))
    check("each has samples during the run", not no_series, ", ".join(no_series))
    check("whose labels are upstream's", not wrong_labels, "; ".join(wrong_labels))
