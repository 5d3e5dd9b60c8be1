#!/usr/bin/env python3
"""A real, local Kubernetes control plane for Dovetail's integration and e2e tests.

    cluster.py up   --dir DIR [--scheduler] [--controller-manager] [--kwok] [--all] [--timeout S]
    cluster.py down --dir DIR [--grace S]
    cluster.py env  --dir DIR
    cluster.py status --dir DIR
    cluster.py restart-apiserver --dir DIR [--grace S] [--timeout S]

`up` builds (or reuses) the binaries with tools/k8s/build, generates a CA and certificates with the
`openssl` CLI, starts etcd and kube-apiserver (and on request kube-scheduler,
kube-controller-manager and kwok) on free 127.0.0.1 ports, each in its own session/process group,
waits until each one is ready, and writes DIR/kubeconfig (admin, O=system:masters) and
DIR/state.json (pids, ports, logs). Logs go to DIR/logs/<component>.log, etcd data to DIR/etcd.
If anything fails, `up` stops what it started and exits non-zero. `--apiserver-arg=--flag=value`
(repeatable) appends a flag to kube-apiserver's command line (e.g. per-fixture watch-cache sizes).

`restart-apiserver` stops kube-apiserver (SIGTERM, SIGKILL after the grace period) and starts it
again with the argv recorded in DIR/state.json (same port, certificates and etcd), then waits for
/readyz. etcd and the other components keep running. Tests use it to prove that watches survive
an API server restart.

`down` stops everything recorded in DIR/state.json, plus any process still running from the bin dir
whose command line names DIR (covers an `up` killed halfway): SIGTERM to the process group, then
SIGKILL after the grace period. It is idempotent.

Standard library only (plus the `openssl` command).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build"
VERSIONS = HERE / "versions.env"

# Nodes carrying this label are kept Ready by kwok and their pods are "run" by it.
KWOK_NODE_LABEL = "kwok.x-k8s.io/node=fake"
SERVICE_CIDR = "10.96.0.0/16"
KWOK_POD_CIDR = "10.244.0.1/16"
SERVICE_IP = "10.96.0.1"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"

COMPONENT_ORDER = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]
# Subpaths of DIR owned by the harness; `up` removes exactly these before starting afresh.
OWNED = ["etcd", "logs", "pki", "kwok", "kcm-certs", "scheduler-certs", "kubeconfig", "state.json"]


class HarnessError(Exception):
    pass


def log(msg: str) -> None:
    print(f"cluster.py: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------- helpers


def read_versions() -> dict[str, str]:
    out = {}
    for line in VERSIONS.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip().strip('"').strip("'")
    return out


def bin_dir() -> Path:
    out = subprocess.run([str(BUILD), "--print-bin-dir"], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


def ensure_binaries() -> Path:
    # Quiet no-op when everything is cached; otherwise its progress goes to our stderr.
    rc = subprocess.run([str(BUILD)], stdin=subprocess.DEVNULL, stdout=sys.stderr).returncode
    if rc != 0:
        raise HarnessError(f"{BUILD} failed with exit code {rc}")
    return bin_dir()


def free_ports(n: int) -> list[int]:
    """n distinct free loopback ports (bound to port 0, then released just before use)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def proc_start_time(pid: int) -> str | None:
    """Start time (clock ticks since boot) of pid, or None if it is gone / a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return fields[19]


def alive(pid: int, start_time: str | None) -> bool:
    st = proc_start_time(pid)
    return st is not None and (start_time is None or st == start_time)


def tail(path: Path, n: int = 30) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])


def openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise HarnessError(f"openssl {' '.join(args)} failed:\n{r.stderr}")


# ------------------------------------------------------------------------------------------ PKI


def make_pki(pki: Path) -> None:
    if shutil.which("openssl") is None:
        raise HarnessError("the `openssl` command is required (apt-get install openssl)")
    pki.mkdir(parents=True, exist_ok=True)

    def genkey(name: str) -> None:
        # ECDSA P-256: generated in milliseconds (RSA keys would add seconds to every `up`).
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", name, cwd=pki)

    def ca(name: str, cn: str) -> None:
        genkey(f"{name}.key")
        openssl(
            "req", "-x509", "-new", "-key", f"{name}.key", "-sha256", "-days", "3650", "-subj",
            f"/CN={cn}", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
            "-out", f"{name}.crt", cwd=pki,
        )

    ca("ca", "dovetail-test-ca")
    # Separate CA for the aggregation layer (requestheader authentication), as kubeadm does.
    ca("front-proxy-ca", "dovetail-test-front-proxy-ca")

    def leaf(name: str, subj: str, ext: str, signer: str = "ca") -> None:
        genkey(f"{name}.key")
        openssl("req", "-new", "-key", f"{name}.key", "-subj", subj, "-out", f"{name}.csr", cwd=pki)
        (pki / f"{name}.ext").write_text(ext)
        openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", f"{signer}.crt", "-CAkey", f"{signer}.key",
            "-CAcreateserial", "-sha256", "-days", "3650", "-extfile", f"{name}.ext",
            "-out", f"{name}.crt", cwd=pki,
        )
        (pki / f"{name}.csr").unlink()
        (pki / f"{name}.ext").unlink()

    sans = ",".join(
        ["IP:127.0.0.1", f"IP:{SERVICE_IP}", "DNS:localhost", "DNS:kubernetes",
         "DNS:kubernetes.default", "DNS:kubernetes.default.svc",
         "DNS:kubernetes.default.svc.cluster.local"]
    )
    leaf(
        "apiserver", "/CN=kube-apiserver",
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
        f"extendedKeyUsage=serverAuth\nsubjectAltName={sans}\n",
    )
    leaf(
        "admin", "/O=system:masters/CN=kubernetes-admin",
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=clientAuth\n",
    )
    leaf(
        "front-proxy-client", "/CN=front-proxy-client",
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=clientAuth\n", signer="front-proxy-ca",
    )
    # Service-account token signing key pair.
    genkey("sa.key")
    openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)
    for f in pki.iterdir():
        if f.suffix == ".key":
            f.chmod(0o600)


def write_kubeconfig(path: Path, pki: Path, server: str) -> None:
    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    text = f"""apiVersion: v1
