#include "dovetail/scheduling/taints.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dovetail/scheduling/names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::scheduling {
namespace {

constexpr TaintEffect kNoSchedule = TaintEffect::kNoSchedule;
constexpr TaintEffect kPreferNoSchedule = TaintEffect::kPreferNoSchedule;
constexpr TaintEffect kNoExecute = TaintEffect::kNoExecute;

Taint MakeTaint(std::string key, std::string value, TaintEffect effect) {
  Taint t;
  t.key = std::move(key);
  t.value = std::move(value);
  t.effect = effect;
  return t;
}

Toleration Equal(std::string key, std::string value, std::optional<TaintEffect> effect = {}) {
  return Toleration{std::move(key), TolerationOperator::kEqual, std::move(value), effect, {}};
}

Toleration Exists(std::string key, std::optional<TaintEffect> effect = {}) {
  return Toleration{std::move(key), TolerationOperator::kExists, "", effect, {}};
}

// The taints every toleration below is checked against.
const std::array<Taint, 6> kTaints = {
    MakeTaint("key1", "value1", kNoSchedule),        // 0
    MakeTaint("key1", "value1", kNoExecute),         // 1
    MakeTaint("key1", "value1", kPreferNoSchedule),  // 2
    MakeTaint("key1", "", kNoSchedule),              // 3
    MakeTaint("key2", "value1", kNoSchedule),        // 4
    MakeTaint("key2", "", kNoExecute),               // 5
};

struct MatrixCase {
  std::string name;
  Toleration toleration;
  std::array<bool, 6> tolerates;
};

const MatrixCase kMatrix[] = {
    {"EqualAnyEffect", Equal("key1", "value1"), {true, true, true, false, false, false}},
    {"EqualNoSchedule",
     Equal("key1", "value1", kNoSchedule),
     {true, false, false, false, false, false}},
    {"EqualNoExecute",
     Equal("key1", "value1", kNoExecute),
     {false, true, false, false, false, false}},
    {"EqualPreferNoSchedule",
     Equal("key1", "value1", kPreferNoSchedule),
     {false, false, true, false, false, false}},
    {"EqualEmptyValue", Equal("key1", ""), {false, false, false, true, false, false}},
    {"EqualOtherValue", Equal("key1", "other"), {false, false, false, false, false, false}},
    {"ExistsAnyEffect", Exists("key1"), {true, true, true, true, false, false}},
    {"ExistsNoExecute", Exists("key1", kNoExecute), {false, true, false, false, false, false}},
    {"ExistsEmptyKeyTolaratesEverything", Exists(""), {true, true, true, true, true, true}},
    {"ExistsEmptyKeyOneEffect",
     Exists("", kPreferNoSchedule),
     {false, false, true, false, false, false}},
    {"ExistsEmptyKeyNoSchedule", Exists("", kNoSchedule), {true, false, false, true, true, false}},
    // Kubernetes skips the key comparison for an empty key even with Equal (API validation forbids
    // this toleration, the matcher does not).
    {"EqualEmptyKeyMatchesValueOnAnyKey",
     Equal("", "value1"),
     {true, true, true, false, true, false}},
    {"ExistsOtherKey", Exists("key2", kNoSchedule), {false, false, false, false, true, false}},
    {"KeyIsCaseSensitive", Exists("Key1"), {false, false, false, false, false, false}},
};

class TolerationMatrixTest : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(TolerationMatrixTest, MatchesKubernetesToleratesTaint) {
  const MatrixCase& c = GetParam();
  for (size_t i = 0; i < kTaints.size(); ++i) {
    EXPECT_EQ(ToleratesTaint(c.toleration, kTaints[i]), c.tolerates[i])
        << TolerationToString(c.toleration) << " vs " << TaintToString(kTaints[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, TolerationMatrixTest, ::testing::ValuesIn(kMatrix),
                         [](const auto& info) { return info.param.name; });

TEST(ToleratesTest, EveryTaintMustBeToleratedByAnyToleration) {
  const std::vector<Taint> taints = {kTaints[0], kTaints[4]};
  EXPECT_TRUE(Tolerates({Exists("key1"), Exists("key2")}, taints).ok());
  absl::Status s = Tolerates({Exists("key1")}, taints);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "did not tolerate taint key2=value1:NoSchedule");
}

TEST(ToleratesTest, NamesTheFirstUntoleratedTaint) {
  absl::Status s = Tolerates({}, {kTaints[3], kTaints[0]});
  EXPECT_EQ(s.message(), "did not tolerate taint key1:NoSchedule");
}

TEST(ToleratesTest, NoTaintsNeedNoTolerations) { EXPECT_TRUE(Tolerates({}, {}).ok()); }

TEST(ToleratesTest, PreferNoScheduleMustBeToleratedUntilRelaxed) {
  const std::vector<Taint> taints = {kTaints[2]};
  EXPECT_FALSE(Tolerates({}, taints).ok());
  EXPECT_FALSE(Tolerates({}, taints, PreferNoSchedule::kMustTolerate).ok());
  EXPECT_TRUE(Tolerates({}, taints, PreferNoSchedule::kIgnore).ok());
  // The relaxation step adds a blanket Exists:PreferNoSchedule toleration.
  EXPECT_TRUE(Tolerates({Exists("", kPreferNoSchedule)}, taints).ok());
  // Ignoring PreferNoSchedule does not ignore the hard effects.
  EXPECT_FALSE(Tolerates({}, {kTaints[0]}, PreferNoSchedule::kIgnore).ok());
}

TEST(TaintsTest, MatchTaintComparesKeyAndEffectOnly) {
  EXPECT_TRUE(MatchTaint(kTaints[0], kTaints[3]));
  EXPECT_FALSE(MatchTaint(kTaints[0], kTaints[1]));
  EXPECT_FALSE(MatchTaint(kTaints[0], kTaints[4]));
}

TEST(TaintsTest, MergeAddsOnlyTaintsNotAlreadyPresent) {
  std::vector<Taint> merged = MergeTaints({kTaints[0], kTaints[1]}, {kTaints[3], kTaints[4]});
  EXPECT_EQ(merged, (std::vector<Taint>{kTaints[0], kTaints[1], kTaints[4]}));
}

struct EphemeralCase {
  Taint taint;
  bool ephemeral;
};

TEST(TaintsTest, KnownEphemeralTaints) {
  const EphemeralCase cases[] = {
      {MakeTaint("node.kubernetes.io/not-ready", "", kNoSchedule), true},
      {MakeTaint("node.kubernetes.io/not-ready", "", kNoExecute), true},
      {MakeTaint("node.kubernetes.io/not-ready", "", kPreferNoSchedule), false},
      {MakeTaint("node.kubernetes.io/unreachable", "", kNoSchedule), true},
      {MakeTaint("node.kubernetes.io/unreachable", "", kNoExecute), false},
      {MakeTaint("node.cloudprovider.kubernetes.io/uninitialized", "true", kNoSchedule), true},
      {MakeTaint("node.cloudprovider.kubernetes.io/uninitialized", "other", kNoSchedule), true},
      {MakeTaint("karpenter.sh/unregistered", "", kNoExecute), true},
      {MakeTaint("karpenter.sh/unregistered", "", kNoSchedule), false},
      {MakeTaint("readiness.k8s.io/network", "", kNoSchedule), true},
      {MakeTaint("readiness.k8s.io/storage", "pending", kNoExecute), true},
      {MakeTaint("karpenter.sh/disrupted", "", kNoSchedule), false},
      {MakeTaint("example.com/readiness.k8s.io", "", kNoSchedule), false},
  };
  for (const EphemeralCase& c : cases) {
    EXPECT_EQ(IsKnownEphemeralTaint(c.taint), c.ephemeral) << TaintToString(c.taint);
  }
}

TEST(TaintTextTest, PrintsLikeKubernetes) {
  EXPECT_EQ(TaintToString(kTaints[0]), "key1=value1:NoSchedule");
  EXPECT_EQ(TaintToString(kTaints[2]), "key1=value1:PreferNoSchedule");
  EXPECT_EQ(TaintToString(kTaints[5]), "key2:NoExecute");
}

TEST(TaintTextTest, ParsesEveryForm) {
  EXPECT_EQ(*ParseTaint("key1=value1:NoSchedule"), kTaints[0]);
  EXPECT_EQ(*ParseTaint("key1=value1:PreferNoSchedule"), kTaints[2]);
  EXPECT_EQ(*ParseTaint("key1:NoSchedule"), kTaints[3]);
  EXPECT_EQ(*ParseTaint("key1=:NoSchedule"), kTaints[3]);
  EXPECT_EQ(*ParseTaint("example.com/gpu=true:NoExecute"),
            MakeTaint("example.com/gpu", "true", kNoExecute));
  for (const Taint& t : kTaints) EXPECT_EQ(*ParseTaint(TaintToString(t)), t);
}

TEST(TaintTextTest, RejectsMalformedTaints) {
  for (std::string text :
       {"", "key1", "key1=value1", "key1=value1:", "key1=value1:noschedule",
        "key1=value1:NoSchedule:NoExecute", "key1=a=b:NoSchedule", "=value1:NoSchedule",
        ":NoSchedule", "bad key:NoSchedule", "key1=bad value:NoSchedule", "a/b/c:NoSchedule"}) {
    absl::StatusOr<Taint> t = ParseTaint(text);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << "\"" << text << "\"";
  }
}

TEST(TolerationTextTest, RoundTripsEveryForm) {
  std::vector<Toleration> tolerations;
  for (const MatrixCase& c : kMatrix) tolerations.push_back(c.toleration);
  Toleration with_seconds = Exists("node.kubernetes.io/not-ready", kNoExecute);
  with_seconds.toleration_seconds = 300;
  tolerations.push_back(with_seconds);
  Toleration negative_seconds = Equal("k", "v", kNoExecute);
  negative_seconds.toleration_seconds = -1;
  tolerations.push_back(negative_seconds);
  for (const Toleration& t : tolerations) {
    std::string text = TolerationToString(t);
    absl::StatusOr<Toleration> back = ParseToleration(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status();
    EXPECT_EQ(*back, t) << text;
  }
}

TEST(TolerationTextTest, PrintsReadableForms) {
  EXPECT_EQ(TolerationToString(Equal("key1", "value1", kNoSchedule)), "key1=value1:NoSchedule");
  EXPECT_EQ(TolerationToString(Equal("key1", "")), "key1=");
  EXPECT_EQ(TolerationToString(Exists("key1")), "key1");
  EXPECT_EQ(TolerationToString(Exists("")), "*");
  EXPECT_EQ(TolerationToString(Exists("", kNoExecute)), "*:NoExecute");
  Toleration t = Exists("node.kubernetes.io/unreachable", kNoExecute);
  t.toleration_seconds = 300;
  EXPECT_EQ(TolerationToString(t), "node.kubernetes.io/unreachable:NoExecute for 300s");
}

TEST(TolerationTextTest, RejectsMalformedTolerations) {
  for (std::string text : {"", ":NoSchedule", "key1:Never", "key1=a=b", "bad key", "key1=bad value",
                           "key1 for 5", "key1 for xs", "key1 for s"}) {
    absl::StatusOr<Toleration> t = ParseToleration(text);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << "\"" << text << "\"";
  }
}

TEST(TaintEffectTest, NamesRoundTrip) {
  for (TaintEffect e : {kNoSchedule, kPreferNoSchedule, kNoExecute}) {
    EXPECT_EQ(*ParseTaintEffect(TaintEffectName(e)), e);
  }
  EXPECT_EQ(ParseTaintEffect("NoExecute ").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dovetail::scheduling
