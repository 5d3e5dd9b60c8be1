#!/usr/bin/env python3
"""E2E: Dovetail run the way an EKS user runs it, from the chart, on its own full local control
plane and its own moto server.

The controller is started with exactly the container's args and environment of the Deployment
that `helm template karpenter charts/dovetail` renders from upstream-style values
(settings.clusterName and settings.interruptionQueue, nothing else: no CLUSTER_ENDPOINT, no CA,
no service CIDR), under the chart's ServiceAccount and RBAC. What a pod on EKS gets from its
surroundings is stood in for, each the real protocol:

  - EKS Pod Identity: the webhook's AWS_CONTAINER_CREDENTIALS_FULL_URI and
    AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE, and an agent on loopback (EksPodIdentityAgent below)
    that answers with expiring credentials only when the Authorization header is the token;
  - IMDSv2 for the region (PUT token, then GET placement/region with it), with no instance role:
    the credentials can only come from Pod Identity;
  - the in-cluster Kubernetes client: a kubeconfig with a token of the chart's ServiceAccount
    (its CA is the one nodes must trust);
  - AWS endpoints: AWS_ENDPOINT_URL names moto, where `eks:CreateCluster` made the cluster;
  - metrics and health ports 0 (other tests run beside this one).

Checks:
  1. The controller discovers the endpoint and service CIDR from eks:DescribeCluster, the CA
     from its Kubernetes client and the DNS IP from Service kube-system/kube-dns, and says so.
  2. The EC2NodeClass is Ready; pending pods go Running on instances that joined as Nodes.
  3. The launch template's user data carries the discovered endpoint, CA, service CIDR and
     DNS IP.
  4. Every credential came from the Pod Identity agent, with the token; IMDS was asked for the
     region only.
  5. `dovetail explain` sizes a pod's ephemeral storage with each NodePool's EC2NodeClass.
  6. The same install with settings.isolatedVPC=true makes no Pricing API call (the first run
     makes some), and still launches.

Usage: eks_user_e2e_test.py DOVETAIL_BINARY. Needs KUBECONFIG, DOVETAIL_K8S_BIN (set by
dovetail_kube_test), DOVETAIL_MOTO_DIR (the moto fixture) and HELM. Prints `N passed, M failed`.
"""
from __future__ import annotations

import base64
import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from aws_local import REGION, Aws, _boto3, Joiner, Kubectl, node_class_yaml, node_pool_yaml, seed
from e2e_common import KUBECONFIG, KUBECTL, ROOT, Tally, apply_crds, check, condition, get, \
    kubectl, wait_established, wait_for

RUN_ID = uuid.uuid4().hex[:6]
CLUSTER = f"eks-{RUN_ID}"
NS = "karpenter"  # the guide's namespace and release
RELEASE = "karpenter"
APP_NS = f"eks-user-{RUN_ID}"
SERVICE_CIDR = "10.100.0.0/16"
REPLICAS = 3
HELM = os.environ.get("HELM", "helm")
CHART = ROOT / "charts" / "dovetail"


