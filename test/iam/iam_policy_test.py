#!/usr/bin/env python3
"""Checks charts/dovetail/iam/*.json against the AWS calls in Dovetail's C++ sources.

Usage: iam_policy_test.py <repository root>

The list of actions is derived from the sources on every run (client calls such as
Query("DescribeSubnets", ...), Paginate(...), Call(...), Send("DescribeCluster", ...),
CallQuery(sts_, ...)), so a new AWS call
without a matching policy statement fails this test.
"""

import fnmatch
import json
import os
import re
import sys
import unittest

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
IAM_DIR = os.path.join(ROOT, "charts", "dovetail", "iam")
SOURCES = os.path.join(ROOT, "dovetail")

PLACEHOLDERS = {
    "AWS_PARTITION": "aws",
    "AWS_REGION": "eu-west-1",
    "AWS_ACCOUNT_ID": "123456789012",
    "CLUSTER_NAME": "demo",
    "NODE_ROLE_NAME": "DovetailNodeRole-demo",
    "INTERRUPTION_QUEUE": "demo-interruptions",
}
CLUSTER_TAG = "kubernetes.io/cluster/demo"

# Actions the sources contain that the controller's role must not be granted, each with why.
# For client methods, the test also checks that no production source outside the client calls
# the method, so this list cannot hide a real call.
NOT_GRANTED = {
    # Authorised by the role's trust policy (the web identity token), not by an identity policy.
    "sts:AssumeRoleWithWebIdentity": None,
    # Only for a shared-config profile with role_arn (docs/aws.md, Credentials): the profile's
    # source identity and the assumed role's trust policy authorise it, not the controller role.
    "sts:AssumeRole": None,
    # Fixture helpers used by tests only (documented in the client headers).
    "sqs:CreateQueue": "CreateQueue",
    "sqs:SendMessage": "SendMessage",
    "ssm:PutParameter": "PutParameter",
    "eks:CreateCluster": "CreateCluster",
    # Defined on IamClient; the controller lists its profiles by path instead.
    "iam:ListInstanceProfilesForRole": "ListInstanceProfilesForRole",
}

# Mutating actions with no resource-level scoping that may sit on Resource "*": none.
READ_ONLY_PREFIXES = ("Describe", "Get", "List")

CALL_RE = re.compile(
    r"(?:\b(?P<recv>\w+)\s*\.\s*)?\b(?P<fn>Query|Paginate|Call|Send)\(\s*\"(?P<action>[A-Z][A-Za-z]+)\""
    r"|\bCallQuery\(\s*(?P<qrecv>\w+)\s*,\s*\"(?P<qaction>[A-Z][A-Za-z]+)\"")
CLIENT_FILE_RE = re.compile(r"^(?P<svc>[a-z0-9]+)_client\.(cc|h)$")
RECEIVER_RE = re.compile(r"^(?P<svc>[a-z0-9]+)(?:_client)?_?$")  # ec2_, ec2, ec2_client
SERVICE_PREFIX = {"ec2": "ec2", "iam": "iam", "ssm": "ssm", "sqs": "sqs", "pricing": "pricing",
                  "sts": "sts", "eks": "eks"}
HTTP_VERBS = {"GET", "PUT", "POST", "PATCH", "DELETE", "HEAD"}


def production_sources():
    for dirpath, _, files in os.walk(SOURCES):
        for f in sorted(files):
            if not f.endswith((".cc", ".h")):
                continue
            if f.endswith("_test.cc") or f.endswith("_test.h") or f == "test_server.h":
                continue
            yield os.path.join(dirpath, f)


def called_actions():
    """{ "svc:Action": [file:line, ...] } for every AWS call in the production sources."""
    found, unknown = {}, []
    for path in production_sources():
        name = os.path.basename(path)
        file_svc = CLIENT_FILE_RE.match(name)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        for m in CALL_RE.finditer(text):
            action = m.group("action") or m.group("qaction")
            recv = m.group("recv") or m.group("qrecv")
            if action in HTTP_VERBS:
                continue
            line = text.count("\n", 0, m.start()) + 1
            where = f"{os.path.relpath(path, ROOT)}:{line}"
            svc = None
            rm = RECEIVER_RE.match(recv or "")
            if rm and rm.group("svc") in SERVICE_PREFIX:
                svc = SERVICE_PREFIX[rm.group("svc")]
            elif file_svc and file_svc.group("svc") in SERVICE_PREFIX:
                svc = SERVICE_PREFIX[file_svc.group("svc")]
            if svc is None:
                unknown.append(f"{where}: {action} (receiver {recv!r})")
                continue
            found.setdefault(f"{svc}:{action}", []).append(where)
    return found, unknown


