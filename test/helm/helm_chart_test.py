#!/usr/bin/env python3
"""Tests of the Helm chart charts/dovetail, with the helm built by tools/helm/build.

  helm_chart_test.py lint     `helm lint --strict` (aws needs settings.clusterName; kwok not)
  helm_chart_test.py golden   `helm template` of each test/helm/values/<case>.yaml against
                              test/helm/golden/<case>.yaml
  helm_chart_test.py checks   the rendered manifests: hardened securityContext, 2 replicas, PDB,
                              spread, leader election, least-privilege RBAC (no cluster-wide
                              Secrets/ConfigMaps, every resource the controller calls granted),
                              every settings.* value reaching its environment variable, IRSA,
                              Service/ServiceMonitor ports, the PrometheusRule (alerts with
                              runbook anchors in docs/runbooks.md) and the dashboard ConfigMap
  helm_chart_test.py update   regenerate the goldens (review the diff before committing)

HELM names the helm binary (CTest passes the one tools/helm/build made); else
`tools/helm/build --print-bin-dir`/helm. Prints 'N passed, N failed'; exits 1 on a failure.
"""
from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "dovetail"
HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
VALUES = HERE / "values"
# Release and namespace of Karpenter's getting-started guide: the objects are named `karpenter`.
RELEASE, NAMESPACE = "karpenter", "karpenter"
# `helm template` renders for a cluster that serves the Prometheus Operator's CRDs (the
# ServiceMonitor and PrometheusRule render only then); test_monitoring_needs_its_crds drops it.
MONITORING_API = ("--api-versions", "monitoring.coreos.com/v1")

try:
    import yaml  # PyYAML
except ImportError:  # the moto virtualenv (scripts/install-deps) has PyYAML
    venv_python = ROOT / ".cache" / "venv" / "bin" / "python"
    if venv_python.exists() and Path(sys.executable).resolve() != venv_python.resolve():
        os.execv(str(venv_python), [str(venv_python), *sys.argv])
    raise

# settings.* -> (environment variable, read by Dovetail's controller). The upstream names of
# charts/karpenter; the controller reads every one (docs/settings.md says what each does).
SETTINGS_ENV = {
    "batchMaxDuration": ("BATCH_MAX_DURATION", True),
    "batchIdleDuration": ("BATCH_IDLE_DURATION", True),
    "preferencePolicy": ("PREFERENCE_POLICY", True),
    "minValuesPolicy": ("MIN_VALUES_POLICY", True),
    "clusterCABundle": ("CLUSTER_CA_BUNDLE", True),
    "clusterName": ("CLUSTER_NAME", True),
    "clusterEndpoint": ("CLUSTER_ENDPOINT", True),
    "interruptionQueue": ("INTERRUPTION_QUEUE", True),
    "isolatedVPC": ("ISOLATED_VPC", True),
    "eksControlPlane": ("EKS_CONTROL_PLANE", True),
    "vmMemoryOverheadPercent": ("VM_MEMORY_OVERHEAD_PERCENT", True),
    "enableZonalShift": ("ENABLE_ZONAL_SHIFT", True),
    "reservedENIs": ("RESERVED_ENIS", True),
    "ignoreDRARequests": ("IGNORE_DRA_REQUESTS", True),
    "disableClusterStateObservability": ("DISABLE_CLUSTER_STATE_OBSERVABILITY", True),
    "disableDryRun": ("DISABLE_DRY_RUN", True),
    "amiRefreshInterval": ("AMI_REFRESH_INTERVAL", True),
    "subnetRefreshInterval": ("SUBNET_REFRESH_INTERVAL", True),
    "securityGroupRefreshInterval": ("SECURITY_GROUP_REFRESH_INTERVAL", True),
}
# settings.featureGates.* -> gate name in FEATURE_GATES (Dovetail's options.h knows the first six).
FEATURE_GATES = {
    "nodeRepair": "NodeRepair",
    "nodeOverlay": "NodeOverlay",
    "reservedCapacity": "ReservedCapacity",
    "spotToSpotConsolidation": "SpotToSpotConsolidation",
    "staticCapacity": "StaticCapacity",
    "capacityBuffer": "CapacityBuffer",
    "podDeletionCostManagement": "PodDeletionCostManagement",
}
AWS_FEATURE_GATES = {"nodeClassCEL": "NodeClassCEL"}


def helm_binary() -> str:
    if os.environ.get("HELM"):
        return os.environ["HELM"]
    out = subprocess.run([str(ROOT / "tools" / "helm" / "build"), "--print-bin-dir"],
                         check=True, capture_output=True, text=True).stdout.strip()
    return str(Path(out) / "helm")