kind: Config
clusters:
- name: dovetail
  cluster:
    server: {server}
    certificate-authority-data: {b64("ca.crt")}
users:
- name: admin
  user:
    client-certificate-data: {b64("admin.crt")}
    client-key-data: {b64("admin.key")}
contexts:
- name: dovetail
  context:
    cluster: dovetail
    user: admin
current-context: dovetail
preferences: {{}}
"""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.chmod(0o600)
    tmp.replace(path)


# ---------------------------------------------------------------------------------- readiness


def http_get(url_host: str, port: int, path: str, tls: ssl.SSLContext | None) -> tuple[int, str]:
    if tls is None:
        conn = http.client.HTTPConnection(url_host, port, timeout=5)
    else:
        conn = http.client.HTTPSConnection(url_host, port, timeout=5, context=tls)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    finally:
        conn.close()


def admin_tls(pki: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    return ctx


def insecure_tls() -> ssl.SSLContext:
    # kube-scheduler / kube-controller-manager serve /healthz with a self-signed certificate.
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


# ------------------------------------------------------------------------------------ cluster


class Cluster:
    def __init__(self, directory: Path):
        self.dir = directory.resolve()
        self.state_path = self.dir / "state.json"
        self.logs = self.dir / "logs"
        self.pki = self.dir / "pki"
        self.kubeconfig = self.dir / "kubeconfig"
        self.state: dict = {}
        self.children: dict[str, subprocess.Popen] = {}

    # --- state
    def load_state(self) -> dict:
        try:
            return json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            return {}

    def save_state(self) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=2) + "\n")
        tmp.replace(self.state_path)

    # --- processes
    def start(self, name: str, argv: list[str], ports: dict[str, int], env: dict | None = None) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        logf = self.logs / f"{name}.log"
        with open(logf, "wb") as out:
            out.write(f"# {' '.join(argv)}\n".encode())
            out.flush()
            p = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                cwd=self.dir, start_new_session=True, env={**os.environ, **(env or {})},
            )
        self.children[name] = p
        self.state["components"][name] = {
            "pid": p.pid, "pgid": p.pid, "start_time": proc_start_time(p.pid),
            "ports": ports, "log": str(logf), "argv": argv,
        }
        self.save_state()

    def wait_ready(self, name: str, probe, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = "not probed"
        while True:
            p = self.children[name]
            if p.poll() is not None:
                raise HarnessError(
                    f"{name} exited with code {p.returncode} before becoming ready; "
                    f"last lines of {self.logs / (name + '.log')}:\n{tail(self.logs / (name + '.log'))}"
                )
            try:
                ok, last = probe()
                if ok:
                    return
            except (OSError, http.client.HTTPException, ssl.SSLError) as e:
                last = f"{type(e).__name__}: {e}"
            if time.monotonic() > deadline:
                raise HarnessError(
                    f"{name} not ready after {timeout:.0f}s (last probe: {last.strip()[:500]}); "
                    f"last lines of {self.logs / (name + '.log')}:\n{tail(self.logs / (name + '.log'))}"
                )
            time.sleep(0.25)

    # --- up
    def up(self, want: set[str], timeout: float, apiserver_args: list[str] | None = None) -> None:
        old = self.load_state()
        if any(alive(c["pid"], c.get("start_time")) for c in old.get("components", {}).values()):
            log(f"a cluster is already running in {self.dir}; stopping it first")
        # Also stops strays of an earlier `up` that died before recording them.
        stop_all(self.dir, old, grace=10.0, quiet=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        for name in OWNED:
            p = self.dir / name
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.exists() or p.is_symlink():
                p.unlink()

        bins = ensure_binaries()
        versions = read_versions()
        for c in ["etcd", "kube-apiserver", *sorted(want)]:
            if not (bins / c).is_file():
                raise HarnessError(f"missing binary {bins / c}")
        self.state = {
            "dir": str(self.dir), "bin_dir": str(bins), "versions": versions, "status": "starting",
            "kubeconfig": str(self.kubeconfig), "components": {}, "started_at": time.time(),
            "manager_pid": os.getpid(),
        }
        self.save_state()

        make_pki(self.pki)
        (etcd_client, etcd_peer, api, kcm, sched, kwok) = free_ports(6)

        # etcd
        etcd_dir = self.dir / "etcd"
        etcd_dir.mkdir(mode=0o700)
        self.start("etcd", [
            str(bins / "etcd"), "--name=dovetail", f"--data-dir={etcd_dir}",
            f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
            f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
            f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-cluster=dovetail=http://127.0.0.1:{etcd_peer}",
            "--initial-cluster-state=new", "--log-level=warn",
            # Test cluster: trade durability for speed on a small disk/CPU budget.
            "--unsafe-no-fsync", "--quota-backend-bytes=2147483648",
        ], {"client": etcd_client, "peer": etcd_peer})

        def etcd_probe():
            code, body = http_get("127.0.0.1", etcd_client, "/health", None)
            return code == 200 and '"true"' in body, body

        self.wait_ready("etcd", etcd_probe, timeout)

        # kube-apiserver. Admission plugins that only work together with controllers of the
        # controller manager are turned off when it is not running (see README).
        disabled_admission = [] if "kube-controller-manager" in want else ["ServiceAccount", "TaintNodesByCondition"]
        api_argv = [
            str(bins / "kube-apiserver"),
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={api}",
            # The "kubernetes" Endpoints may not hold a loopback address: do not reconcile them.
            "--endpoint-reconciler-type=none",
            f"--etcd-servers=http://127.0.0.1:{etcd_client}",
            f"--client-ca-file={self.pki / 'ca.crt'}",
            f"--tls-cert-file={self.pki / 'apiserver.crt'}",
            f"--tls-private-key-file={self.pki / 'apiserver.key'}",
            "--authorization-mode=Node,RBAC",
            f"--service-account-issuer={SA_ISSUER}",
            f"--service-account-key-file={self.pki / 'sa.pub'}",
            f"--service-account-signing-key-file={self.pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            # Aggregation layer (also stops the "missing requestheader-client-ca-file" errors of
            # kube-scheduler and kube-controller-manager).
            f"--requestheader-client-ca-file={self.pki / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={self.pki / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={self.pki / 'front-proxy-client.key'}",
            "--enable-aggregator-routing=true",  # no kube-proxy: reach aggregated APIs by endpoint
            "--allow-privileged=true", "--profiling=false", "--v=1",
        ]
        if disabled_admission:
            api_argv.append(f"--disable-admission-plugins={','.join(disabled_admission)}")
        api_argv.extend(apiserver_args or [])
        self.start("kube-apiserver", api_argv, {"secure": api})
        self.state["server"] = f"https://127.0.0.1:{api}"
        self.state["disabled_admission_plugins"] = disabled_admission
        write_kubeconfig(self.kubeconfig, self.pki, self.state["server"])
        tls = admin_tls(self.pki)

        def api_probe():
            code, body = http_get("127.0.0.1", api, "/readyz", tls)
            return code == 200, body

        self.wait_ready("kube-apiserver", api_probe, timeout)
        kc = str(self.kubeconfig)

        if "kube-controller-manager" in want:
            certs = self.dir / "kcm-certs"
            certs.mkdir()
            self.start("kube-controller-manager", [
                str(bins / "kube-controller-manager"),
                f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}",
                f"--authorization-kubeconfig={kc}",
                "--bind-address=127.0.0.1", f"--secure-port={kcm}", f"--cert-dir={certs}",
                "--leader-elect=false", "--use-service-account-credentials=true",
                f"--service-account-private-key-file={self.pki / 'sa.key'}",
                f"--root-ca-file={self.pki / 'ca.crt'}",
                f"--cluster-signing-cert-file={self.pki / 'ca.crt'}",
                f"--cluster-signing-key-file={self.pki / 'ca.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allocate-node-cidrs=false", "--cluster-name=dovetail",
                # Every default controller; the cloud ones are not in kube-controller-manager's
                # default set, bootstrapsigner/tokencleaner are only for kubeadm joins.
                "--controllers=*", "--profiling=false", "--v=1",
            ], {"secure": kcm})

        if "kube-scheduler" in want:
            certs = self.dir / "scheduler-certs"
            certs.mkdir()
            self.start("kube-scheduler", [
                str(bins / "kube-scheduler"),
                f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}",
                f"--authorization-kubeconfig={kc}",
                "--bind-address=127.0.0.1", f"--secure-port={sched}", f"--cert-dir={certs}",
                "--leader-elect=false", "--profiling=false", "--v=1",
            ], {"secure": sched})

        if "kwok" in want:
            kwok_dir = self.dir / "kwok"
            kwok_dir.mkdir()
            self.start("kwok", [
                str(bins / "kwok"), f"--kubeconfig={kc}",
                # The annotation and label selectors are ANDed by kwok; select on the label
                # only so every node labelled kwok.x-k8s.io/node=fake is managed.
                "--manage-all-nodes=false",
                f"--manage-nodes-with-label-selector={KWOK_NODE_LABEL}",
                f"--server-address=127.0.0.1:{kwok}", "--node-ip=127.0.0.1",
                # Pod IPs of nodes without spec.podCIDR come from one pool: kwok's default
                # 10.0.0.1/24 runs dry at 254 pods, far too few for autoscaling tests.
                f"--cidr={KWOK_POD_CIDR}",
                # The kwok binary defaults to 0 here (no node Leases): nodes then depend on status
                # heartbeats alone, ~50 s apart, at the edge of the controller manager's 50 s
                # node-monitor-grace-period. 40 s Leases renewed every 10 s, as kubelet does.
                "--node-lease-duration-seconds=40",
            ], {"server": kwok}, env={
                # Ignore any ~/.kwok/kwok.yaml: kwok then uses its default stages
                # (node-initialize, node-heartbeat, pod-ready, pod-complete, pod-delete).
                "KWOK_WORKDIR": str(kwok_dir),
            })

        insecure = insecure_tls()
        if "kube-controller-manager" in want:
            self.wait_ready("kube-controller-manager", lambda: _ok(http_get(
                "127.0.0.1", kcm, "/healthz", insecure)), timeout)
        if "kube-scheduler" in want:
            self.wait_ready("kube-scheduler", lambda: _ok(http_get(
                "127.0.0.1", sched, "/healthz", insecure)), timeout)
        if "kwok" in want:
            self.wait_ready("kwok", lambda: _ok(http_get("127.0.0.1", kwok, "/healthz", None)), timeout)

        self.state["status"] = "ready"
        self.state["ready_after_s"] = round(time.time() - self.state["started_at"], 1)
        self.save_state()


    # --- restart-apiserver
    def restart_apiserver(self, grace: float, timeout: float) -> float:
        """Stops kube-apiserver and starts it again from its recorded argv; returns the seconds
        it was unavailable (stop + start + ready)."""
        self.state = self.load_state()
        comp = self.state.get("components", {}).get("kube-apiserver")
        if not comp:
            raise HarnessError(f"no kube-apiserver recorded in {self.state_path}")
        etcd = self.state["components"].get("etcd")
        if not etcd or not alive(etcd["pid"], etcd.get("start_time")):
            raise HarnessError("etcd is not running; cannot restart kube-apiserver alone")
        began = time.monotonic()
        if alive(comp["pid"], comp.get("start_time")):
            stop_group([("kube-apiserver", comp["pid"], comp.get("start_time"))], grace)
        # start() truncates the log: keep the previous run's next to it.
        logf = Path(comp["log"])
        if logf.exists():
            logf.replace(logf.with_suffix(".log.prev"))
        self.start("kube-apiserver", comp["argv"], comp["ports"])
        tls = admin_tls(self.pki)
        port = comp["ports"]["secure"]

        def api_probe():
            code, body = http_get("127.0.0.1", port, "/readyz", tls)
            return code == 200, body

        self.wait_ready("kube-apiserver", api_probe, timeout)
        self.state["apiserver_restarts"] = self.state.get("apiserver_restarts", 0) + 1
        self.save_state()
        return time.monotonic() - began


def _ok(resp: tuple[int, str]) -> tuple[bool, str]:
    return resp[0] == 200, resp[1]


# ------------------------------------------------------------------------------------------ down


def stray_pids(directory: Path, bins: Path | None) -> list[tuple[int, str]]:
    """Processes running one of our binaries whose command line mentions DIR."""
    d = str(directory)
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not argv or not argv[0]:
            continue
        exe = argv[0].decode(errors="replace")
        if os.path.basename(exe) not in COMPONENT_ORDER:
            continue
        if bins is not None and os.path.dirname(exe) != str(bins):
            continue
        if any(d + "/" in a.decode(errors="replace") for a in argv[1:]):
            out.append((int(entry.name), os.path.basename(exe)))
    return out


def stop_all(directory: Path, state: dict, grace: float, quiet: bool = False) -> int:
    """Stop recorded components and strays; returns how many were signalled.

    Clients first (kwok, scheduler, controller manager), then kube-apiserver, then etcd: an API
    server whose etcd is already gone hangs in its shutdown instead of exiting on SIGTERM.
    """
    comps = state.get("components", {})
    bins = Path(state["bin_dir"]) if state.get("bin_dir") else None
    targets: list[tuple[str, int, str | None]] = []  # (name, pid == pgid, start_time)
    for name in reversed(COMPONENT_ORDER):
        c = comps.get(name)
        if c and alive(c["pid"], c.get("start_time")):
            targets.append((name, c["pid"], c.get("start_time")))
    known = {t[1] for t in targets}
    for pid, exe in stray_pids(directory, bins):
        if pid not in known:
            targets.append((f"{exe} (stray pid {pid})", pid, proc_start_time(pid)))
    if not targets:
        return 0
    if not quiet:
        log("stopping " + ", ".join(t[0] for t in targets))

    def tier(name: str) -> int:
        return 2 if name.startswith("etcd") else 1 if name.startswith("kube-apiserver") else 0

    for level in (0, 1, 2):
        group = [t for t in targets if tier(t[0]) == level]
        if group:
            stop_group(group, grace)
    return len(targets)


def stop_group(group: list[tuple[str, int, str | None]], grace: float) -> None:
    def signal_all(sig: int) -> None:
        for _name, pid, st in group:
            if not alive(pid, st):
                continue
            try:
                # Our components lead their own process group (start_new_session); kill the group.
                if os.getpgid(pid) == pid:
                    os.killpg(pid, sig)
                else:
                    os.kill(pid, sig)
            except ProcessLookupError:
                pass

    signal_all(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(pid, st) for _, pid, st in group):
        time.sleep(0.05)
    left = [t for t in group if alive(t[1], t[2])]
    if left:
        log("SIGKILL after grace period: " + ", ".join(t[0] for t in left))
        signal_all(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(pid, st) for _, pid, st in left):
            time.sleep(0.05)
        still = [t[0] for t in left if alive(t[1], t[2])]
        if still:
            raise HarnessError("could not stop: " + ", ".join(still))


# ------------------------------------------------------------------------------------------- CLI


def cmd_up(args) -> int:
    want: set[str] = set()
    if args.all or args.scheduler:
        want.add("kube-scheduler")
    if args.all or args.controller_manager:
        want.add("kube-controller-manager")
    if args.all or args.kwok:
        want.add("kwok")
    cluster = Cluster(Path(args.dir))

    def on_signal(signum, _frame):
        raise HarnessError(f"interrupted by signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        cluster.up(want, args.timeout, args.apiserver_arg)
    except BaseException as e:  # noqa: BLE001 - clean up on anything, including Ctrl-C
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        msg = str(e) if isinstance(e, HarnessError) else f"{type(e).__name__}: {e}"
        log(f"up failed: {msg}")
        log("stopping what was started")
        try:
            stop_all(cluster.dir, cluster.load_state() or cluster.state, grace=10.0, quiet=True)
            for p in cluster.children.values():
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            if cluster.state:
                cluster.state["status"] = "failed"
                cluster.state["error"] = msg
                cluster.save_state()
        except Exception as e2:  # noqa: BLE001
            log(f"cleanup also failed: {e2}")
        return 1
    s = cluster.state
    parts = ", ".join(f"{n} pid {c['pid']}" for n, c in s["components"].items())
    log(f"ready in {s['ready_after_s']}s: {s['server']} ({parts})")
    print(f"export KUBECONFIG={cluster.kubeconfig}")
    return 0


def cmd_down(args) -> int:
    directory = Path(args.dir).resolve()
    cluster = Cluster(directory)
    state = cluster.load_state()
    if not state and not directory.exists():
        return 0
    try:
        n = stop_all(directory, state, grace=args.grace)
    except HarnessError as e:
        log(str(e))
        return 1
    if state:
        state["status"] = "down"
        cluster.state = state
        cluster.save_state()
    if n:
        log(f"stopped {n} process group(s) in {directory}")
    # etcd's data (its WAL preallocates 64 MB) is useless once the cluster is down and `up` wipes
    # it anyway; the logs stay for post-mortems. A test run leaves one directory per fixture.
    etcd_dir = directory / "etcd"
    if not args.keep_data and etcd_dir.is_dir() and not etcd_dir.is_symlink():
        shutil.rmtree(etcd_dir, ignore_errors=True)
    return 0


def cmd_restart_apiserver(args) -> int:
    cluster = Cluster(Path(args.dir))
    took = cluster.restart_apiserver(args.grace, args.timeout)
    pid = cluster.state["components"]["kube-apiserver"]["pid"]
    log(f"kube-apiserver restarted in {took:.1f}s (pid {pid})")
    return 0


def cmd_env(args) -> int:
    d = Path(args.dir).resolve()
    state = Cluster(d).load_state()
    print(f"export KUBECONFIG={d / 'kubeconfig'}")
    print(f"export DOVETAIL_KUBE_DIR={d}")
    print(f"export DOVETAIL_K8S_BIN={state.get('bin_dir') or bin_dir()}")
    return 0


def cmd_status(args) -> int:
    d = Path(args.dir).resolve()
    state = Cluster(d).load_state()
    if not state:
        print(f"no cluster state in {d}")
        return 1
    ok = state.get("status") == "ready"
    print(f"status: {state.get('status')}  server: {state.get('server')}")
    for name, c in state.get("components", {}).items():
        a = alive(c["pid"], c.get("start_time"))
        ok &= a
        print(f"  {name:24} pid {c['pid']:>7}  {'running' if a else 'NOT RUNNING'}  ports {c['ports']}  log {c['log']}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start a control plane in DIR")
    up.add_argument("--dir", required=True)
    up.add_argument("--scheduler", action="store_true", help="also run kube-scheduler")
    up.add_argument("--controller-manager", action="store_true", help="also run kube-controller-manager")
    up.add_argument("--kwok", action="store_true", help="also run kwok (fake kubelets)")
    up.add_argument("--all", action="store_true", help="scheduler + controller-manager + kwok")
    up.add_argument("--timeout", type=float, default=120.0, help="readiness timeout per component (s)")
    up.add_argument("--apiserver-arg", action="append", default=[], metavar="FLAG",
                    help="extra kube-apiserver flag, e.g. --apiserver-arg=--watch-cache-sizes=configmaps#0")
    up.set_defaults(func=cmd_up)
    down = sub.add_parser("down", help="stop the control plane in DIR (idempotent)")
    down.add_argument("--dir", required=True)
    down.add_argument("--grace", type=float, default=15.0, help="seconds between SIGTERM and SIGKILL")
    down.add_argument("--keep-data", action="store_true", help="keep etcd's data directory")
    down.set_defaults(func=cmd_down)
    env = sub.add_parser("env", help="print shell exports (KUBECONFIG, ...)")
    env.add_argument("--dir", required=True)
    env.set_defaults(func=cmd_env)
    st = sub.add_parser("status", help="show the components and whether they run")
    st.add_argument("--dir", required=True)
    st.set_defaults(func=cmd_status)
    rs = sub.add_parser("restart-apiserver", help="stop kube-apiserver and start it again (same argv)")
    rs.add_argument("--dir", required=True)
    rs.add_argument("--grace", type=float, default=15.0, help="seconds between SIGTERM and SIGKILL")
    rs.add_argument("--timeout", type=float, default=120.0, help="readiness timeout (s)")
    rs.set_defaults(func=cmd_restart_apiserver)
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except HarnessError as e:
        log(f"ERROR: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
