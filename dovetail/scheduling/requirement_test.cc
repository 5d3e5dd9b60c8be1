#include "dovetail/scheduling/requirement.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "dovetail/scheduling/names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::scheduling {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

SelectorOperator OperatorNamed(std::string_view name) {
  for (SelectorOperator op :
       {SelectorOperator::kIn, SelectorOperator::kNotIn, SelectorOperator::kExists,
        SelectorOperator::kDoesNotExist, SelectorOperator::kGt, SelectorOperator::kLt,
        SelectorOperator::kGte, SelectorOperator::kLte}) {
    if (SelectorOperatorName(op) == name) return op;
  }
  ADD_FAILURE() << "unknown operator " << name;
  return SelectorOperator::kIn;
}

// "In [a, b]", "NotIn [a]", "Exists", "DoesNotExist", "Gt 4", ... on key "k".
NodeSelectorRequirement Api(std::string_view spec, std::optional<int32_t> min_values = {}) {
  const size_t space = spec.find(' ');
  NodeSelectorRequirement r;
  r.key = "k";
  r.op = OperatorNamed(spec.substr(0, space));
  r.min_values = min_values;
  const std::string rest(space == std::string_view::npos ? "" : spec.substr(space + 1));
  if (rest.size() >= 2 && rest.front() == '[' && rest.back() == ']') {
    for (absl::string_view v :
         absl::StrSplit(rest.substr(1, rest.size() - 2), ", ", absl::SkipEmpty())) {
      r.values.emplace_back(v);
    }
  } else if (!rest.empty()) {
    r.values.push_back(rest);
  }
  return r;
}

Requirement Req(std::string_view spec, std::optional<int32_t> min_values = {}) {
  absl::StatusOr<Requirement> r = Requirement::FromNodeSelectorRequirement(Api(spec, min_values));
  EXPECT_TRUE(r.ok()) << spec << ": " << r.status();
  return r.ok() ? *r : Requirement();
}

// ---- Construction -------------------------------------------------------------------------------

struct CreateCase {
  std::string spec;
  bool complement;
  std::vector<std::string> values;
  std::optional<int64_t> gte;
  std::optional<int64_t> lte;
  SelectorOperator op;
};

const CreateCase kCreateCases[] = {
    {"In [b, a, b]", false, {"a", "b"}, {}, {}, SelectorOperator::kIn},
    {"NotIn [b, a]", true, {"a", "b"}, {}, {}, SelectorOperator::kNotIn},
    {"Exists", true, {}, {}, {}, SelectorOperator::kExists},
    {"DoesNotExist", false, {}, {}, {}, SelectorOperator::kDoesNotExist},
    {"In []", false, {}, {}, {}, SelectorOperator::kDoesNotExist},
    {"Gt 4", true, {}, 5, {}, SelectorOperator::kExists},
    {"Gt 0", true, {}, 1, {}, SelectorOperator::kExists},
    {"Lt 8", true, {}, {}, 7, SelectorOperator::kExists},
    {"Lt 0", true, {}, {}, -1, SelectorOperator::kExists},
    {"Gte 4", true, {}, 4, {}, SelectorOperator::kExists},
    {"Lte 8", true, {}, {}, 8, SelectorOperator::kExists},
    {"Gt +7", true, {}, 8, {}, SelectorOperator::kExists},
    {"Gt 007", true, {}, 8, {}, SelectorOperator::kExists},
    {"Gt 9223372036854775807", false, {}, {}, {}, SelectorOperator::kDoesNotExist},
    {"Gte 9223372036854775807", true, {}, kMaxInt64, {}, SelectorOperator::kExists},
};

class RequirementCreateTest : public ::testing::TestWithParam<CreateCase> {};

TEST_P(RequirementCreateTest, BuildsTheInternalForm) {
  const CreateCase& c = GetParam();
  Requirement r = Req(c.spec);
  EXPECT_EQ(r.key(), "k");
  EXPECT_EQ(r.complement(), c.complement) << c.spec;
  EXPECT_EQ(std::vector<std::string>(r.values().begin(), r.values().end()), c.values) << c.spec;
  EXPECT_EQ(r.gte(), c.gte) << c.spec;
  EXPECT_EQ(r.lte(), c.lte) << c.spec;
  EXPECT_EQ(r.Operator(), c.op) << c.spec;
}

INSTANTIATE_TEST_SUITE_P(Table, RequirementCreateTest, ::testing::ValuesIn(kCreateCases));

class RequirementBadBoundTest : public ::testing::TestWithParam<NodeSelectorRequirement> {};