HELM = helm_binary()


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([HELM, *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def template_text(*args: str, api: tuple[str, ...] = MONITORING_API) -> str:
    return helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, *api, *args).stdout


def render(*args: str, api: tuple[str, ...] = MONITORING_API) -> list[dict]:
    return [d for d in yaml.safe_load_all(template_text(*args, api=api)) if d]


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d.get("kind") == kind]


def one(docs: list[dict], kind: str) -> dict:
    found = by_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def container(docs: list[dict]) -> dict:
    containers = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, containers
    return containers[0]


def env_of(docs: list[dict]) -> dict[str, object]:
    env = {}
    for e in container(docs).get("env", []):
        assert e["name"] not in env, f"env {e['name']} set twice"
        env[e["name"]] = e.get("value", e.get("valueFrom"))
    return env


def controller_cluster_role(docs: list[dict]) -> dict:
    """The ClusterRole bound to the chart's ServiceAccount (not the `-admin` one for people)."""
    bound = {b["roleRef"]["name"] for b in by_kind(docs, "ClusterRoleBinding")}
    roles = [r for r in by_kind(docs, "ClusterRole") if r["metadata"]["name"] in bound]
    assert len(roles) == 1, [r["metadata"]["name"] for r in by_kind(docs, "ClusterRole")]
    return roles[0]


def values_settings() -> dict:
    return yaml.safe_load((CHART / "values.yaml").read_text())["settings"]


# ------------------------------------------------------------------------------------ cases
def test_lint() -> None:
    helm("lint", "--strict", str(CHART), "--set", "settings.clusterName=lint")
    helm("lint", "--strict", str(CHART), "--set", "dovetail.cloudProvider=kwok")
    for case in sorted(VALUES.glob("*.yaml")):
        helm("lint", "--strict", str(CHART), "-f", str(case))


def test_cluster_name_required_for_aws() -> None:
    proc = helm("template", RELEASE, str(CHART), check=False)
    assert proc.returncode != 0, "rendering with the aws provider and no clusterName must fail"
    assert "settings.clusterName" in proc.stderr, proc.stderr
    proc = helm("template", RELEASE, str(CHART), "--set", "dovetail.cloudProvider=gce",
                "--set", "settings.clusterName=x", check=False)
    assert proc.returncode != 0 and "cloudProvider" in proc.stderr, proc.stderr


def test_golden() -> None:
    cases = sorted(VALUES.glob("*.yaml"))
    assert len(cases) >= 3, cases
    failures = []
    for case in cases:
        got = template_text("-f", str(case))
        golden = GOLDEN / case.name
        if not golden.exists():
            failures.append(f"{golden} is missing (run: python3 test/helm/helm_chart_test.py update)")
            continue
        want = golden.read_text()
        if got != want:
            diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                str(golden), f"helm template -f {case.name}"))
            failures.append(diff[:6000])
    extra = {g.name for g in GOLDEN.glob("*.yaml")} - {c.name for c in cases}
    assert not extra, f"goldens without a values file: {sorted(extra)}"
    assert not failures, ("rendered chart differs from the golden; if intended, regenerate with "
                          "`python3 test/helm/helm_chart_test.py update`\n" + "\n".join(failures))


def test_security_context() -> None:
    for args in ([], ["-f", str(VALUES / "settings.yaml")],
                 ["--set", "controller.securityContext.seccompProfile.type=Localhost",
                  "--set", "controller.securityContext.seccompProfile.localhostProfile=x.json",
                  "--set", "controller.securityContext.allowPrivilegeEscalation=true"]):
        docs = render("--set", "settings.clusterName=x", *args)
        sc = container(docs)["securityContext"]
        assert sc["runAsNonRoot"] is True, sc
        assert sc["readOnlyRootFilesystem"] is True, sc
        assert sc["allowPrivilegeEscalation"] is False, sc
        assert sc["privileged"] is False, sc
        assert sc["capabilities"] == {"drop": ["ALL"]}, sc
        assert sc["seccompProfile"]["type"] in ("RuntimeDefault", "Localhost"), sc
        if not args:
            assert sc["seccompProfile"] == {"type": "RuntimeDefault"}, sc
            pod = one(docs, "Deployment")["spec"]["template"]["spec"]
            assert pod["securityContext"]["runAsNonRoot"] is True
            assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
            assert pod.get("hostNetwork") is not True