class StandIn(ThreadingHTTPServer):
    """A loopback HTTP server that records every request (method, path, headers)."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        super().__init__(("127.0.0.1", 0), handler)
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        pass

    def _reply(self, status: int, body: str, content_type: str = "text/plain") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> None:
        self.server.requests.append((self.command, self.path, dict(self.headers)))


class EksPodIdentityAgent(_Handler):
    """The EKS Pod Identity agent's credentials endpoint: GET /v1/credentials with the
    projected token as Authorization; the container-credentials JSON, expiring in an hour."""

    token = ""

    def do_GET(self) -> None:
        self._record()
        if self.path != "/v1/credentials":
            return self._reply(404, "not found")
        if self.headers.get("Authorization") != EksPodIdentityAgent.token:
            return self._reply(401, json.dumps({"message": "bad token"}), "application/json")
        expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        self._reply(200, json.dumps({
            "AccessKeyId": "ASIAPODIDENTITYTEST", "SecretAccessKey": "pod-identity-secret",
            "Token": "pod-identity-session", "AccountId": "123456789012",
            "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}), "application/json")


class Imds(_Handler):
    """IMDSv2 with a region and no instance role."""

    def do_PUT(self) -> None:
        self._record()
        if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self._reply(200, "imds-session-token")
        self._reply(400, "")

    def do_GET(self) -> None:
        self._record()
        if self.headers.get("X-aws-ec2-metadata-token") != "imds-session-token":
            return self._reply(401, "")
        if self.path == "/latest/meta-data/placement/region":
            return self._reply(200, REGION)
        self._reply(404, "")  # no iam/security-credentials: no instance role


def render_chart(settings: dict[str, str]) -> list[dict]:
    import yaml
    args = [HELM, "template", RELEASE, str(CHART), "--namespace", NS]
    for k, v in settings.items():
        args += ["--set-string" if isinstance(v, str) else "--set", f"settings.{k}={v}"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def controller_container(docs: list[dict]) -> dict:
    dep = next(d for d in docs if d["kind"] == "Deployment")
    return dep["spec"]["template"]["spec"]["containers"][0]


def sa_kubeconfig(sa: str, work: Path) -> tuple[Path, str]:
    """A kubeconfig with a token of the ServiceAccount (what the in-cluster client reads), and
    the cluster's CA (PEM)."""
    token = kubectl("create", "token", sa, "-n", NS, "--duration=1h").stdout.strip()
    admin = json.loads(kubectl("config", "view", "--raw", "--minify", "-o", "json").stdout)
    cluster = admin["clusters"][0]["cluster"]
    ca = cluster.get("certificate-authority-data", "")
    if not ca and cluster.get("certificate-authority"):
        ca = base64.b64encode(Path(cluster["certificate-authority"]).read_bytes()).decode()
    path = work / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}]}))
    return path, base64.b64decode(ca).decode()


def pod_env(container: dict, extra: dict[str, str]) -> dict[str, str]:
    """The container's environment as the kubelet gives it (fieldRefs resolved), plus what EKS
    injects. Nothing of the test's own environment leaks in (no AWS keys)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tempfile.gettempdir()}
    for e in container["env"]:
        if "value" in e:
            env[e["name"]] = e["value"]
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            env[e["name"]] = NS
        else:
            raise AssertionError(f"unexpected env source {e}")
    env.update(extra)
    return env


def metric_sum(port: int, name: str, label: str) -> float:
    # A scrape only exposes what the controllers computed (the per-cluster gauges are the
    # metrics.state controller's): it never waits on the catalog.
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + "{") and label in line)


class Controller:
    """`dovetail` with the container's args and a given environment, logging to a file."""

    def __init__(self, binary: str, args: list[str], env: dict[str, str], log_path: Path):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([binary, *args], env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def lines(self, message: str) -> list[dict]:
        return [json.loads(raw) for raw in open(self.log_path) if f'"message":"{message}"' in raw]

    def line(self, message: str) -> dict | None:
        found = self.lines(message)
        return found[0] if found else None

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        self.log.close()
        return self.proc.returncode

    def tail(self, n: int = 40) -> str:
        return "".join(open(self.log_path).readlines()[-n:])


def app_yaml(name: str) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {APP_NS}}}
spec:
  replicas: {REPLICAS}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: app
          image: registry.example/app:1
          resources: {{requests: {{cpu: 500m, memory: 256Mi}}}}
