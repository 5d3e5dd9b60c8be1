#include "dovetail/scheduling/label_selector.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dovetail/apis/core/label_syntax.h"
#include "dovetail/scheduling/names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::scheduling {
namespace {

// ---- Syntax -------------------------------------------------------------------------------------

struct SyntaxCase {
  std::string text;
  bool valid;
};

const SyntaxCase kQualifiedNames[] = {
    {"app", true},
    {"a", true},
    {"A1", true},
    {"my_label.v-2", true},
    {"example.com/app", true},
    {"kubernetes.io/hostname", true},
    {"a.b-c.d/Name_1", true},
    {std::string(63, 'a'), true},
    {std::string(64, 'a'), false},
    {std::string(253, 'a') + "/name", true},
    {std::string(254, 'a') + "/name", false},
    {"", false},
    {"/name", false},
    {"example.com/", false},
    {"a/b/c", false},
    {"-app", false},
    {"app-", false},
    {"_app", false},
    {"app.", false},
    {"a b", false},
    {"app!", false},
    {"Example.com/app", false},  // prefix must be lowercase
    {"example..com/app", false},
    {"-example.com/app", false},
    {"example-.com/app", false},
    {"exa_mple.com/app", false},
};

class QualifiedNameTest : public ::testing::TestWithParam<SyntaxCase> {};

TEST_P(QualifiedNameTest, FollowsKubernetesRules) {
  const SyntaxCase& c = GetParam();
  EXPECT_EQ(apis::core::IsQualifiedName(c.text), c.valid) << "\"" << c.text << "\"";
  absl::Status s = apis::core::ValidateQualifiedName(c.text);
  EXPECT_EQ(s.ok(), c.valid) << s;
  if (!s.ok()) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, QualifiedNameTest, ::testing::ValuesIn(kQualifiedNames));

const SyntaxCase kLabelValues[] = {
    {"", true},
    {"a", true},
    {"value", true},
    {"V-1_2.3", true},
    {"123", true},
    {std::string(63, 'x'), true},
    {std::string(64, 'x'), false},
    {"-a", false},
    {"a-", false},
    {"a b", false},
    {"a/b", false},
    {"_a", false},
    {".a", false},
    {"ünïcode", false},
    {"a:b", false},
};

class LabelValueTest : public ::testing::TestWithParam<SyntaxCase> {};

TEST_P(LabelValueTest, FollowsKubernetesRules) {
  const SyntaxCase& c = GetParam();
  EXPECT_EQ(apis::core::IsValidLabelValue(c.text), c.valid) << "\"" << c.text << "\"";
  EXPECT_EQ(apis::core::ValidateLabelValue(c.text).ok(), c.valid) << "\"" << c.text << "\"";
}

INSTANTIATE_TEST_SUITE_P(Table, LabelValueTest, ::testing::ValuesIn(kLabelValues));

TEST(Dns1123SubdomainTest, Cases) {
  EXPECT_TRUE(apis::core::IsDns1123Subdomain("example.com"));
  EXPECT_TRUE(apis::core::IsDns1123Subdomain("a"));
  EXPECT_TRUE(apis::core::IsDns1123Subdomain("a-b.c-d"));
  EXPECT_FALSE(apis::core::IsDns1123Subdomain(""));
  EXPECT_FALSE(apis::core::IsDns1123Subdomain("a..b"));
  EXPECT_FALSE(apis::core::IsDns1123Subdomain(".a"));
  EXPECT_FALSE(apis::core::IsDns1123Subdomain("a."));
  EXPECT_FALSE(apis::core::IsDns1123Subdomain("A.com"));
  EXPECT_FALSE(apis::core::IsDns1123Subdomain("a_b.com"));
}

// ---- Label selectors ----------------------------------------------------------------------------

LabelSelectorRequirement Expr(std::string key, LabelSelectorOperator op,
                              std::vector<std::string> values = {}) {
  return LabelSelectorRequirement{std::move(key), op, std::move(values)};
}

constexpr auto kLIn = LabelSelectorOperator::kIn;
constexpr auto kLNotIn = LabelSelectorOperator::kNotIn;
constexpr auto kLExists = LabelSelectorOperator::kExists;
constexpr auto kLDoesNotExist = LabelSelectorOperator::kDoesNotExist;

struct LabelSelectorCase {
  std::string name;
  LabelSelector selector;
  bool matches;  // against kPodLabels
};

const StringMap kPodLabels = {{"app", "web"}, {"tier", "frontend"}, {"empty", ""}};

const LabelSelectorCase kLabelSelectorCases[] = {
    {"EmptySelectorMatchesEverything", {}, true},
    {"MatchLabelsEqual", {{{"app", "web"}}, {}}, true},
    {"MatchLabelsDifferentValue", {{{"app", "db"}}, {}}, false},
    {"MatchLabelsMissingKey", {{{"zone", "a"}}, {}}, false},
    {"MatchLabelsEmptyValue", {{{"empty", ""}}, {}}, true},
    {"InContains", {{}, {Expr("app", kLIn, {"db", "web"})}}, true},
    {"InDoesNotContain", {{}, {Expr("app", kLIn, {"db"})}}, false},
    {"InOnMissingKey", {{}, {Expr("zone", kLIn, {"a"})}}, false},
    {"NotInOnMissingKeyMatches", {{}, {Expr("zone", kLNotIn, {"a"})}}, true},
    {"NotInExcludes", {{}, {Expr("app", kLNotIn, {"web"})}}, false},
    {"NotInOtherValue", {{}, {Expr("app", kLNotIn, {"db"})}}, true},
    {"Exists", {{}, {Expr("tier", kLExists)}}, true},
    {"ExistsWithEmptyValue", {{}, {Expr("empty", kLExists)}}, true},
    {"ExistsMissing", {{}, {Expr("zone", kLExists)}}, false},
    {"DoesNotExist", {{}, {Expr("zone", kLDoesNotExist)}}, true},
    {"DoesNotExistPresent", {{}, {Expr("app", kLDoesNotExist)}}, false},
    {"AllMustHold", {{{"app", "web"}}, {Expr("tier", kLIn, {"backend"})}}, false},
    {"AllHold",
     {{{"app", "web"}}, {Expr("tier", kLIn, {"frontend"}), Expr("x", kLDoesNotExist)}},
     true},
    // Structurally invalid expressions match nothing.
    {"InWithoutValues", {{}, {Expr("app", kLIn)}}, false},
    {"NotInWithoutValues", {{}, {Expr("zone", kLNotIn)}}, false},
    {"ExistsWithValues", {{}, {Expr("app", kLExists, {"web"})}}, false},
};

class LabelSelectorTest : public ::testing::TestWithParam<LabelSelectorCase> {};

TEST_P(LabelSelectorTest, MatchesLikeKubernetes) {
  const LabelSelectorCase& c = GetParam();
  EXPECT_EQ(Matches(c.selector, kPodLabels), c.matches);
}

INSTANTIATE_TEST_SUITE_P(Table, LabelSelectorTest, ::testing::ValuesIn(kLabelSelectorCases),
                         [](const auto& info) { return info.param.name; });

TEST(ValidateLabelSelectorTest, RejectsBadOperatorValueCombinations) {
  EXPECT_TRUE(ValidateLabelSelector({}).ok());
  EXPECT_TRUE(ValidateLabelSelector({{{"app", "web"}},
                                     {Expr("tier", kLIn, {"a"}), Expr("x", kLNotIn, {"b"}),
                                      Expr("y", kLExists), Expr("z", kLDoesNotExist)}})
                  .ok());
  const LabelSelector invalid[] = {
      {{}, {Expr("app", kLIn)}},
      {{}, {Expr("app", kLNotIn)}},
      {{}, {Expr("app", kLExists, {"a"})}},
      {{}, {Expr("app", kLDoesNotExist, {"a"})}},
      {{}, {Expr("bad key", kLExists)}},
      {{}, {Expr("app", kLIn, {"bad value"})}},
      {{{"bad key", "a"}}, {}},
      {{{"app", "-bad"}}, {}},
  };
  for (const LabelSelector& s : invalid) {
    EXPECT_EQ(ValidateLabelSelector(s).code(), absl::StatusCode::kInvalidArgument);
  }
}

// ---- Node selectors -----------------------------------------------------------------------------

NodeSelectorRequirement NExpr(std::string key, SelectorOperator op,
                              std::vector<std::string> values = {}) {
  return NodeSelectorRequirement{std::move(key), op, std::move(values), std::nullopt};
}

const StringMap kNodeLabels = {
    {"topology.kubernetes.io/zone", "us-east-1a"}, {"cpu", "8"}, {"gen", "abc"}};
const StringMap kNodeFields = {{"metadata.name", "node-1"}};

struct TermCase {
  std::string name;
  NodeSelectorTerm term;
  bool matches;
};

const TermCase kTermCases[] = {
    {"EmptyTermMatchesNothing", {}, false},
    {"In",
     {{NExpr("topology.kubernetes.io/zone", SelectorOperator::kIn, {"us-east-1a"})}, {}},
     true},
    {"InOther", {{NExpr("topology.kubernetes.io/zone", SelectorOperator::kIn, {"b"})}, {}}, false},
    {"NotInMissing", {{NExpr("team", SelectorOperator::kNotIn, {"a"})}, {}}, true},
    {"Exists", {{NExpr("cpu", SelectorOperator::kExists)}, {}}, true},
    {"DoesNotExist", {{NExpr("cpu", SelectorOperator::kDoesNotExist)}, {}}, false},
    {"GtTrue", {{NExpr("cpu", SelectorOperator::kGt, {"4"})}, {}}, true},
    {"GtEqualIsFalse", {{NExpr("cpu", SelectorOperator::kGt, {"8"})}, {}}, false},
    {"LtTrue", {{NExpr("cpu", SelectorOperator::kLt, {"16"})}, {}}, true},
    {"LtNegativeBound", {{NExpr("cpu", SelectorOperator::kLt, {"-1"})}, {}}, false},
    {"GteEqual", {{NExpr("cpu", SelectorOperator::kGte, {"8"})}, {}}, true},
    {"LteEqual", {{NExpr("cpu", SelectorOperator::kLte, {"8"})}, {}}, true},
    {"GtOnNonIntegerLabel", {{NExpr("gen", SelectorOperator::kGt, {"1"})}, {}}, false},
    {"GtOnMissingLabel", {{NExpr("team", SelectorOperator::kGt, {"1"})}, {}}, false},
    {"GtWithNonIntegerBound", {{NExpr("cpu", SelectorOperator::kGt, {"x"})}, {}}, false},
    {"ExpressionsAreAnded",
     {{NExpr("cpu", SelectorOperator::kExists), NExpr("gen", SelectorOperator::kIn, {"xyz"})}, {}},
     false},
    {"FieldNameIn", {{}, {NExpr("metadata.name", SelectorOperator::kIn, {"node-1"})}}, true},
    {"FieldNameInOther", {{}, {NExpr("metadata.name", SelectorOperator::kIn, {"node-2"})}}, false},
    {"FieldNameNotIn", {{}, {NExpr("metadata.name", SelectorOperator::kNotIn, {"node-2"})}}, true},
    {"FieldWithTwoValues",
     {{}, {NExpr("metadata.name", SelectorOperator::kIn, {"node-1", "node-2"})}},
     false},
    {"FieldExistsIsInvalid", {{}, {NExpr("metadata.name", SelectorOperator::kExists)}}, false},
    {"FieldsAndExpressions",
     {{NExpr("cpu", SelectorOperator::kExists)},
      {NExpr("metadata.name", SelectorOperator::kIn, {"node-1"})}},
     true},
};

class NodeSelectorTermTest : public ::testing::TestWithParam<TermCase> {};

TEST_P(NodeSelectorTermTest, MatchesLikeNodeAffinity) {
  const TermCase& c = GetParam();
  EXPECT_EQ(NodeSelectorTermMatches(c.term, kNodeLabels, kNodeFields), c.matches);
}

INSTANTIATE_TEST_SUITE_P(Table, NodeSelectorTermTest, ::testing::ValuesIn(kTermCases),
                         [](const auto& info) { return info.param.name; });

TEST(NodeSelectorTest, TermsAreOred) {
  NodeSelectorTerm no{{NExpr("cpu", SelectorOperator::kDoesNotExist)}, {}};
  NodeSelectorTerm yes{{NExpr("cpu", SelectorOperator::kIn, {"8"})}, {}};
  EXPECT_TRUE(NodeSelectorMatches(NodeSelector{{no, yes}}, kNodeLabels, kNodeFields));
  EXPECT_FALSE(NodeSelectorMatches(NodeSelector{{no, no}}, kNodeLabels, kNodeFields));
  EXPECT_FALSE(NodeSelectorMatches(NodeSelector{}, kNodeLabels, kNodeFields));
  EXPECT_FALSE(NodeSelectorMatches(NodeSelector{{NodeSelectorTerm{}}}, kNodeLabels, kNodeFields));
}

TEST(NodeSelectorTest, FieldsAreSkippedWhenTheCallerHasNone) {
  NodeSelectorTerm term{{}, {NExpr("metadata.name", SelectorOperator::kIn, {"node-2"})}};
  EXPECT_FALSE(NodeSelectorTermMatches(term, kNodeLabels, kNodeFields));
  EXPECT_TRUE(NodeSelectorTermMatches(term, kNodeLabels, {}));
  NodeSelectorTerm malformed{{}, {NExpr("metadata.name", SelectorOperator::kExists)}};
  EXPECT_FALSE(NodeSelectorTermMatches(malformed, kNodeLabels, {}));
}

TEST(ValidateNodeSelectorTermTest, ChecksOperatorsValuesAndFields) {
  EXPECT_TRUE(ValidateNodeSelectorTerm(
                  {{NExpr("a", SelectorOperator::kIn, {"x"}), NExpr("b", SelectorOperator::kExists),
                    NExpr("c", SelectorOperator::kGt, {"-3"})},
                   {NExpr("metadata.name", SelectorOperator::kNotIn, {"n"})}})
                  .ok());
  const NodeSelectorTerm invalid[] = {
      {{NExpr("a", SelectorOperator::kIn)}, {}},
      {{NExpr("a", SelectorOperator::kNotIn)}, {}},
      {{NExpr("a", SelectorOperator::kExists, {"x"})}, {}},
      {{NExpr("a", SelectorOperator::kDoesNotExist, {"x"})}, {}},
      {{NExpr("a", SelectorOperator::kGt, {"1", "2"})}, {}},
      {{NExpr("a", SelectorOperator::kLt, {"x"})}, {}},
      {{NExpr("bad key", SelectorOperator::kExists)}, {}},
      {{NExpr("a", SelectorOperator::kIn, {"bad value"})}, {}},
      {{}, {NExpr("metadata.namespace", SelectorOperator::kIn, {"n"})}},
      {{}, {NExpr("metadata.name", SelectorOperator::kIn, {"n", "m"})}},
      {{}, {NExpr("metadata.name", SelectorOperator::kExists)}},
  };
  for (const NodeSelectorTerm& t : invalid) {
    EXPECT_EQ(ValidateNodeSelectorTerm(t).code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace dovetail::scheduling