def test_replicas_pdb_spread() -> None:
    docs = render("--set", "settings.clusterName=x")
    dep = one(docs, "Deployment")
    assert dep["spec"]["replicas"] == 2
    selector = dep["spec"]["selector"]["matchLabels"]
    pod = dep["spec"]["template"]
    assert selector.items() <= pod["metadata"]["labels"].items()
    pdb = one(docs, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == selector
    spread = pod["spec"]["topologySpreadConstraints"]
    assert spread and all(c["labelSelector"]["matchLabels"] == selector for c in spread), spread
    assert any(c["topologyKey"] == "topology.kubernetes.io/zone" for c in spread)
    anti = pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["topologyKey"] == "kubernetes.io/hostname"
    assert anti[0]["labelSelector"]["matchLabels"] == selector
    # Never on a node Dovetail itself manages.
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    exprs = terms["nodeSelectorTerms"][0]["matchExpressions"]
    assert {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"} in exprs
    probes = container(docs)
    assert probes["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert probes["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_leader_election() -> None:
    docs = render("--set", "settings.clusterName=x")
    env = env_of(docs)
    assert str(env.get("DISABLE_LEADER_ELECTION", "false")).lower() not in ("true", "1", "t")
    lease = env["LEADER_ELECTION_NAME"]
    assert lease == "karpenter-leader-election"
    assert env["LEADER_ELECTION_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["SYSTEM_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    role = one(docs, "Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    verbs_any, verbs_named = set(), set()
    for rule in role["rules"]:
        if rule["apiGroups"] == ["coordination.k8s.io"] and rule["resources"] == ["leases"]:
            if rule.get("resourceNames"):
                assert rule["resourceNames"] == [lease], rule
                verbs_named |= set(rule["verbs"])
            else:
                verbs_any |= set(rule["verbs"])
    assert verbs_any == {"create"}, verbs_any  # create cannot be limited by name
    assert {"get", "update"} <= verbs_named, verbs_named
    binding = one(docs, "RoleBinding")
    sa = one(docs, "ServiceAccount")["metadata"]["name"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": NAMESPACE}]
    assert one(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == sa


def grants(rules: list[dict]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        for group in rule.get("apiGroups", []):
            for res in rule.get("resources", []):
                out.setdefault((group, res), set()).update(rule.get("verbs", []))
    return out


def controller_resources() -> dict[str, tuple[str, str]]:
    """resources::kName -> (group, plural) used by the controller's non-test sources."""
    header = (ROOT / "dovetail" / "kube" / "resource.h").read_text()
    table = {m.group(1): (m.group(2), m.group(3)) for m in re.finditer(
        r'inline constexpr Resource (k\w+)\{\s*"([^"]*)",\s*"[^"]*",\s*"([^"]*)"', header)}
    assert "kPods" in table and "kLeases" in table, table
    used = {}
    for src in (ROOT / "dovetail").rglob("*"):
        if src.suffix not in (".cc", ".h") or src.name.endswith("_test.cc"):
            continue
        if src.parent.name == "kube" and src.stem == "resource":
            continue
        if "simulate" in src.parts:  # offline simulation, no API server
            continue
        for name in re.findall(r"resources::(k\w+)", src.read_text()):
            used[name] = table[name]
    return used


def test_rbac_least_privilege() -> None:
    for provider_args in (["--set", "settings.clusterName=x"], ["--set", "dovetail.cloudProvider=kwok"]):
        docs = render(*provider_args)
        cluster_rules = controller_cluster_role(docs)["rules"]
        ns_rules = [r for role in by_kind(docs, "Role") for r in role["rules"]]
        for rule in cluster_rules + ns_rules:
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule.get(field, []), f"wildcard {field}: {rule}"
            assert not rule.get("nonResourceURLs"), rule
        cluster = grants(cluster_rules)
        for (group, res) in cluster:
            assert group != "" or res not in ("secrets", "configmaps", "serviceaccounts/token"), \
                f"cluster-wide {res} access: {cluster[(group, res)]}"
        assert ("coordination.k8s.io", "leases") not in cluster, "leases belong in the Role"
        # Every resource the controller calls has a grant (leases: in the release namespace).
        namespaced = grants(ns_rules)
        for name, (group, plural) in sorted(controller_resources().items()):
            # AWS only: the node class controller, and node bootstrap's kube-dns lookup.
            if name in ("kEC2NodeClasses", "kServices") and "kwok" in provider_args[-1]:
                continue
            granted = cluster.get((group, plural), set()) | namespaced.get((group, plural), set())
            assert granted, f"the controller uses {name} ({group or 'core'}/{plural}); no rule grants it"
        assert cluster[("", "pods/eviction")] == {"create"}
        assert {"patch"} <= cluster[("karpenter.sh", "nodeclaims/status")]
        assert {"create", "delete"} <= cluster[("karpenter.sh", "nodeclaims")]
        if "kwok" in provider_args[-1]:
            assert "create" in cluster[("", "nodes")]
            assert ("karpenter.k8s.aws", "ec2nodeclasses") not in cluster
        else:
            assert "create" not in cluster[("", "nodes")], "only the kwok provider creates Nodes"
            assert {"patch"} <= cluster[("karpenter.k8s.aws", "ec2nodeclasses/status")]
            assert cluster[("", "services")] == {"get"}, "services: read kube-dns only"
    # Extra rules are appended as given.
    docs = render("--set", "settings.clusterName=x", "--set", "additionalClusterRoleRules[0].apiGroups[0]=x.io",
                  "--set", "additionalClusterRoleRules[0].resources[0]=things",
                  "--set", "additionalClusterRoleRules[0].verbs[0]=get")
    assert grants(controller_cluster_role(docs)["rules"])[("x.io", "things")] == {"get"}
    # For people: `admin` aggregates NodePool, NodeClaim and EC2NodeClass management, as
    # upstream's chart does; it is bound to nobody by the chart.
    admin = [r for r in by_kind(docs, "ClusterRole") if r["metadata"]["name"] == f"{RELEASE}-admin"]
    assert len(admin) == 1 and \
        admin[0]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true", admin
    people = grants(admin[0]["rules"])
    assert {"create", "delete", "patch"} <= people[("karpenter.sh", "nodepools")], people
    assert {"create", "delete", "patch"} <= people[("karpenter.k8s.aws", "ec2nodeclasses")], people
    assert all(b["roleRef"]["name"] != admin[0]["metadata"]["name"]
               for b in by_kind(docs, "ClusterRoleBinding"))


def test_settings_reach_env() -> None:
    settings = values_settings()
    leaves = set(settings) - {"featureGates", "awsFeatureGates"}
    assert leaves == set(SETTINGS_ENV), (
        f"values.yaml settings and this test's table differ: only in values {sorted(leaves - set(SETTINGS_ENV))},"
        f" only in the table {sorted(set(SETTINGS_ENV) - leaves)}")
    assert set(settings["featureGates"]) == set(FEATURE_GATES)
    assert set(settings["awsFeatureGates"]) == set(AWS_FEATURE_GATES)

    # Defaults: each non-empty default reaches its variable as a string.
    env = env_of(render("--set", "settings.clusterName=x"))
    for key, (var, _) in SETTINGS_ENV.items():
        default = settings[key]
        if default in ("", None):
            if key != "clusterName":
                assert var not in env, f"settings.{key} is empty by default, yet {var} is set"
            continue
        want = str(default).lower() if isinstance(default, bool) else str(default)
        assert env.get(var) == want, f"settings.{key} default {default!r}: {var}={env.get(var)!r}"
    assert "INTERRUPTION_QUEUE" not in env and "CLUSTER_ENDPOINT" not in env  # empty: not passed

    # A distinct value for every key reaches its variable.
    sets, want = [], {}
    for i, (key, (var, _)) in enumerate(sorted(SETTINGS_ENV.items())):
        default = settings[key]
        if isinstance(default, bool):
            value = str(not default).lower()
            sets += ["--set", f"settings.{key}={value}"]
        else:
            value = f"v{i}-{key}"
            sets += ["--set-string", f"settings.{key}={value}"]
        want[var] = value
    for key in FEATURE_GATES:
        sets += ["--set", f"settings.featureGates.{key}={str(not settings['featureGates'][key]).lower()}"]
    sets += ["--set", "settings.awsFeatureGates.nodeClassCEL=true"]
    env = env_of(render(*sets))
    for var, value in want.items():
        assert env.get(var) == value, f"{var}: want {value!r}, got {env.get(var)!r}"
    gates = dict(kv.split("=") for kv in env["FEATURE_GATES"].split(","))
    for key, gate in FEATURE_GATES.items():
        assert gates[gate] == str(not settings["featureGates"][key]).lower(), (gate, gates)
    assert env["AWS_FEATURE_GATES"] == "NodeClassCEL=true"

    # The documented example: --set settings.featureGates.spotToSpotConsolidation=true.
    env = env_of(render("--set", "settings.clusterName=x",
                        "--set", "settings.featureGates.spotToSpotConsolidation=true"))
    assert "SpotToSpotConsolidation=true" in env["FEATURE_GATES"].split(",")
    assert "ReservedCapacity=true" in env["FEATURE_GATES"].split(",")
    assert env["CLUSTER_NAME"] == "x"

    # The variables marked as read are the controller's (dovetail/operator/options.cc), and so
    # are the chart's own: the cloud provider, log level, ports, leader election.
    options = (ROOT / "dovetail" / "operator" / "options.cc").read_text()
    read = set(re.findall(r'"([A-Z][A-Z0-9_]+)"', options))
    for key, (var, is_read) in SETTINGS_ENV.items():
        assert (var in read) == is_read, f"settings.{key}: {var} read by options.cc is {var in read}"
    for var in ("FEATURE_GATES", "AWS_FEATURE_GATES", "LOG_LEVEL", "LOG_OUTPUT_PATHS",
                "LOG_ERROR_OUTPUT_PATHS", "METRICS_PORT", "HEALTH_PROBE_PORT",
                "DOVETAIL_CLOUD_PROVIDER", "LEADER_ELECTION_NAME", "LEADER_ELECTION_NAMESPACE",
                "SYSTEM_NAMESPACE"):
        assert var in read, var
    env = env_of(render("-f", str(VALUES / "settings.yaml")))
    assert env["LOG_LEVEL"] == "debug" and env["AWS_REGION"] == "eu-west-1"

    # Upstream's log keys: lists joined with commas, as upstream's chart passes them.
    env = env_of(render("--set", "settings.clusterName=x"))
    assert env["LOG_OUTPUT_PATHS"] == "stdout" and env["LOG_ERROR_OUTPUT_PATHS"] == "stderr", env
    env = env_of(render("--set", "settings.clusterName=x",
                        "--set", "logOutputPaths={stdout,/var/log/dovetail.log}"))
    assert env["LOG_OUTPUT_PATHS"] == "stdout,/var/log/dovetail.log", env


def test_instance_type_metrics() -> None:
    # dovetail.instanceTypeMetrics: off by default (no variable, the controller's default false),
    # true reaches DOVETAIL_INSTANCE_TYPE_METRICS, which options.cc reads.
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["dovetail"]["instanceTypeMetrics"] is False
    env = env_of(render("--set", "settings.clusterName=x"))
    assert "DOVETAIL_INSTANCE_TYPE_METRICS" not in env, env
    env = env_of(render("--set", "settings.clusterName=x", "--set", "dovetail.instanceTypeMetrics=true"))
    assert env["DOVETAIL_INSTANCE_TYPE_METRICS"] == "true", env
    options = (ROOT / "dovetail" / "operator" / "options.cc").read_text()
    assert '"DOVETAIL_INSTANCE_TYPE_METRICS"' in options


def test_metrics_bind_address_and_explanations() -> None:
    # dovetail.metricsBindAddress and dovetail.disruptionExplanations: unset by default (the
    # controller's defaults: every IPv4 interface, no /disruption/explanations); set, they reach
    # the variables options.cc reads.
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["dovetail"]["metricsBindAddress"] == ""
    assert values["dovetail"]["disruptionExplanations"] is False
    env = env_of(render("--set", "settings.clusterName=x"))
    assert "DOVETAIL_METRICS_BIND_ADDRESS" not in env, env
    assert "DOVETAIL_DISRUPTION_EXPLANATIONS" not in env, env
    env = env_of(render("--set", "settings.clusterName=x",
                        "--set", "dovetail.metricsBindAddress=127.0.0.1",
                        "--set", "dovetail.disruptionExplanations=true"))
    assert env["DOVETAIL_METRICS_BIND_ADDRESS"] == "127.0.0.1", env
    assert env["DOVETAIL_DISRUPTION_EXPLANATIONS"] == "true", env
    options = (ROOT / "dovetail" / "operator" / "options.cc").read_text()
    assert '"DOVETAIL_METRICS_BIND_ADDRESS"' in options
    assert '"DOVETAIL_DISRUPTION_EXPLANATIONS"' in options


def test_irsa_service_monitor() -> None:
    docs = render("-f", str(VALUES / "settings.yaml"))
    sa = one(docs, "ServiceAccount")
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == \
        "arn:aws:iam::123456789012:role/dovetail-controller"
    assert not by_kind(docs, "ServiceMonitor")
    docs = render("-f", str(VALUES / "servicemonitor.yaml"))
    sm = one(docs, "ServiceMonitor")
    svc = one(docs, "Service")
    port = svc["spec"]["ports"][0]
    assert port["name"] == "http-metrics" and port["port"] == 8080
    assert sm["spec"]["endpoints"][0]["port"] == "http-metrics"
    assert sm["spec"]["endpoints"][0]["interval"] == "30s"
    assert sm["metadata"]["labels"]["release"] == "prometheus"
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    ports = {p["name"]: p["containerPort"] for p in container(docs)["ports"]}
    assert ports == {"http-metrics": 8080, "http": 8081}
    assert svc["spec"]["selector"].items() <= \
        one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"].items()
    # serviceAccount.create=false uses the named account and creates none.
    docs = render("--set", "settings.clusterName=x", "--set", "serviceAccount.create=false",
                  "--set", "serviceAccount.name=existing")
    assert not by_kind(docs, "ServiceAccount")
    assert one(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "existing"


def test_prometheus_rule_and_dashboard() -> None:
    docs = render("-f", str(VALUES / "default.yaml"))
    assert not by_kind(docs, "PrometheusRule") and not by_kind(docs, "ConfigMap"), \
        "monitoring objects must be opt-in"
    docs = render("-f", str(VALUES / "monitoring.yaml"))
    rule = one(docs, "PrometheusRule")
    assert rule["metadata"]["namespace"] == NAMESPACE
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    names = {a["alert"] for a in alerts}
    for wanted in ("DovetailPodsPendingTooLong", "DovetailLaunchFailures",
                   "DovetailInterruptionMessagesSlow", "DovetailConsolidationChurn",
                   "DovetailControllerMemoryHigh"):
        assert wanted in names, f"alert {wanted} missing: {sorted(names)}"
    runbooks = (ROOT / "docs" / "runbooks.md").read_text()
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.+)$", runbooks, re.M)}
    base = "https://example.com/dovetail/docs/runbooks.md#"
    for a in alerts:
        assert a["expr"].strip() and a.get("for"), a
        assert a["labels"]["severity"] in ("warning", "critical"), a
        url = a["annotations"]["runbook_url"]
        assert url.startswith(base), url
        assert url[len(base):] in anchors, f"{a['alert']}: no section #{url[len(base):]}"
        # Dovetail's own metrics are selected by the release namespace (what a ServiceMonitor
        # scrape attaches); the container metrics by namespace, pod and container.
        assert f'namespace="{NAMESPACE}"' in a["expr"], a["expr"]
    cm = one(docs, "ConfigMap")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["annotations"]["grafana_folder"] == "Autoscaling"
    want = json.loads((CHART / "dashboards" / "dovetail.json").read_text())
    assert json.loads(cm["data"]["dovetail.json"]) == want
    # A custom selector replaces the namespace matcher; thresholds reach the expressions.
    docs = render("--set", "settings.clusterName=x", "--set", "prometheusRule.enabled=true",
                  "--set", "prometheusRule.selector=job=\"dovetail\"",
                  "--set", "prometheusRule.pendingPodsFor=30m",
                  "--set", "prometheusRule.memoryBytes=1073741824")
    alerts = {r["alert"]: r for g in one(docs, "PrometheusRule")["spec"]["groups"]
              for r in g["rules"]}
    assert 'karpenter_pods_state{job="dovetail",' in alerts["DovetailPodsPendingTooLong"]["expr"]
    assert alerts["DovetailPodsPendingTooLong"]["for"] == "30m"
    assert "> 1073741824" in alerts["DovetailControllerMemoryHigh"]["expr"]


def test_older_chart_values() -> None:
    """Values of older Karpenter charts: mapped to their v1 settings, or refused saying why."""
    # The pre-v1 guide's top-level keys and v0.32's settings.aws.* reach the v1 variables.
    env = env_of(render("--set", "clusterName=old", "--set", "clusterEndpoint=https://old.example",
                        "--set", "settings.aws.interruptionQueueName=q",
                        "--set", "settings.aws.isolatedVPC=true",
                        "--set", "settings.aws.vmMemoryOverheadPercent=0.1",
                        "--set-string", "settings.aws.reservedENIs=2",
                        "--set", "settings.aws.enablePodENI=true",
                        "--set", "settings.featureGates.driftEnabled=true"))
    assert env["CLUSTER_NAME"] == "old" and env["CLUSTER_ENDPOINT"] == "https://old.example", env
    assert env["INTERRUPTION_QUEUE"] == "q" and env["ISOLATED_VPC"] == "true", env
    assert env["VM_MEMORY_OVERHEAD_PERCENT"] == "0.1" and env["RESERVED_ENIS"] == "2", env
    assert "DriftEnabled" not in env["FEATURE_GATES"], env["FEATURE_GATES"]
    # A v1 setting that is set wins over the old key.
    env = env_of(render("--set", "clusterName=old", "--set", "settings.clusterName=new",
                        "--set", "settings.aws.clusterName=older"))
    assert env["CLUSTER_NAME"] == "new", env
    # What v1 has no place for fails the render, naming the key and what to do instead.
    for args, fragment in [
            (["--set", "aws.defaultInstanceProfile=p"], "aws.defaultInstanceProfile"),
            (["--set", "settings.aws.defaultInstanceProfile=p"], "spec.role or spec.instanceProfile"),
            (["--set", "settings.aws.assumeRoleARN=arn:aws:iam::1:role/x"], "Pod Identity"),
            (["--set", "settings.aws.tags.team=a"], "spec.tags"),
            (["--set", "settings.aws.enableENILimitedPodDensity=false"], "maxPods"),
            (["--set", "settings.aws.nodeNameConvention=resource-name"], "ip-name"),
            (["--set", "settings.aws.somethingElse=1"], "not a setting of Karpenter v1")]:
        proc = helm("template", RELEASE, str(CHART), "--set", "settings.clusterName=x", *args,
                    check=False)
        assert proc.returncode != 0 and fragment in proc.stderr, (args, proc.stderr)
    # The guide's install command (release karpenter in namespace karpenter) gives the
    # ServiceAccount its IRSA trust policy names: system:serviceaccount:karpenter:karpenter.
    docs = render("--set", "clusterName=guide", "--set", "clusterEndpoint=https://guide.example",
                  "--set", "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::1:role/k")
    sa = one(docs, "ServiceAccount")
    assert (sa["metadata"]["namespace"], sa["metadata"]["name"]) == ("karpenter", "karpenter"), sa
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == "arn:aws:iam::1:role/k"
    # The old keys alone satisfy the required cluster name.
    assert helm("template", RELEASE, str(CHART), "--set", "clusterName=old", check=False).returncode == 0


def test_upstream_values() -> None:
    """values/upstream.yaml sets every key of upstream's chart (helm_install_test.py checks that
    it has them all): each reaches the object upstream's chart puts it in."""
    values = yaml.safe_load((VALUES / "upstream.yaml").read_text())
    docs = render("-f", str(VALUES / "upstream.yaml"))
    dep = one(docs, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    ctr = {c["name"]: c for c in pod["containers"]}
    main = ctr["karpenter-controller"]
    selector = {"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": RELEASE}
    # Upstream's names, so `helm upgrade` over an upstream release changes no name or selector.
    for kind in ("Deployment", "ServiceAccount", "Service", "PodDisruptionBudget",
                 "ClusterRoleBinding", "Role", "RoleBinding", "ServiceMonitor"):
        assert one(docs, kind)["metadata"]["name"] == "karpenter", kind
    assert sorted(r["metadata"]["name"] for r in by_kind(docs, "ClusterRole")) == \
        ["karpenter", "karpenter-admin"]
    assert dep["spec"]["selector"]["matchLabels"] == selector
    assert one(docs, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"] == selector
    assert one(docs, "Service")["spec"]["selector"] == selector
    for d in docs:
        if d["kind"] != "CustomResourceDefinition":
            assert d["metadata"]["labels"]["team"] == "platform", d["kind"]
            assert d["metadata"]["annotations"]["owner"] == "sre", d["kind"]
    assert one(docs, "Service")["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert one(docs, "ServiceAccount")["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] \
        == values["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"]
    assert values["additionalClusterRoleRules"][0] in controller_cluster_role(docs)["rules"]
    sm = one(docs, "ServiceMonitor")
    assert sm["metadata"]["labels"]["release"] == "prometheus"
    assert sm["spec"]["sampleLimit"] == 5000
    endpoint = sm["spec"]["endpoints"][0]
    assert endpoint["interval"] == "30s"
    assert endpoint["relabelings"] == values["serviceMonitor"]["relabelings"]
    assert endpoint["metricRelabelings"] == values["serviceMonitor"]["metricRelabelings"]
    assert dep["spec"]["replicas"] == 3 and dep["spec"]["revisionHistoryLimit"] == 5
    assert dep["spec"]["strategy"] == {"rollingUpdate": {"maxUnavailable": 2}}
    meta = dep["spec"]["template"]["metadata"]
    assert meta["labels"]["tier"] == "control" and meta["annotations"]["example.com/scrape"] == "false"
    assert one(docs, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 2
    assert pod["securityContext"]["fsGroup"] == 1000
    assert pod["securityContext"]["runAsNonRoot"] is True  # the chart's defaults stay merged in
    for key in ("priorityClassName", "terminationGracePeriodSeconds", "hostNetwork",
                "schedulerName", "dnsPolicy", "dnsConfig", "initContainers", "tolerations"):
        assert pod[key] == values[key], key
    assert pod["nodeSelector"] == values["nodeSelector"]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["volumes"] == values["extraVolumes"]
    # Upstream's affinity terms get the pods' selector; the node affinity passes through.
    affinity = pod["affinity"]
    assert affinity["nodeAffinity"] == values["affinity"]["nodeAffinity"]
    anti = affinity["podAntiAffinity"]
    assert anti["requiredDuringSchedulingIgnoredDuringExecution"] == [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": selector}}]
    assert anti["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"] == {
        "topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchLabels": selector}}
    assert pod["topologySpreadConstraints"] == [
        {**values["topologySpreadConstraints"][0], "labelSelector": {"matchLabels": selector}}]
    # The controller container.
    image = values["controller"]["image"]
    assert main["image"] == f"{image['repository']}:{image['tag']}@{image['digest']}"
    assert main["imagePullPolicy"] == "Always"
    sc = main["securityContext"]
    for key in ("appArmorProfile", "seLinuxOptions", "seccompProfile"):
        assert sc[key] == values["controller"]["securityContext"][key], key
    assert sc["runAsNonRoot"] is True and sc["readOnlyRootFilesystem"] is True
    assert main["resources"] == values["controller"]["resources"]
    assert main["envFrom"] == values["controller"]["envFrom"]
    assert main["volumeMounts"] == values["controller"]["extraVolumeMounts"]
    assert {p["name"]: p["containerPort"] for p in main["ports"]} == {"http-metrics": 8000, "http": 8001}
    sidecar = ctr["log-shipper"]
    assert sidecar["image"] == "fluent/fluent-bit:3.0"
    assert sidecar["volumeMounts"] == (values["controller"]["extraVolumeMounts"]
                                       + values["controller"]["sidecarVolumeMounts"])
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in main["env"]}
    assert env["AWS_REGION"] == "us-west-2"
    assert env["METRICS_PORT"] == "8000" and env["HEALTH_PROBE_PORT"] == "8001"
    assert env["LOG_LEVEL"] == "debug"
    assert env["LOG_OUTPUT_PATHS"] == "stdout,/tmp/karpenter.log"
    assert env["LOG_ERROR_OUTPUT_PATHS"] == "stderr,/tmp/karpenter-errors.log"
    for key, value in values["settings"].items():
        if key == "featureGates":
            gates = dict(kv.split("=") for kv in env["FEATURE_GATES"].split(","))
            for gate, on in value.items():
                assert gates[FEATURE_GATES[gate]] == str(on).lower(), (gate, gates)
            continue
        want = str(value).lower() if isinstance(value, bool) else str(value)
        assert env[SETTINGS_ENV[key][0]] == want, (key, env.get(SETTINGS_ENV[key][0]))


def test_image() -> None:
    """A digest is pinned with the repository it was given with; upstream's image (what a values
    file written for upstream's chart names) is replaced by Dovetail's."""
    app = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    digest = "sha256:" + "ab" * 32
    cases = [
        ([], f"dovetail/controller:{app}"),
        (["--set", "controller.image.tag=1.2.3"], "dovetail/controller:1.2.3"),
        (["--set", f"controller.image.digest={digest}"], f"dovetail/controller:{app}@{digest}"),
        (["--set", "controller.image.repository=registry.example/dovetail",
          "--set", f"controller.image.digest={digest}"], f"registry.example/dovetail:{app}@{digest}"),
        (["--set", "controller.image.repository=public.ecr.aws/karpenter/controller",
          "--set", "controller.image.tag=1.13.0", "--set", f"controller.image.digest={digest}"],
         f"dovetail/controller:{app}"),
    ]
    for args, want in cases:
        got = container(render("--set", "settings.clusterName=x", *args))["image"]
        assert got == want, (args, got)
    # helm_install_test.py reads the install notes that say so (they need an API server).


def test_monitoring_needs_its_crds() -> None:
    """ServiceMonitor and PrometheusRule render only when the API server serves their CRDs."""
    args = ("-f", str(VALUES / "monitoring.yaml"), "--set", "serviceMonitor.enabled=true")
    kinds = {d["kind"] for d in render(*args)}
    assert {"ServiceMonitor", "PrometheusRule"} <= kinds, kinds
    kinds = {d["kind"] for d in render(*args, api=())}
    assert not {"ServiceMonitor", "PrometheusRule"} & kinds, kinds
    # helm_install_test.py reads the install notes that say so (they need an API server).


GROUPS = {
    "lint": [test_lint, test_cluster_name_required_for_aws],
    "golden": [test_golden],
    "checks": [test_security_context, test_replicas_pdb_spread, test_leader_election,
               test_rbac_least_privilege, test_settings_reach_env, test_instance_type_metrics,
               test_metrics_bind_address_and_explanations, test_irsa_service_monitor,
               test_prometheus_rule_and_dashboard, test_older_chart_values,
               test_upstream_values, test_image, test_monitoring_needs_its_crds],
}


def update_goldens() -> int:
    GOLDEN.mkdir(exist_ok=True)
    for case in sorted(VALUES.glob("*.yaml")):
        (GOLDEN / case.name).write_text(template_text("-f", str(case)))
        print(f"wrote {GOLDEN / case.name}")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in (*GROUPS, "all", "update"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "update":
        return update_goldens()
    tests = [t for g in GROUPS for t in GROUPS[g]] if argv[1] == "all" else GROUPS[argv[1]]
    passed = failed = 0
    for test in tests:
        try:
            test()
        except AssertionError as e:
            failed += 1
            print(f"FAIL {test.__name__}: {e}")
        else:
            passed += 1
            print(f"ok   {test.__name__}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