"""


def all_running(name: str) -> bool:
    pods = [p for p in get("pods", "-n", APP_NS, "-l", f"app={name}")["items"]
            if not p["metadata"].get("deletionTimestamp")]
    return len(pods) == REPLICAS and all(p["status"].get("phase") == "Running" for p in pods)


def user_data_of_launch_templates(aws: Aws) -> list[str]:
    out = []
    for lt in aws.ec2.describe_launch_templates()["LaunchTemplates"]:
        if not any(t["Key"] == f"kubernetes.io/cluster/{CLUSTER}" for t in lt.get("Tags", [])):
            continue
        for v in aws.ec2.describe_launch_template_versions(
                LaunchTemplateId=lt["LaunchTemplateId"])["LaunchTemplateVersions"]:
            data = v["LaunchTemplateData"].get("UserData", "")
            if data:
                out.append(base64.b64decode(data).decode())
    return out


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    moto_dir = os.environ.get("DOVETAIL_MOTO_DIR", "")
    endpoint = (Path(moto_dir) / "endpoint").read_text().strip() if moto_dir else ""
    if not endpoint:
        print("DOVETAIL_MOTO_DIR/endpoint missing (run under ctest)")
        return 2
    t_start = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="eks-user-e2e-"))

    # AWS as an EKS user has it: the network, the node role, the queue, and the cluster itself.
    aws = Aws(endpoint)
    s = seed(aws, CLUSTER)
    eks = _boto3().client("eks", endpoint_url=endpoint, region_name=REGION,
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    cluster = eks.create_cluster(
        name=CLUSTER, roleArn="arn:aws:iam::123456789012:role/eks-cluster",
        resourcesVpcConfig={"subnetIds": sorted(s.subnets.values())},
        kubernetesNetworkConfig={"serviceIpv4Cidr": SERVICE_CIDR})["cluster"]
    eks_endpoint = cluster["endpoint"]
    print(f"moto {endpoint}: EKS cluster {CLUSTER} at {eks_endpoint}")

    # The cluster: CRDs (the chart's), the chart's RBAC and ServiceAccount, kube-dns.
    apply_crds()
    wait_established(lambda *a: kubectl(*a, check_rc=False).returncode == 0, ("ec2nodeclasses.karpenter.k8s.aws",))
    kubectl("create", "namespace", NS, check_rc=False)
    kubectl("create", "namespace", APP_NS)
    settings = {"clusterName": CLUSTER, "interruptionQueue": s.queue}
    docs = render_chart(settings)
    rbac = [d for d in docs if d["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                             "Role", "RoleBinding")]
    kubectl("apply", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in rbac))
    dns = kubectl("get", "service", "kube-dns", "-n", "kube-system", "-o", "json", check_rc=False)
    if dns.returncode != 0:
        kubectl("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
            "spec": {"selector": {"k8s-app": "kube-dns"},
                     "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]}}))
    dns_ip = get("service", "kube-dns", "-n", "kube-system")["spec"]["clusterIP"]
    kubectl("apply", "-f", "-", stdin=node_class_yaml(s, CLUSTER))
    kubectl("apply", "-f", "-", stdin=node_pool_yaml(CLUSTER, CLUSTER))

    sa = next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]["name"]
    check("the guide's install gives the ServiceAccount karpenter/karpenter", sa == "karpenter", sa)
    kubeconfig, kube_ca = sa_kubeconfig(sa, work)

    # What EKS gives the pod: Pod Identity's env and token file, IMDS.
    token_file = work / "eks-pod-identity-token"
    EksPodIdentityAgent.token = f"eyJ.pod-identity-{RUN_ID}"
    token_file.write_text(EksPodIdentityAgent.token)
    agent, imds = StandIn(EksPodIdentityAgent), StandIn(Imds)
    injected = {
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": f"{agent.url}/v1/credentials",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": str(token_file),
        "AWS_EC2_METADATA_SERVICE_ENDPOINT": imds.url,
        "AWS_ENDPOINT_URL": endpoint,
        "KUBECONFIG": str(kubeconfig),
        "METRICS_PORT": "0", "HEALTH_PROBE_PORT": "0",
    }
    container = controller_container(docs)
    env = pod_env(container, injected)
    for unset in ("CLUSTER_ENDPOINT", "CLUSTER_CA_BUNDLE", "DOVETAIL_CLUSTER_CIDR", "AWS_REGION",
                  "AWS_ACCESS_KEY_ID", "AWS_ROLE_ARN"):
        check(f"the rendered Deployment sets no {unset}", unset not in env)

    joiner_log = open(work / "joiner.log", "w")
    joiner = Joiner(aws, CLUSTER, Kubectl(KUBECONFIG, KUBECTL), boot_seconds=3.0,
                    log=lambda m: (joiner_log.write(f"{time.strftime('%H:%M:%S')} {m}\n"), joiner_log.flush()))
    _, stop_joiner = joiner.start(interval=0.5)
    controller = Controller(binary, container.get("args", []), env, work / "controller.log")
    print(f"controller pid {controller.proc.pid}, log {controller.log_path}")
    try:
        first_run(aws, s, controller, kube_ca, dns_ip, eks_endpoint, agent, imds)
        rc = controller.stop()
        check("SIGTERM stops the controller with exit status 0", rc == 0, str(rc))
        explain_per_class(binary, s)
        isolated_run(binary, settings, injected, work)
    finally:
        stop_joiner.set()
        if controller.proc.poll() is None:
            controller.stop()
        if Tally.failed:
            print("--- controller log (tail)")
            print(controller.tail(60))
        joiner_log.close()
    print(f"      total {time.monotonic() - t_start:.0f} s")
    print(f"{Tally.passed} passed, {Tally.failed} failed")
    return 1 if Tally.failed else 0


def first_run(aws: Aws, s, controller: Controller, kube_ca: str, dns_ip: str, eks_endpoint: str,
              agent: StandIn, imds: StandIn) -> None:
    # 1. Discovery at start-up.
    if not check("the controller starts and logs where each bootstrap value came from",
                 wait_for("the bootstrap log lines", lambda: len(controller.lines("node bootstrap")) >= 4,
                          controller.proc, 60)):
        return
    sources = [line.get("source", "") for line in controller.lines("node bootstrap")]
    print(f"      node bootstrap: {sources}")
    check("endpoint: eks:DescribeCluster", "endpoint: eks:DescribeCluster" in sources, str(sources))
    check("CA bundle: the controller's Kubernetes client",
          "CA bundle: the controller's Kubernetes client" in sources, str(sources))
    check("service CIDR: eks:DescribeCluster", "service CIDR: eks:DescribeCluster" in sources, str(sources))
    check("DNS IP: Service kube-system/kube-dns", "DNS IP: Service kube-system/kube-dns" in sources, str(sources))

    # 2. The class and the pods.
    def class_ready() -> bool:
        return condition(get("ec2nodeclass", CLUSTER), "Ready") == "True"
    if not check("the EC2NodeClass resolves Ready", wait_for("EC2NodeClass Ready", class_ready, controller.proc, 90)):
        print("      ", get("ec2nodeclass", CLUSTER).get("status"))
        return
    kubectl("apply", "-f", "-", stdin=app_yaml("app"))
    if not check("every pod runs on instances that joined as Nodes",
                 wait_for("all pods Running", lambda: all_running("app"), controller.proc, 150)):
        print(kubectl("get", "nodeclaims,nodes", "-o", "wide").stdout)
        return
    claims = [c for c in get("nodeclaims")["items"]
              if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == CLUSTER]
    nodes = {n["metadata"]["name"]: n for n in get("nodes")["items"]}
    for c in claims:
        node = nodes.get(c.get("status", {}).get("nodeName", ""))
        check(f"{c['metadata']['name']}'s Node has its instance's providerID",
              node is not None and node["spec"].get("providerID") == c["status"].get("providerID"))

    # 3. User data: what was discovered.
    user_data = user_data_of_launch_templates(aws)
    if check("launch templates with user data exist for the cluster", bool(user_data)):
        ca_b64 = base64.b64encode(kube_ca.encode()).decode()
        for what, value in (("the endpoint from eks:DescribeCluster", f'"apiServerEndpoint": "{eks_endpoint}"'),
                            ("the CA of the Kubernetes client", ca_b64),
                            ("the service CIDR from eks:DescribeCluster", SERVICE_CIDR),
                            ("the DNS IP of kube-dns", dns_ip)):
            check(f"the user data carries {what}", all(value in u for u in user_data),
                  user_data[0][:1500])

    # 4. Credentials.
    creds = [r for r in agent.requests if r[1] == "/v1/credentials"]
    check("credentials came from the Pod Identity agent", bool(creds), str(agent.requests[:3]))
    check("every request to the agent carried the token",
          all(h.get("Authorization") == EksPodIdentityAgent.token for _, _, h in creds))
    paths = {p for _, p, _ in imds.requests}
    check("IMDS was asked for the region", "/latest/meta-data/placement/region" in paths, str(paths))
    check("IMDS was never asked for instance-role credentials",
          not any("security-credentials" in p for p in paths), str(paths))
    ports = controller.line("serving") or {}
    if ports.get("metricsPort"):
        calls = metric_sum(ports["metricsPort"], "dovetail_aws_api_calls_total", 'service="EKS"')
        check("eks:DescribeCluster was called", calls >= 1, str(calls))
        pricing = metric_sum(ports["metricsPort"], "dovetail_aws_api_calls_total", 'service="Pricing"')
        check("without isolatedVPC, the Pricing API is called", pricing >= 1, str(pricing))
    kubectl("delete", "deployment", "app", "-n", APP_NS, "--wait=false")


def explain_per_class(binary: str, s) -> None:
    """5. `dovetail explain` prices and sizes with the EC2NodeClass of each NodePool: a pod asking
    for 50Gi of ephemeral storage is unschedulable with the class's default 20Gi root volume,
    launchable once a NodePool's class has a 100Gi one."""
    kubectl("apply", "-f", "-", stdin=f"""
apiVersion: v1
kind: Pod
metadata: {{name: scratch, namespace: {APP_NS}}}
spec:
  containers:
    - name: c
      image: registry.example/app:1
      resources: {{requests: {{cpu: 100m, memory: 128Mi, ephemeral-storage: 50Gi}}}}
""")

    def explain() -> dict:
        r = subprocess.run([binary, "explain", "pod", f"{APP_NS}/scratch", "-o", "json",
                            "--kubeconfig", KUBECONFIG], capture_output=True, text=True, timeout=120)
        return json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr}
    out = explain()
    check("explain: 50Gi of ephemeral storage is unschedulable with a 20Gi root volume",
          out.get("verdict") == "unschedulable" and "ephemeral-storage" in json.dumps(out),
          json.dumps(out)[:600])
    big = f"{CLUSTER}-big"
    kubectl("apply", "-f", "-", stdin=node_class_yaml(s, big) + """  blockDeviceMappings:
    - deviceName: /dev/xvda
      rootVolume: true
      ebs: {volumeSize: 100Gi, volumeType: gp3}
""")
    kubectl("apply", "-f", "-", stdin=node_pool_yaml(big, big))
    out = explain()
    check("explain: launchable once a NodePool's class has a 100Gi root volume",
          out.get("verdict") == "launchable" and big in json.dumps(out), json.dumps(out)[:600])
    kubectl("delete", "pod", "scratch", "-n", APP_NS, "--wait=false")
    kubectl("delete", "nodepool", big)
    kubectl("delete", "ec2nodeclass", big)