TEST_P(RequirementBadBoundTest, IntegerOperatorsNeedOneNonNegativeInteger) {
  absl::StatusOr<Requirement> r = Requirement::FromNodeSelectorRequirement(GetParam());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("non-negative integer"));
}

NodeSelectorRequirement WithValues(SelectorOperator op, std::vector<std::string> values) {
  return NodeSelectorRequirement{"k", op, std::move(values), std::nullopt};
}

INSTANTIATE_TEST_SUITE_P(
    Table, RequirementBadBoundTest,
    ::testing::Values(
        WithValues(SelectorOperator::kGt, {}), WithValues(SelectorOperator::kGt, {"1", "2"}),
        WithValues(SelectorOperator::kGt, {"a"}), WithValues(SelectorOperator::kGt, {"-1"}),
        WithValues(SelectorOperator::kLt, {"1.5"}), WithValues(SelectorOperator::kLt, {""}),
        WithValues(SelectorOperator::kLt, {" 1"}),
        WithValues(SelectorOperator::kGte, {"99999999999999999999"}),
        WithValues(SelectorOperator::kGte, {"1e3"}), WithValues(SelectorOperator::kLte, {"-5"}),
        WithValues(SelectorOperator::kLte, {"0x10"})));

TEST(RequirementTest, ExistsAndDoesNotExistIgnoreValues) {
  EXPECT_EQ(Req("Exists [a]").Operator(), SelectorOperator::kExists);
  EXPECT_TRUE(Req("Exists [a]").values().empty());
  EXPECT_EQ(Req("DoesNotExist [a]").Operator(), SelectorOperator::kDoesNotExist);
}

TEST(RequirementTest, MinValuesIsKept) {
  EXPECT_EQ(Req("In [a, b]", 2).min_values(), 2);
  EXPECT_EQ(Req("Gt 3", 1).min_values(), 1);
}

// ---- Has, Len, Any ------------------------------------------------------------------------------

struct HasCase {
  std::string spec;
  std::string value;
  bool has;
};

const HasCase kHasCases[] = {
    {"In [a, b]", "a", true},
    {"In [a, b]", "c", false},
    {"In [a, b]", "", false},
    {"NotIn [a, b]", "a", false},
    {"NotIn [a, b]", "c", true},
    {"Exists", "anything", true},
    {"Exists", "", true},
    {"DoesNotExist", "a", false},
    {"Gt 4", "5", true},
    {"Gt 4", "4", false},
    {"Gt 4", "+5", true},
    {"Gt 4", "0005", true},
    {"Gt 4", "five", false},
    {"Gt 4", "5.5", false},
    {"Gt 4", "99999999999999999999", false},
    {"Lt 8", "7", true},
    {"Lt 8", "8", false},
    {"Lt 8", "-3", true},
    {"Lt 0", "0", false},
    {"Lt 0", "-1", true},
    {"Gte 4", "4", true},
    {"Gte 4", "3", false},
    {"Lte 8", "8", true},
    {"Lte 8", "9", false},
};

class RequirementHasTest : public ::testing::TestWithParam<HasCase> {};

TEST_P(RequirementHasTest, AdmitsValuesWithinItsSetAndBounds) {
  const HasCase& c = GetParam();
  EXPECT_EQ(Req(c.spec).Has(c.value), c.has) << c.spec << " has \"" << c.value << "\"";
}

INSTANTIATE_TEST_SUITE_P(Table, RequirementHasTest, ::testing::ValuesIn(kHasCases));

TEST(RequirementTest, HasRespectsBothBoundsAfterIntersection) {
  Requirement r = Req("Gt 4").Intersection(Req("Lt 8"));
  EXPECT_FALSE(r.Has("4"));
  EXPECT_TRUE(r.Has("5"));
  EXPECT_TRUE(r.Has("7"));
  EXPECT_FALSE(r.Has("8"));
  EXPECT_FALSE(r.Has("x"));
}

TEST(RequirementTest, LenCountsValuesOrTheirComplement) {
  EXPECT_EQ(Req("In [a, b]").Len(), 2);
  EXPECT_EQ(Req("DoesNotExist").Len(), 0);
  EXPECT_EQ(Req("Exists").Len(), kMaxInt64);
  EXPECT_EQ(Req("NotIn [a, b]").Len(), kMaxInt64 - 2);
  EXPECT_EQ(Req("Gt 4").Len(), kMaxInt64);
}

struct AnyCase {
  Requirement requirement;
  std::string any;
};

