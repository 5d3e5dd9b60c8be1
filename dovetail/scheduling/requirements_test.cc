#include "dovetail/scheduling/requirements.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/scheduling/names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::scheduling {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr std::string_view kZone = "topology.kubernetes.io/zone";
constexpr std::string_view kArch = "kubernetes.io/arch";
constexpr std::string_view kCapacityType = "karpenter.sh/capacity-type";

NodeSelectorRequirement R(std::string_view key, SelectorOperator op,
                          std::vector<std::string> values = {},
                          std::optional<int32_t> min_values = std::nullopt) {
  return NodeSelectorRequirement{std::string(key), op, std::move(values), min_values};
}

Requirements Reqs(const std::vector<NodeSelectorRequirement>& list) {
  absl::StatusOr<Requirements> r = Requirements::FromNodeSelectorRequirements(list);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : Requirements();
}

// OK when `ok`; otherwise an error of `code` whose message contains `message`.
void ExpectOutcome(const absl::Status& s, bool ok, absl::StatusCode code,
                   const std::string& message) {
  if (ok) {
    EXPECT_TRUE(s.ok()) << s;
    return;
  }
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_THAT(s.message(), HasSubstr(message));
}

constexpr auto kIn = SelectorOperator::kIn;
constexpr auto kNotIn = SelectorOperator::kNotIn;
constexpr auto kExists = SelectorOperator::kExists;
constexpr auto kDoesNotExist = SelectorOperator::kDoesNotExist;
constexpr auto kGt = SelectorOperator::kGt;
constexpr auto kLt = SelectorOperator::kLt;

// ---- Building -----------------------------------------------------------------------------------