def isolated_run(binary: str, settings: dict, injected: dict, work: Path) -> None:
    """6. settings.isolatedVPC=true: no Pricing API call; launches still work."""
    docs = render_chart({**settings, "isolatedVPC": True})
    container = controller_container(docs)
    env = pod_env(container, injected)
    check("isolatedVPC reaches ISOLATED_VPC=true", env.get("ISOLATED_VPC") == "true", str(env.get("ISOLATED_VPC")))
    controller = Controller(binary, container.get("args", []), env, work / "controller-isolated.log")
    try:
        ok = wait_for("the isolated controller serving", lambda: controller.line("serving") is not None,
                      controller.proc, 60)
        kubectl("apply", "-f", "-", stdin=app_yaml("isolated"))
        ok = ok and check("isolated: pods go Running",
                          wait_for("isolated pods Running", lambda: all_running("isolated"), controller.proc, 150))
        port = (controller.line("serving") or {}).get("metricsPort")
        if check("isolated: metrics are served", bool(port)):
            pricing = metric_sum(port, "dovetail_aws_api_calls_total", 'service="Pricing"')
            ec2 = metric_sum(port, "dovetail_aws_api_calls_total", 'service="EC2"')
            check("isolated: no Pricing API call", pricing == 0 and ec2 > 0, f"pricing {pricing}, ec2 {ec2}")
    finally:
        rc = controller.stop()
        check("isolated: SIGTERM exits 0", rc == 0, str(rc))
        if Tally.failed:
            print(controller.tail(30))


if __name__ == "__main__":
    sys.exit(main())