TEST(RequirementTest, AnyIsDeterministicAndAdmitted) {
  const AnyCase cases[] = {
      {Req("In [c, a, b]"), "a"},
      {Req("DoesNotExist"), ""},
      {Req("Exists"), "0"},
      {Req("NotIn [0, 1, 3]"), "2"},
      {Req("Gt 4"), "5"},
      {Req("Gte 4").Intersection(Req("NotIn [4, 5]")), "6"},
      {Req("Lt 8"), "0"},
      {Req("Lt 0"), "-1"},
      {Req("Lt 0").Intersection(Req("NotIn [-1]")), "-2"},
      {Req("Gte 5").Intersection(Req("Lte 6")).Intersection(Req("NotIn [5, 6]")), ""},
      {Req("Gte 9223372036854775807"), "9223372036854775807"},
  };
  for (const AnyCase& c : cases) {
    EXPECT_EQ(c.requirement.Any(), c.any) << c.requirement.DebugString();
    EXPECT_EQ(c.requirement.Any(), c.requirement.Any());
    if (!c.any.empty()) {
      EXPECT_TRUE(c.requirement.Has(c.any)) << c.requirement.DebugString();
    }
  }
}

// ---- Intersection -------------------------------------------------------------------------------

struct IntersectionCase {
  std::string a;
  std::string b;
  std::string result;
};

// Every pair of operators, with integer values so that bounds and sets interact.
const IntersectionCase kIntersectionCases[] = {
    {"In [1, 5, 9]", "In [1, 5, 9]", "In [1, 5, 9]"},
    {"In [1, 5, 9]", "NotIn [5, 7]", "In [1, 9]"},
    {"In [1, 5, 9]", "Exists", "In [1, 5, 9]"},
    {"In [1, 5, 9]", "DoesNotExist", "DoesNotExist"},
    {"In [1, 5, 9]", "Gt 4", "In [5, 9]"},
    {"In [1, 5, 9]", "Lt 8", "In [1, 5]"},
    {"In [1, 5, 9]", "Gte 9", "In [9]"},
    {"In [1, 5, 9]", "Lte 1", "In [1]"},
    {"NotIn [5, 7]", "In [1, 5, 9]", "In [1, 9]"},
    {"NotIn [5, 7]", "NotIn [5, 7]", "NotIn [5, 7]"},
    {"NotIn [5, 7]", "Exists", "NotIn [5, 7]"},
    {"NotIn [5, 7]", "DoesNotExist", "DoesNotExist"},
    {"NotIn [5, 7]", "Gt 4", "NotIn [5, 7] >=5"},
    {"NotIn [5, 7]", "Lt 8", "NotIn [5, 7] <=7"},
    {"NotIn [5, 7]", "Gte 9", "Exists >=9"},
    {"NotIn [5, 7]", "Lte 1", "Exists <=1"},
    {"Exists", "In [1, 5, 9]", "In [1, 5, 9]"},
    {"Exists", "NotIn [5, 7]", "NotIn [5, 7]"},
    {"Exists", "Exists", "Exists"},
    {"Exists", "DoesNotExist", "DoesNotExist"},
    {"Exists", "Gt 4", "Exists >=5"},
    {"Exists", "Lt 8", "Exists <=7"},
    {"Exists", "Gte 9", "Exists >=9"},
    {"Exists", "Lte 1", "Exists <=1"},
    {"DoesNotExist", "In [1, 5, 9]", "DoesNotExist"},
    {"DoesNotExist", "NotIn [5, 7]", "DoesNotExist"},
    {"DoesNotExist", "Exists", "DoesNotExist"},
    {"DoesNotExist", "DoesNotExist", "DoesNotExist"},
    {"DoesNotExist", "Gt 4", "DoesNotExist"},
    {"DoesNotExist", "Lt 8", "DoesNotExist"},
    {"DoesNotExist", "Gte 9", "DoesNotExist"},
    {"DoesNotExist", "Lte 1", "DoesNotExist"},
    {"Gt 4", "In [1, 5, 9]", "In [5, 9]"},
    {"Gt 4", "NotIn [5, 7]", "NotIn [5, 7] >=5"},
    {"Gt 4", "Exists", "Exists >=5"},
    {"Gt 4", "DoesNotExist", "DoesNotExist"},
    {"Gt 4", "Gt 4", "Exists >=5"},
    {"Gt 4", "Lt 8", "Exists >=5 <=7"},
    {"Gt 4", "Gte 9", "Exists >=9"},
    {"Gt 4", "Lte 1", "DoesNotExist"},
    {"Lt 8", "In [1, 5, 9]", "In [1, 5]"},
    {"Lt 8", "NotIn [5, 7]", "NotIn [5, 7] <=7"},
    {"Lt 8", "Exists", "Exists <=7"},
    {"Lt 8", "DoesNotExist", "DoesNotExist"},
    {"Lt 8", "Gt 4", "Exists >=5 <=7"},
    {"Lt 8", "Lt 8", "Exists <=7"},
    {"Lt 8", "Gte 9", "DoesNotExist"},
    {"Lt 8", "Lte 1", "Exists <=1"},
    {"Gte 9", "In [1, 5, 9]", "In [9]"},
    {"Gte 9", "NotIn [5, 7]", "Exists >=9"},
    {"Gte 9", "Exists", "Exists >=9"},
    {"Gte 9", "DoesNotExist", "DoesNotExist"},
    {"Gte 9", "Gt 4", "Exists >=9"},
    {"Gte 9", "Lt 8", "DoesNotExist"},
    {"Gte 9", "Gte 9", "Exists >=9"},
    {"Gte 9", "Lte 1", "DoesNotExist"},
    {"Lte 1", "In [1, 5, 9]", "In [1]"},
    {"Lte 1", "NotIn [5, 7]", "Exists <=1"},
    {"Lte 1", "Exists", "Exists <=1"},
    {"Lte 1", "DoesNotExist", "DoesNotExist"},
    {"Lte 1", "Gt 4", "DoesNotExist"},
    {"Lte 1", "Lt 8", "Exists <=1"},
    {"Lte 1", "Gte 9", "DoesNotExist"},
    {"Lte 1", "Lte 1", "Exists <=1"},
    // Non-integer values do not survive bounds; disjoint sets; touching bounds.
    {"In [a, 5]", "Gt 1", "In [5]"},
    {"In [a, b]", "In [c]", "DoesNotExist"},
    {"In [a, b]", "NotIn [a, b]", "DoesNotExist"},
    {"NotIn [a]", "NotIn [b]", "NotIn [a, b]"},
    {"Gte 5", "Lte 5", "Exists >=5 <=5"},
    {"Gt 5", "Lt 6", "DoesNotExist"},
    {"NotIn [a, 6]", "Gt 5", "NotIn [6] >=6"},
};