TEST(RequirementsTest, AddingTheSameKeyTwiceIntersects) {
  Requirements r = Reqs({R(kZone, kIn, {"a", "b", "c"}), R(kZone, kNotIn, {"b"})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r.String(), "topology.kubernetes.io/zone In [a, c]");
}

TEST(RequirementsTest, NormalisesBetaAndProviderKeys) {
  struct Case {
    std::string_view from;
    std::string_view to;
  };
  const Case cases[] = {
      {"failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"},
      {"failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region"},
      {"beta.kubernetes.io/arch", "kubernetes.io/arch"},
      {"beta.kubernetes.io/os", "kubernetes.io/os"},
      {"beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type"},
      {"topology.ebs.csi.aws.com/zone", "topology.kubernetes.io/zone"},
  };
  for (const Case& c : cases) {
    Requirements r = Reqs({R(c.from, kIn, {"x"})});
    EXPECT_TRUE(r.Has(c.to)) << c.from;
    EXPECT_FALSE(r.Has(c.from)) << c.from;
    EXPECT_EQ(apis::v1::NormalizeLabelKey(c.from), c.to);
  }
  EXPECT_EQ(apis::v1::NormalizeLabelKey("example.com/zone"), "example.com/zone");
}

TEST(RequirementsTest, NormalisedKeysIntersectWithTheirGaForm) {
  Requirements r = Reqs({R("failure-domain.beta.kubernetes.io/zone", kIn, {"a", "b"}),
                         R("topology.ebs.csi.aws.com/zone", kIn, {"b", "c"}), R(kZone, kExists)});
  EXPECT_EQ(r.String(), "topology.kubernetes.io/zone In [b]");
}

TEST(RequirementsTest, FromLabelsMakesSingleValueIn) {
  Requirements r = Requirements::FromLabels({{"team", "a"}, {"beta.kubernetes.io/arch", "arm64"}});
  EXPECT_EQ(r.String(), "kubernetes.io/arch In [arm64], team In [a]");
}

TEST(RequirementsTest, FromNodeSelectorRequirementsRejectsBadBounds) {
  absl::StatusOr<Requirements> r =
      Requirements::FromNodeSelectorRequirements({R("cpu", kGt, {"many"})});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RequirementsTest, ForPodCombinesSelectorFirstRequiredTermAndPreferredTerm) {
  const StringMap node_selector = {{"team", "a"}};
  const std::vector<NodeSelectorTerm> required = {
      NodeSelectorTerm{{R(kZone, kIn, {"z1", "z2"})}, {}},
      NodeSelectorTerm{{R(kZone, kIn, {"z3"})}, {}},  // ORed alternative, not used yet
  };
  const NodeSelectorTerm preferred{{R(kZone, kIn, {"z2", "z3"}), R(kArch, kIn, {"arm64"})}, {}};

  absl::StatusOr<Requirements> strict = Requirements::ForPod(node_selector, required);
  ASSERT_TRUE(strict.ok()) << strict.status();
  EXPECT_EQ(strict->String(), "team In [a], topology.kubernetes.io/zone In [z1, z2]");

  absl::StatusOr<Requirements> with_preference =
      Requirements::ForPod(node_selector, required, &preferred);
  ASSERT_TRUE(with_preference.ok()) << with_preference.status();
  EXPECT_EQ(with_preference->String(),
            "kubernetes.io/arch In [arm64], team In [a], topology.kubernetes.io/zone In [z2]");

  absl::StatusOr<Requirements> selector_only = Requirements::ForPod(node_selector, {});
  ASSERT_TRUE(selector_only.ok());
  EXPECT_EQ(selector_only->String(), "team In [a]");
}

TEST(RequirementsTest, GetReturnsExistsForUndefinedKeys) {
  Requirements r = Reqs({R(kZone, kIn, {"a"})});
  EXPECT_EQ(r.Get("missing").Operator(), kExists);
  EXPECT_EQ(r.Get("missing").key(), "missing");
  EXPECT_EQ(r.Find("missing"), nullptr);
  ASSERT_NE(r.Find(kZone), nullptr);
  r.Remove(kZone);
  EXPECT_TRUE(r.empty());
}

TEST(RequirementsTest, IntersectMergesBothSets) {
  Requirements a = Reqs({R(kZone, kIn, {"a", "b"}), R("team", kExists)});
  a.Intersect(Reqs({R(kZone, kIn, {"b", "c"}), R(kArch, kIn, {"amd64"})}));
  EXPECT_EQ(a.String(),
            "kubernetes.io/arch In [amd64], team Exists, topology.kubernetes.io/zone In [b]");
}

// ---- Compatible / Intersects --------------------------------------------------------------------

struct CompatibleCase {
  std::string name;
  std::vector<NodeSelectorRequirement> node;  // e.g. NodePool / NodeClaim
  std::vector<NodeSelectorRequirement> pod;
  AllowUndefined allow;
  bool ok;
  std::string message;  // substring of the error
};

const CompatibleCase kCompatibleCases[] = {
    {"SameValues", {R(kZone, kIn, {"a"})}, {R(kZone, kIn, {"a"})}, AllowUndefined::kNone, true, ""},
    {"OverlappingValues",
     {R(kZone, kIn, {"a", "b"})},
     {R(kZone, kIn, {"b", "c"})},
     AllowUndefined::kNone,
     true,
     ""},
    {"DisjointValues",
     {R(kZone, kIn, {"us-east-1b", "us-east-1c"})},
     {R(kZone, kIn, {"us-east-1a"})},
     AllowUndefined::kNone,
     false,
     "key \"topology.kubernetes.io/zone\": requirement In [us-east-1a] is incompatible with In "
     "[us-east-1b, us-east-1c]"},
    {"UndefinedCustomLabelIsDenied",
     {R(kZone, kIn, {"a"})},
     {R("team", kIn, {"x"})},
     AllowUndefined::kWellKnownLabels,
     false,
     "label \"team\" does not have known values"},
    {"UndefinedWellKnownLabelIsAllowedWhenAsked",
     {},
     {R(kZone, kIn, {"a"}), R(kCapacityType, kIn, {"spot"})},
     AllowUndefined::kWellKnownLabels,
     true,
     ""},
    {"UndefinedWellKnownLabelIsDeniedOtherwise",
     {},
     {R(kZone, kIn, {"a"})},
     AllowUndefined::kNone,
     false,
     "label \"topology.kubernetes.io/zone\" does not have known values"},
    {"UndefinedCustomLabelWithNotInIsAllowed",
     {},
     {R("team", kNotIn, {"x"})},
     AllowUndefined::kNone,
     true,
     ""},
    {"UndefinedCustomLabelWithDoesNotExistIsAllowed",
     {},
     {R("team", kDoesNotExist)},
     AllowUndefined::kNone,
     true,
     ""},
    {"UndefinedCustomLabelWithExistsIsDenied",
     {},
     {R("team", kExists)},
     AllowUndefined::kWellKnownLabels,
     false,
     "label \"team\" does not have known values"},
    {"UndefinedCustomLabelWithGtIsDenied",
     {},
     {R("gpus", kGt, {"1"})},
     AllowUndefined::kWellKnownLabels,
     false,
     "label \"gpus\" does not have known values"},
    {"KeysOnlyOnTheNodeSideAreUnconstrained",
     {R("team", kIn, {"x"}), R(kZone, kIn, {"a"})},
     {},
     AllowUndefined::kNone,
     true,
     ""},
    {"NotInVersusNotInIsFine",
     {R("team", kNotIn, {"x"})},
     {R("team", kNotIn, {"x"})},
     AllowUndefined::kNone,
     true,
     ""},
    {"DoesNotExistVersusDoesNotExistIsFine",
     {R("team", kDoesNotExist)},
     {R("team", kDoesNotExist)},
     AllowUndefined::kNone,
     true,
     ""},
    {"NotInVersusDoesNotExistIsFine",
     {R("team", kNotIn, {"x"})},
     {R("team", kDoesNotExist)},
     AllowUndefined::kNone,
     true,
     ""},
    {"DoesNotExistVersusIn",
     {R("team", kDoesNotExist)},
     {R("team", kIn, {"x"})},
     AllowUndefined::kNone,
     false,
     "key \"team\": requirement In [x] is incompatible with DoesNotExist"},
    {"ExistsVersusDoesNotExist",
     {R("team", kExists)},
     {R("team", kDoesNotExist)},
     AllowUndefined::kNone,
     false,
     "key \"team\": requirement DoesNotExist is incompatible with Exists"},
    {"InVersusNotInOfTheSameValues",
     {R("team", kIn, {"x"})},
     {R("team", kNotIn, {"x"})},
     AllowUndefined::kNone,
     false,
     "requirement NotIn [x] is incompatible with In [x]"},
    {"GtAgainstInstanceValues",
     {R("cpu", kIn, {"2", "4", "8"})},
     {R("cpu", kGt, {"4"})},
     AllowUndefined::kNone,
     true,
     ""},
    {"GtAboveEveryInstanceValue",
     {R("cpu", kIn, {"2", "4", "8"})},
     {R("cpu", kGt, {"8"})},
     AllowUndefined::kNone,
     false,
     "requirement Exists >=9 is incompatible with In [2, 4, 8]"},
    {"GtAndLtThatDoNotOverlap",
     {R("cpu", kLt, {"4"})},
     {R("cpu", kGt, {"4"})},
     AllowUndefined::kNone,
     false,
     "key \"cpu\""},
    {"FirstConflictingKeyInOrderIsNamed",
     {R("b", kIn, {"1"}), R("a", kIn, {"1"}), R("c", kIn, {"1"})},
     {R("c", kIn, {"2"}), R("b", kIn, {"2"}), R("a", kIn, {"1"})},
     AllowUndefined::kNone,
     false,
     "key \"b\""},
    {"BetaKeyOnThePodMatchesGaKeyOnTheNode",
     {R(kZone, kIn, {"a"})},
     {R("failure-domain.beta.kubernetes.io/zone", kIn, {"a"})},
     AllowUndefined::kNone,
     true,
     ""},
};

class CompatibleTest : public ::testing::TestWithParam<CompatibleCase> {};

TEST_P(CompatibleTest, FollowsKarpentersRules) {
  const CompatibleCase& c = GetParam();
  ExpectOutcome(Reqs(c.node).Compatible(Reqs(c.pod), c.allow), c.ok,
                absl::StatusCode::kFailedPrecondition, c.message);
}

INSTANTIATE_TEST_SUITE_P(Table, CompatibleTest, ::testing::ValuesIn(kCompatibleCases),
                         [](const auto& info) { return info.param.name; });

TEST(RequirementsTest, IntersectsAllowsUndefinedKeysOnEitherSide) {
  Requirements node = Reqs({R(kZone, kIn, {"a"})});
  Requirements pod = Reqs({R("team", kIn, {"x"})});
  EXPECT_TRUE(node.Intersects(pod).ok());
  EXPECT_TRUE(pod.Intersects(node).ok());
  // Compatible is the stricter check.
  EXPECT_FALSE(node.Compatible(pod, AllowUndefined::kWellKnownLabels).ok());
}

TEST(RequirementsTest, CompatibleHintsAtTypos) {
  Requirements node = Reqs({R("example.com/team", kIn, {"x"})});
  absl::Status s =
      node.Compatible(Reqs({R("example.com/teams", kIn, {"x"})}), AllowUndefined::kNone);
  EXPECT_THAT(s.message(), HasSubstr("(typo of \"example.com/team\"?)"));

  // A short key contained in a well-known label: the first such label in key order.
  s = Requirements().Compatible(Reqs({R("zone", kIn, {"a"})}), AllowUndefined::kWellKnownLabels);
  EXPECT_THAT(s.message(), HasSubstr("(typo of \"topology.k8s.aws/zone-id\"?)"));

  s = Requirements().Compatible(Reqs({R("topology.kubernetes.io/zome", kIn, {"a"})}),
                                AllowUndefined::kWellKnownLabels);
  EXPECT_THAT(s.message(), HasSubstr("(typo of \"topology.kubernetes.io/zone\"?)"));

  // Well-known labels are not suggested when they may not be left undefined.
  s = Requirements().Compatible(Reqs({R("zone", kIn, {"a"})}), AllowUndefined::kNone);
  EXPECT_THAT(s.message(), Not(HasSubstr("typo")));

  s = node.Compatible(Reqs({R("unrelated", kIn, {"x"})}), AllowUndefined::kWellKnownLabels);
  EXPECT_THAT(s.message(), Not(HasSubstr("typo")));
}

// ---- Labels and serialisation -------------------------------------------------------------------

TEST(RequirementsTest, LabelsSkipRestrictedAndWellKnownKeys) {
  Requirements r = Reqs({
      R(kZone, kIn, {"a"}),                       // well-known: set by the cloud provider
      R("karpenter.sh/nodepool", kIn, {"p"}),     // well-known
      R("kubernetes.io/hostname", kIn, {"h"}),    // restricted
      R("karpenter.sh/custom", kIn, {"c"}),       // restricted domain
      R("karpenter.k8s.aws/custom", kIn, {"c"}),  // restricted domain
      R("team", kIn, {"b", "a"}),                 // custom: Any()
      R("tier", kExists),                         // custom Exists: synthetic value
      R("gone", kDoesNotExist),                   // no value
      R("node.kubernetes.io/role", kIn, {"x"}),   // exception domain
  });
  EXPECT_EQ(r.Labels(),
            (StringMap{{"node.kubernetes.io/role", "x"}, {"team", "a"}, {"tier", "0"}}));
}

TEST(RequirementsTest, SingleValuedLabelsKeepEveryOneValueIn) {
  Requirements r = Reqs({R(kZone, kIn, {"a"}), R(kArch, kIn, {"amd64", "arm64"}),
                         R("team", kIn, {"x"}), R("tier", kNotIn, {"y"})});
  EXPECT_EQ(r.SingleValuedLabels(),
            (StringMap{{"team", "x"}, {"topology.kubernetes.io/zone", "a"}}));
}

TEST(RequirementsTest, ToNodeSelectorRequirementsIsSortedAndRoundTrips) {
  Requirements r = Reqs({R(kZone, kIn, {"b", "a"}, 2), R("cpu", kGt, {"2"}), R("cpu", kLt, {"9"}),
                         R("team", kDoesNotExist)});
  std::vector<NodeSelectorRequirement> api = r.ToNodeSelectorRequirements();
  const std::vector<NodeSelectorRequirement> expected = {
      R("cpu", SelectorOperator::kGte, {"3"}), R("cpu", SelectorOperator::kLte, {"8"}),
      R("team", kDoesNotExist), R(kZone, kIn, {"a", "b"}, 2)};
  EXPECT_EQ(api, expected);
  EXPECT_EQ(Reqs(api), r);
}

// ---- Well-known and restricted keys -------------------------------------------------------------

TEST(WellKnownLabelsTest, CoreAndAwsKeysAreWellKnown) {
  for (std::string_view key : apis::v1::kWellKnownLabels)
    EXPECT_TRUE(apis::v1::IsWellKnownLabel(key)) << key;
  EXPECT_TRUE(apis::v1::IsWellKnownLabel("karpenter.k8s.aws/instance-family"));
  EXPECT_TRUE(apis::v1::IsWellKnownLabel("topology.k8s.aws/zone-id"));
  EXPECT_FALSE(apis::v1::IsWellKnownLabel("kubernetes.io/hostname"));
  EXPECT_FALSE(apis::v1::IsWellKnownLabel("team"));
  EXPECT_FALSE(apis::v1::IsWellKnownLabel("failure-domain.beta.kubernetes.io/zone"));
}

struct RestrictedCase {
  std::string key;
  bool restricted;
  bool pod_ok;
  bool nodepool_ok;
};

const RestrictedCase kRestrictedCases[] = {
    {"kubernetes.io/hostname", true, false, false},
    {"karpenter.sh/nodepool", false, true, false},
    {"karpenter.sh/capacity-type", false, true, true},
    {"karpenter.sh/registered", true, false, false},
    {"karpenter.sh/anything", true, false, false},
    {"sub.karpenter.sh/anything", true, false, false},
    {"notkarpenter.sh/anything", true, false, false},  // suffix match, as upstream
    {"karpenter.k8s.aws/instance-family", false, true, true},
    {"karpenter.k8s.aws/ec2nodeclass", false, true, true},
    {"karpenter.k8s.aws/instance-pods", true, false, false},
    {"topology.kubernetes.io/zone", false, true, true},
    {"failure-domain.beta.kubernetes.io/zone", false, true, true},
    {"node.kubernetes.io/instance-type", false, true, true},
    {"example.com/team", false, true, true},
    {"team", false, true, true},
    {"karpenter.sh", false, true, true},  // no prefix: not in a domain
    {"Bad Key", false, false, false},     // not a qualified name
};

class RestrictedLabelTest : public ::testing::TestWithParam<RestrictedCase> {};

TEST_P(RestrictedLabelTest, ClassifiesKeys) {
  const RestrictedCase& c = GetParam();
  EXPECT_EQ(apis::v1::IsRestrictedLabel(c.key), c.restricted) << c.key;
  absl::Status pod = ValidateRequirementKey(c.key, RequirementSource::kPod);
  absl::Status nodepool = ValidateRequirementKey(c.key, RequirementSource::kNodePool);
  EXPECT_EQ(pod.ok(), c.pod_ok) << c.key << ": " << pod;
  EXPECT_EQ(nodepool.ok(), c.nodepool_ok) << c.key << ": " << nodepool;
  if (!pod.ok()) {
    EXPECT_EQ(pod.code(), absl::StatusCode::kInvalidArgument);
  }
  if (!nodepool.ok()) {
    EXPECT_THAT(std::string(nodepool.message()), HasSubstr(c.key));
  }
}

INSTANTIATE_TEST_SUITE_P(Table, RestrictedLabelTest, ::testing::ValuesIn(kRestrictedCases));

TEST(WellKnownLabelsTest, RestrictedNodeLabelsIncludeWellKnownButNotExceptions) {
  EXPECT_TRUE(apis::v1::IsRestrictedNodeLabel(kZone));
  EXPECT_TRUE(apis::v1::IsRestrictedNodeLabel("kubernetes.io/hostname"));
  EXPECT_TRUE(apis::v1::IsRestrictedNodeLabel("karpenter.sh/foo"));
  EXPECT_FALSE(apis::v1::IsRestrictedNodeLabel("node.kubernetes.io/role"));
  EXPECT_FALSE(apis::v1::IsRestrictedNodeLabel("team"));
  EXPECT_EQ(apis::v1::LabelDomain("a.b/c"), "a.b");
  EXPECT_EQ(apis::v1::LabelDomain("c"), "");
}

// ---- ValidateRequirement ------------------------------------------------------------------------

struct ValidateCase {
  std::string name;
  NodeSelectorRequirement requirement;
  RequirementSource source;
  bool ok;
  std::string message;
};

const ValidateCase kValidateCases[] = {
    {"PlainIn", R("team", kIn, {"a"}), RequirementSource::kNodePool, true, ""},
    {"InWithoutValues", R("team", kIn, {}), RequirementSource::kPod, false, "must have a value"},
    {"InFewerValuesThanMinValues", R("team", kIn, {"a"}, 2), RequirementSource::kNodePool, false,
     "minValues"},
    {"GtWithTwoValues", R("cpu", kGt, {"1", "2"}), RequirementSource::kPod, false, "integer"},
    {"LtNegative", R("cpu", kLt, {"-1"}), RequirementSource::kPod, false, "\"-1\""},
    {"LtNotAnInteger", R("cpu", kLt, {"x1"}), RequirementSource::kPod, false, "integer"},
    {"GteOk", R("cpu", SelectorOperator::kGte, {"4"}), RequirementSource::kNodePool, true, ""},
    {"BadValueSyntax", R("team", kIn, {"a b"}), RequirementSource::kPod, false, "value \"a b\""},
    {"HostnameIsRestricted", R("kubernetes.io/hostname", kIn, {"n"}), RequirementSource::kPod,
     false, "restricted"},
    {"NodePoolKeyInNodePool", R("karpenter.sh/nodepool", kIn, {"p"}), RequirementSource::kNodePool,
     false, "restricted"},
    {"NodePoolKeyInPod", R("karpenter.sh/nodepool", kIn, {"p"}), RequirementSource::kPod, true, ""},
    {"UnknownCapacityTypeOnly", R(kCapacityType, kIn, {"preemptible"}),
     RequirementSource::kNodePool, false, "none of the values"},
    {"MixedCapacityTypes", R(kCapacityType, kIn, {"preemptible", "spot"}),
     RequirementSource::kNodePool, true, ""},
    {"MinValuesAboveKnownCapacityTypes", R(kCapacityType, kIn, {"preemptible", "spot"}, 2),
     RequirementSource::kNodePool, false, "exceeds"},
    {"CapacityTypeNotInUnknownIsFine", R(kCapacityType, kNotIn, {"preemptible"}),
     RequirementSource::kNodePool, true, ""},
    {"UnknownTenancy", R("karpenter.k8s.aws/instance-tenancy", kIn, {"host"}),
     RequirementSource::kNodePool, false, "none of the values"},
    {"BetaKeyIsNormalisedBeforeChecks", R("beta.kubernetes.io/arch", kIn, {"amd64"}),
     RequirementSource::kNodePool, true, ""},
};

class ValidateRequirementTest : public ::testing::TestWithParam<ValidateCase> {};

TEST_P(ValidateRequirementTest, AppliesKarpentersRuntimeValidation) {
  const ValidateCase& c = GetParam();
  ExpectOutcome(ValidateRequirement(c.requirement, c.source), c.ok,
                absl::StatusCode::kInvalidArgument, c.message);
}

INSTANTIATE_TEST_SUITE_P(Table, ValidateRequirementTest, ::testing::ValuesIn(kValidateCases),
                         [](const auto& info) { return info.param.name; });

TEST(ValidateNodePoolLabelTest, RejectsRestrictedKeysAndBadValues) {
  EXPECT_TRUE(ValidateNodePoolLabel("team", "a").ok());
  EXPECT_TRUE(ValidateNodePoolLabel("team", "").ok());
  EXPECT_FALSE(ValidateNodePoolLabel("karpenter.sh/nodepool", "p").ok());
  EXPECT_FALSE(ValidateNodePoolLabel("kubernetes.io/hostname", "h").ok());
  EXPECT_FALSE(ValidateNodePoolLabel("team", "-bad").ok());
  EXPECT_THAT(ValidateNodePoolLabel("team", "-bad").message(), HasSubstr("team"));
}

TEST(RequirementsTest, StringOfEmptySetIsEmpty) { EXPECT_THAT(Requirements().String(), IsEmpty()); }

}  // namespace
}  // namespace dovetail::scheduling