def render(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    used = set(re.findall(r"\$\{([A-Z_]+)\}", text))
    for k, v in PLACEHOLDERS.items():
        text = text.replace("${" + k + "}", v)
    return json.loads(text), used, text


def as_list(v):
    return v if isinstance(v, list) else [v]


def statement_allows(stmt, action):
    if stmt.get("Effect") != "Allow":
        return False
    return any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in as_list(stmt["Action"]))


class ControllerPolicyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.policy, cls.used, cls.text = render(os.path.join(IAM_DIR, "controller-policy.json"))
        cls.statements = cls.policy["Statement"]
        cls.actions, cls.unknown = called_actions()

    def test_placeholders(self):
        self.assertEqual(self.used, set(PLACEHOLDERS), "placeholders used by the policy")
        self.assertNotIn("${", self.text)

    def test_shape(self):
        self.assertEqual(set(self.policy), {"Version", "Statement"})
        self.assertEqual(self.policy["Version"], "2012-10-17")
        self.assertIsInstance(self.statements, list)
        sids = [s.get("Sid") for s in self.statements]
        self.assertEqual(len(sids), len(set(sids)), "duplicate Sids")
        allowed_keys = {"Sid", "Effect", "Action", "Resource", "Condition"}
        for s in self.statements:
            with self.subTest(sid=s.get("Sid")):
                self.assertTrue(re.fullmatch(r"[A-Za-z0-9]+", s.get("Sid", "")), "Sid alphanumeric")
                self.assertLessEqual(set(s), allowed_keys)  # no NotAction / NotResource / Principal
                self.assertEqual(s["Effect"], "Allow")
                for a in as_list(s["Action"]):
                    self.assertRegex(a, r"^[a-z0-9-]+:[A-Za-z]+$", "explicit service:Action")
                for r in as_list(s["Resource"]):
                    self.assertTrue(r == "*" or r.startswith("arn:aws:"), r)
                for op, kv in s.get("Condition", {}).items():
                    self.assertRegex(op, r"^(ForAllValues:|ForAnyValue:)?[A-Za-z]+$")
                    self.assertIsInstance(kv, dict)
        self.assertLess(len(json.dumps(self.policy, separators=(",", ":"))), 6144,
                        "managed policy size limit")

    def test_no_wildcard_actions(self):
        for s in self.statements:
            for a in as_list(s["Action"]):
                self.assertNotIn("*", a, f"{s['Sid']} grants a wildcard action")

    def test_unscoped_resources_are_read_only(self):
        for s in self.statements:
            if "*" not in as_list(s["Resource"]):
                continue
            for a in as_list(s["Action"]):
                self.assertTrue(a.split(":", 1)[1].startswith(READ_ONLY_PREFIXES),
                                f"{s['Sid']}: {a} on Resource *")

    def test_sources_parsed(self):
        self.assertEqual(self.unknown, [], "AWS calls whose service the test cannot tell")
        # Sanity: the scan finds the calls it must (guards against a broken regex).
        for a in ("ec2:CreateFleet", "ec2:TerminateInstances", "iam:CreateInstanceProfile",
                  "sqs:ReceiveMessage", "ssm:GetParameter", "pricing:GetProducts"):
            self.assertIn(a, self.actions)

    def test_every_called_action_is_allowed(self):
        missing = []
        for action, where in sorted(self.actions.items()):
            if action in NOT_GRANTED:
                continue
            if not any(statement_allows(s, action) for s in self.statements):
                missing.append(f"{action} (called at {', '.join(where)})")
        self.assertEqual(missing, [], "actions the code calls but the policy does not allow")

    def test_not_granted_actions_stay_unused(self):
        for action, method in NOT_GRANTED.items():
            with self.subTest(action=action):
                self.assertFalse(any(statement_allows(s, action) for s in self.statements),
                                 f"{action} is granted but should not be")
                if method is None:
                    continue
                svc = action.split(":")[0]
                callers = []
                for path in production_sources():
                    if CLIENT_FILE_RE.match(os.path.basename(path)):
                        continue
                    with open(path, encoding="utf-8") as fh:
                        if re.search(r"[.>]\s*" + method + r"\(", fh.read()):
                            callers.append(os.path.relpath(path, ROOT))
                self.assertEqual(callers, [], f"{svc} {method} is now called by production code: "
                                 "grant it in controller-policy.json")

    def statements_with(self, action):
        return [s for s in self.statements if action in as_list(s["Action"])]

    def test_destructive_actions_require_ownership_tags(self):
        for action in ("ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"):
            stmts = self.statements_with(action)
            self.assertTrue(stmts, action)
            for s in stmts:
                with self.subTest(action=action, sid=s["Sid"]):
                    cond = s.get("Condition", {})
                    self.assertEqual(
                        cond.get("StringEquals", {}).get(f"aws:ResourceTag/{CLUSTER_TAG}"), "owned")
                    self.assertEqual(
                        cond.get("StringLike", {}).get("aws:ResourceTag/karpenter.sh/nodepool"), "*")
                    self.assertNotIn("*", as_list(s["Resource"]))

    def test_creating_actions_require_request_tags(self):
        owned_types = ("fleet", "instance", "volume", "network-interface", "launch-template",
                       "spot-instances-request")
        for action in ("ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"):
            stmts = self.statements_with(action)
            self.assertTrue(stmts, action)
            covered = set()
            for s in stmts:
                self.assertNotIn("*", as_list(s["Resource"]), s["Sid"])
                cond = s.get("Condition", {})
                request_tagged = (
                    cond.get("StringEquals", {}).get(f"aws:RequestTag/{CLUSTER_TAG}") == "owned"
                    and cond.get("StringLike", {}).get("aws:RequestTag/karpenter.sh/nodepool") == "*")
                resource_tagged = (
                    cond.get("StringEquals", {}).get(f"aws:ResourceTag/{CLUSTER_TAG}") == "owned")
                for r in as_list(s["Resource"]):
                    self.assertTrue(r.startswith("arn:aws:ec2:eu-west-1:"), f"{s['Sid']}: {r}")
                    rtype = r.split(":", 5)[5].split("/", 1)[0]
                    if rtype in owned_types:
                        # An owned type is either created under request tags or (launch templates
                        # used by RunInstances/CreateFleet) already owned.
                        self.assertTrue(request_tagged or (rtype == "launch-template" and resource_tagged),
                                        f"{s['Sid']}: {action} on {rtype} without ownership tags")
                        if request_tagged:
                            covered.add(rtype)
            expected = {"launch-template"} if action == "ec2:CreateLaunchTemplate" else \
                set(owned_types) - {"launch-template"}
            self.assertLessEqual(expected, covered, f"{action}: owned types without request tags")

    def test_create_tags_scoped(self):
        stmts = self.statements_with("ec2:CreateTags")
        self.assertTrue(stmts)
        for s in stmts:
            with self.subTest(sid=s["Sid"]):
                cond = s.get("Condition", {})
                at_creation = cond.get("StringEquals", {}).get("ec2:CreateAction")
                if at_creation is not None:
                    self.assertLessEqual(set(as_list(at_creation)),
                                         {"RunInstances", "CreateFleet", "CreateLaunchTemplate"})
                    self.assertEqual(cond["StringEquals"].get(f"aws:RequestTag/{CLUSTER_TAG}"), "owned")
                else:
                    self.assertEqual(as_list(s["Resource"]),
                                     ["arn:aws:ec2:eu-west-1:*:instance/*"])
                    self.assertEqual(cond.get("StringEquals", {}).get(f"aws:ResourceTag/{CLUSTER_TAG}"),
                                     "owned")
                    keys = cond.get("ForAllValues:StringEquals", {}).get("aws:TagKeys")
                    self.assertIsNotNone(keys, "post-creation tagging must restrict the tag keys")
                    self.assertIn("karpenter.sh/nodeclaim", keys)
                    self.assertNotIn(CLUSTER_TAG, keys)
                    self.assertNotIn("karpenter.sh/nodepool", keys)

    def test_pass_role_only_node_role_to_ec2(self):
        stmts = self.statements_with("iam:PassRole")
        self.assertEqual(len(stmts), 1)
        s = stmts[0]
        self.assertEqual(as_list(s["Action"]), ["iam:PassRole"])
        self.assertEqual(as_list(s["Resource"]),
                         ["arn:aws:iam::123456789012:role/DovetailNodeRole-demo"])
        passed = as_list(s["Condition"]["StringEquals"]["iam:PassedToService"])
        self.assertIn("ec2.amazonaws.com", passed)
        for p in passed:
            self.assertTrue(p.startswith("ec2.amazonaws.com"), p)

    def test_instance_profiles_scoped_by_tags(self):
        # The tags iam_client.cc InstanceProfileTags puts on the profiles Dovetail creates.
        with open(os.path.join(SOURCES, "providers", "aws", "iam_client.cc"), encoding="utf-8") as fh:
            src = fh.read()
        for tag in ("kubernetes.io/cluster/", "eks:eks-cluster-name", "karpenter.k8s.aws/ec2nodeclass",
                    "topology.kubernetes.io/region"):
            self.assertIn(f'"{tag}', src, f"iam_client.cc no longer sets {tag}")
        for action in ("iam:CreateInstanceProfile", "iam:TagInstanceProfile"):
            for s in self.statements_with(action):
                cond = s["Condition"]
                self.assertEqual(cond["StringEquals"][f"aws:RequestTag/{CLUSTER_TAG}"], "owned")
                self.assertEqual(cond["StringEquals"]["aws:RequestTag/topology.kubernetes.io/region"],
                                 "eu-west-1")
                self.assertEqual(cond["StringLike"]["aws:RequestTag/karpenter.k8s.aws/ec2nodeclass"], "*")
        for action in ("iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile",
                       "iam:DeleteInstanceProfile"):
            stmts = self.statements_with(action)
            self.assertTrue(stmts, action)
            for s in stmts:
                cond = s["Condition"]
                self.assertEqual(cond["StringEquals"][f"aws:ResourceTag/{CLUSTER_TAG}"], "owned")
                self.assertEqual(cond["StringEquals"]["aws:ResourceTag/topology.kubernetes.io/region"],
                                 "eu-west-1")
                self.assertEqual(cond["StringLike"]["aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass"], "*")

    def test_single_resource_grants(self):
        expect = {
            "sqs:ReceiveMessage": "arn:aws:sqs:eu-west-1:123456789012:demo-interruptions",
            "sqs:DeleteMessage": "arn:aws:sqs:eu-west-1:123456789012:demo-interruptions",
            "sqs:GetQueueUrl": "arn:aws:sqs:eu-west-1:123456789012:demo-interruptions",
            "eks:DescribeCluster": "arn:aws:eks:eu-west-1:123456789012:cluster/demo",
            "ssm:GetParameter": "arn:aws:ssm:eu-west-1::parameter/aws/service/*",
        }
        for action, resource in expect.items():
            stmts = self.statements_with(action)
            self.assertTrue(stmts, action)
            for s in stmts:
                self.assertEqual(as_list(s["Resource"]), [resource], action)