class RequirementIntersectionTest : public ::testing::TestWithParam<IntersectionCase> {};

TEST_P(RequirementIntersectionTest, MatchesKarpentersAlgebra) {
  const IntersectionCase& c = GetParam();
  Requirement result = Req(c.a).Intersection(Req(c.b));
  EXPECT_EQ(result.String(), c.result) << c.a << " ∩ " << c.b;
  EXPECT_EQ(result.key(), "k");
}

TEST_P(RequirementIntersectionTest, IsCommutative) {
  const IntersectionCase& c = GetParam();
  EXPECT_EQ(Req(c.a).Intersection(Req(c.b)), Req(c.b).Intersection(Req(c.a)));
}

TEST_P(RequirementIntersectionTest, AdmitsExactlyWhatBothSidesAdmit) {
  const IntersectionCase& c = GetParam();
  const Requirement a = Req(c.a);
  const Requirement b = Req(c.b);
  const Requirement result = a.Intersection(b);
  for (std::string v : {"-1", "0", "1", "2", "4", "5", "6", "7", "8", "9", "10", "a", "b", ""}) {
    EXPECT_EQ(result.Has(v), a.Has(v) && b.Has(v)) << c.a << " ∩ " << c.b << " at \"" << v << "\"";
  }
}

TEST_P(RequirementIntersectionTest, IntersectsAgreesWithTheIntersectionsLength) {
  const IntersectionCase& c = GetParam();
  const Requirement a = Req(c.a);
  const Requirement b = Req(c.b);
  EXPECT_EQ(a.Intersects(b), a.Intersection(b).Len() != 0) << c.a << " ∩ " << c.b;
  EXPECT_EQ(a.Intersects(b), b.Intersects(a)) << c.a << " ∩ " << c.b;
}

INSTANTIATE_TEST_SUITE_P(Table, RequirementIntersectionTest,
                         ::testing::ValuesIn(kIntersectionCases));

TEST(RequirementTest, IntersectionTakesTheLargerMinValues) {
  EXPECT_EQ(Req("In [a, b, c]", 2).Intersection(Req("Exists", 3)).min_values(), 3);
  EXPECT_EQ(Req("In [a, b, c]", 2).Intersection(Req("Exists")).min_values(), 2);
  EXPECT_EQ(Req("Exists").Intersection(Req("In [a]", 1)).min_values(), 1);
  EXPECT_EQ(Req("Exists").Intersection(Req("Exists")).min_values(), std::nullopt);
  // Crossing bounds still keep it.
  Requirement crossed = Req("Gt 5", 4).Intersection(Req("Lt 2", 2));
  EXPECT_EQ(crossed.Operator(), SelectorOperator::kDoesNotExist);
  EXPECT_EQ(crossed.min_values(), 4);
}

TEST(RequirementTest, IntersectionKeepsTheLeftKey) {
  Requirement a = Requirement::In("left", {"x"});
  Requirement b = Requirement::In("right", {"x"});
  EXPECT_EQ(a.Intersection(b).key(), "left");
}

// ---- API form and strings -----------------------------------------------------------------------

TEST(RequirementTest, SerialisesEachFormBackToTheApi) {
  struct Case {
    Requirement requirement;
    std::vector<NodeSelectorRequirement> api;
  };
  const Case cases[] = {
      {Req("In [b, a]", 2), {Api("In [a, b]", 2)}},
      {Req("NotIn [b, a]"), {Api("NotIn [a, b]")}},
      {Req("Exists"), {Api("Exists")}},
      {Req("DoesNotExist"), {Api("DoesNotExist")}},
      {Req("Gt 4"), {Api("Gte 5")}},
      {Req("Lt 8"), {Api("Lte 7")}},
      {Req("Lt 0"), {Api("Lt 0")}},
      {Req("Gt 4", 3).Intersection(Req("Lt 8")), {Api("Gte 5", 3), Api("Lte 7")}},
      {Req("Gt 4").Intersection(Req("Lt 8")).Intersection(Req("NotIn [6]")),
       {Api("Gte 5"), Api("Lte 7"), Api("NotIn [6]")}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.requirement.ToNodeSelectorRequirements(), c.api) << c.requirement.DebugString();
  }
}

TEST(RequirementTest, ApiFormRoundTrips) {
  for (const IntersectionCase& c : kIntersectionCases) {
    Requirement r = Req(c.a).Intersection(Req(c.b));
    Requirement back = Requirement::Exists("k");
    for (const NodeSelectorRequirement& api : r.ToNodeSelectorRequirements()) {
      absl::StatusOr<Requirement> part = Requirement::FromNodeSelectorRequirement(api);
      ASSERT_TRUE(part.ok()) << part.status();
      back = back.Intersection(*part);
    }
    EXPECT_EQ(back, r) << r.DebugString() << " came back as " << back.DebugString();
  }
}

TEST(RequirementTest, StringShortensLongValueLists) {
  EXPECT_EQ(Req("In [a, b, c, d, e, f, g, h]").String(), "In [a, b, c, d, e and 3 others]");
  EXPECT_EQ(Req("In [a, b, c, d, e]").String(), "In [a, b, c, d, e]");
  EXPECT_EQ(Req("NotIn [a]", 2).String(), "NotIn [a] minValues 2");
  EXPECT_EQ(Req("Gt 4").DebugString(), "k Exists >=5");
}

TEST(RequirementTest, ParseIntegerFollowsAtoi) {
  EXPECT_EQ(ParseInteger("0"), 0);
  EXPECT_EQ(ParseInteger("+12"), 12);
  EXPECT_EQ(ParseInteger("-12"), -12);
  EXPECT_EQ(ParseInteger("-0"), 0);
  EXPECT_EQ(ParseInteger("9223372036854775807"), kMaxInt64);
  EXPECT_EQ(ParseInteger("-9223372036854775808"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ParseInteger("9223372036854775808"), std::nullopt);
  EXPECT_EQ(ParseInteger(""), std::nullopt);
  EXPECT_EQ(ParseInteger("-"), std::nullopt);
  EXPECT_EQ(ParseInteger("1_000"), std::nullopt);
  EXPECT_EQ(ParseInteger(" 1"), std::nullopt);
}

TEST(RequirementTest, NumericOperandIsTheOnlyValueWhenANonNegativeInteger) {
  EXPECT_EQ(NumericOperand({"0"}), 0);
  EXPECT_EQ(NumericOperand({"+7"}), 7);
  EXPECT_EQ(NumericOperand({"9223372036854775807"}), kMaxInt64);
  EXPECT_EQ(NumericOperand({"-1"}), std::nullopt);
  EXPECT_EQ(NumericOperand({"x"}), std::nullopt);
  EXPECT_EQ(NumericOperand({}), std::nullopt);
  EXPECT_EQ(NumericOperand({"1", "2"}), std::nullopt);
}

TEST(RequirementTest, ValuesStaySortedAndUnique) {
  Requirement r = Requirement::In("k", {"b", "a", "c", "a"});
  EXPECT_THAT(r.values(), ElementsAre("a", "b", "c"));
}

}  // namespace
}  // namespace dovetail::scheduling