class QueueAndRulesTest(unittest.TestCase):
    QUEUE_ARN = "arn:aws:sqs:eu-west-1:123456789012:demo-interruptions"

    def test_queue_policy(self):
        policy, _, text = render(os.path.join(IAM_DIR, "interruption-queue.json"))
        self.assertNotIn("${", text)
        self.assertEqual(policy["Version"], "2012-10-17")
        allows = [s for s in policy["Statement"] if s["Effect"] == "Allow"]
        self.assertEqual(len(allows), 1)
        s = allows[0]
        self.assertEqual(as_list(s["Action"]), ["sqs:SendMessage"])
        self.assertEqual(set(as_list(s["Principal"]["Service"])),
                         {"events.amazonaws.com", "sqs.amazonaws.com"})
        self.assertEqual(as_list(s["Resource"]), [self.QUEUE_ARN])
        for d in policy["Statement"]:
            if d["Effect"] == "Deny":
                self.assertIn("Condition", d, "an unconditional Deny would block delivery")

    def test_rules_match_parser(self):
        rules, _, text = render(os.path.join(IAM_DIR, "eventbridge-rules.json"))
        self.assertNotIn("${", text)
        self.assertEqual(rules["target"]["arn"], self.QUEUE_ARN)
        with open(os.path.join(SOURCES, "providers", "aws", "interruption_messages.cc"),
                  encoding="utf-8") as fh:
            parser = fh.read()
        pairs = set()
        for r in rules["rules"]:
            pat = r["eventPattern"]
            self.assertEqual(len(pat["source"]), 1)
            self.assertEqual(len(pat["detail-type"]), 1)
            self.assertIn(f'"{pat["source"][0]}"', parser, "source the parser does not know")
            self.assertIn(f'"{pat["detail-type"][0]}"', parser, "detail-type the parser does not know")
            pairs.add((pat["source"][0], pat["detail-type"][0]))
        self.assertEqual(pairs, {
            ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
            ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
            ("aws.ec2", "EC2 Instance State-change Notification"),
            ("aws.health", "AWS Health Event"),
        })
        names = [r["name"] for r in rules["rules"]]
        self.assertEqual(len(names), len(set(names)))
        for n in names:
            self.assertLessEqual(len(n), 64)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
