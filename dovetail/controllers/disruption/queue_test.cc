#include "dovetail/controllers/disruption/queue.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/common/clock.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/state_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::disruption {
namespace {

namespace v1 = apis::v1;
using state::testing::NodeClaimJson;
using state::testing::NodeJson;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// Records the queue's writes; failures are injected per operation.
class FakeWriter : public QueueWriter {
 public:
  absl::Status Taint(const std::string& node) override {
    if (fail_taint.contains(node)) return absl::UnavailableError("taint failed");
    tainted.insert(node);
    return absl::OkStatus();
  }
  absl::Status Untaint(const std::string& node) override {
    if (untaint_failures > 0) {
      --untaint_failures;
      return absl::UnavailableError("untaint failed");
    }
    tainted.erase(node);
    return absl::OkStatus();
  }
  absl::Status SetDisruptionReason(const std::string& claim, std::string_view reason) override {
    conditions[claim] = std::string(reason);
    return absl::OkStatus();
  }
  absl::Status ClearDisruptionReason(const std::string& claim) override {
    conditions.erase(claim);
    return absl::OkStatus();
  }
  absl::StatusOr<v1::NodeClaim> CreateNodeClaim(const v1::NodeClaim& claim) override {
    if (creates_before_failure == 0) return absl::UnavailableError("create failed");
    --creates_before_failure;
    v1::NodeClaim stored = claim;
    stored.metadata.name = absl::StrCat(claim.metadata.generate_name, "r", ++created_count);
    stored.metadata.uid = absl::StrCat("uid-", stored.metadata.name);
    created.push_back(stored.metadata.name);
    for (const auto& [k, v] : claim.metadata.annotations) annotations[stored.metadata.name][k] = v;
    alive.insert(stored.metadata.name);
    return stored;
  }
  absl::Status DeleteNodeClaim(const std::string& name, const std::string&) override {
    deleted.push_back(name);
    alive.erase(name);
    return absl::OkStatus();
  }
  absl::StatusOr<bool> NodeClaimAlive(const std::string& name) override {
    return alive.contains(name);
  }
  absl::Status AnnotateNodeClaim(const std::string& claim, std::string_view key,
                                 std::string_view value) override {
    annotations[claim][std::string(key)] = std::string(value);
    return absl::OkStatus();
  }
  void Event(const kube::ObjectReference& regarding, std::string_view, std::string_view reason,
             std::string_view) override {
    events.push_back(absl::StrCat(regarding.kind, "/", regarding.name, ":", std::string(reason)));
  }

  std::set<std::string> fail_taint;
  int untaint_failures = 0;
  int creates_before_failure = 100;
  int created_count = 0;
  std::set<std::string> tainted;
  std::map<std::string, std::string> conditions;
  std::vector<std::string> created;
  std::vector<std::string> deleted;
  std::set<std::string> alive;
  std::vector<std::string> events;
  std::map<std::string, std::map<std::string, std::string>> annotations;
};

v1::NodePool Pool(const std::string& name) {
  v1::NodePool pool;
  const nlohmann::json json = {{"apiVersion", "karpenter.sh/v1"},
                               {"kind", "NodePool"},
                               {"metadata", {{"name", name}, {"uid", "uid-pool"}}},
                               {"spec",
                                {{"template",
                                  {{"spec",
                                    {{"requirements", nlohmann::json::array()},
                                     {"nodeClassRef",
                                      {{"group", "karpenter.kwok.sh"},
                                       {"kind", "KWOKNodeClass"},
                                       {"name", "default"}}}}}}}}}};
  EXPECT_TRUE(apis::core::DecodeJson(json, pool).ok());
  return pool;
}

class QueueTest : public ::testing::Test {
 protected:
  QueueTest() : queue_(cluster_, clock_, &metrics_, writer_) {
    pools_["pool"] = Pool("pool");
    for (const std::string name : {"a", "b"}) AddNode(name);
  }

  void AddNode(const std::string& name) {
    const std::string provider = absl::StrCat("kwok://", name);
    nlohmann::json labels = {{"karpenter.sh/nodepool", "pool"},
                             {"karpenter.sh/capacity-type", "spot"},
                             {"karpenter.sh/registered", "true"},
                             {"karpenter.sh/initialized", "true"}};
    cluster_.UpdateNode(objects_.Node(NodeJson(name, provider, "4", "16Gi", labels)));
    cluster_.UpdateNodeClaim(objects_.NodeClaim(NodeClaimJson(ClaimOf(name), "pool", provider)));
  }
  static std::string ClaimOf(const std::string& node) { return absl::StrCat("claim-", node); }

  Candidate CandidateFor(const std::string& name) {
    Candidate c;
    c.node = *cluster_.GetByNodeName(name);
    c.name = name;
    c.node_claim = ClaimOf(name);
    c.node_pool = "pool";
    return c;
  }
  Command Replace(const std::vector<std::string>& names) {
    Command command = Delete(names);
    command.method = Method::kSingleNodeConsolidation;
    solver::NewNodeClaim r;
    r.pool = "pool";
    r.instance_type = "small";
    r.capacity_type = "spot";
    command.replacements.push_back(r);
    return command;
  }
  Command Delete(const std::vector<std::string>& names) {
    Command command;
    command.method = Method::kEmptiness;
    for (const std::string& n : names) command.candidates.push_back(CandidateFor(n));
    return command;
  }
  bool Marked(const std::string& name) { return cluster_.GetByNodeName(name)->marked_for_deletion; }
  void Initialize(const std::string& claim) {
    nlohmann::json json = NodeClaimJson(claim, "pool", absl::StrCat("kwok://", claim));
    json["status"]["conditions"] = {{{"type", "Initialized"}, {"status", "True"}}};
    cluster_.UpdateNodeClaim(objects_.NodeClaim(json));
  }

  state::testing::Objects objects_;
  FakeClock clock_;
  state::Cluster cluster_{clock_};
  metrics::Registry metrics_;
  FakeWriter writer_;
  Queue queue_;
  absl::flat_hash_map<std::string, v1::NodePool> pools_;
};

TEST(CommandTimeoutTest, ClampsBetweenTenMinutesAndOneHour) {
  const QueueOptions options;
  EXPECT_EQ(CommandTimeout(1, options), absl::Minutes(10));
  EXPECT_EQ(CommandTimeout(7500, options), absl::Minutes(10));
  EXPECT_EQ(CommandTimeout(10000, options), absl::Seconds(800));
  EXPECT_EQ(CommandTimeout(1000000, options), absl::Hours(1));
}

// Two instants and the states one replacement goes through, for Decide and DecideInvoluntary.
class DecideTest : public ::testing::Test {
 protected:
  const absl::Time now = absl::FromUnixSeconds(1000);
  const absl::Time later = now + absl::Minutes(1);
  const ReplacementState launching{.name = "r", .exists = true};
  const ReplacementState launched{.name = "r", .exists = true, .launched = true};
  const ReplacementState ready{.name = "r", .exists = true, .launched = true, .initialized = true};
  const ReplacementState gone{.name = "r"};
  const ReplacementState deleting{.name = "r", .exists = true, .deleting = true};
};
using DecideInvoluntaryTest = DecideTest;

TEST_F(DecideTest, FollowsTheReplacements) {
  EXPECT_EQ(Decide({}, now, later).action, QueueAction::kTerminate);
  EXPECT_EQ(Decide({{launching}}, now, later).action, QueueAction::kWaitLaunch);
  EXPECT_EQ(Decide({{launched, launching}}, now, later).action, QueueAction::kWaitLaunch);
  EXPECT_EQ(Decide({{launched}}, now, later).action, QueueAction::kWaitReadiness);
  EXPECT_EQ(Decide({{ready}}, now, later).action, QueueAction::kTerminate);
  EXPECT_EQ(Decide({{ready}}, later, now).action, QueueAction::kTerminate);
  EXPECT_EQ(Decide({{launched}}, later, now).action, QueueAction::kRollback);
  EXPECT_EQ(Decide({{ready, gone}}, now, later).action, QueueAction::kRollback);
  EXPECT_EQ(Decide({{deleting}}, now, later).action, QueueAction::kRollback);
}

TEST_F(DecideInvoluntaryTest, NeverRollsBack) {
  for (const bool when_ready : {true, false}) {
    const QueueAction on_ready = when_ready ? QueueAction::kTerminate : QueueAction::kWaitDeadline;
    EXPECT_EQ(DecideInvoluntary({}, now, later, when_ready).action, on_ready);
    EXPECT_EQ(DecideInvoluntary({{launching}}, now, later, when_ready).action,
              QueueAction::kWaitLaunch);
    EXPECT_EQ(DecideInvoluntary({{launched}}, now, later, when_ready).action,
              QueueAction::kWaitReadiness);
    EXPECT_EQ(DecideInvoluntary({{ready}}, now, later, when_ready).action, on_ready);
    EXPECT_EQ(DecideInvoluntary({{launching, gone}}, now, later, when_ready).action, on_ready);
    EXPECT_EQ(DecideInvoluntary({{deleting}}, now, later, when_ready).action, on_ready);
    EXPECT_EQ(DecideInvoluntary({{launching}}, later, now, when_ready).action,
              QueueAction::kTerminate);
    EXPECT_EQ(DecideInvoluntary({{gone}}, later, later, when_ready).action,
              QueueAction::kTerminate);
  }
}

TEST(ReasonTest, NamesAndLabels) {
  EXPECT_EQ(ReasonName(v1::DisruptionReason::kUnderutilized), "Underutilized");
  EXPECT_EQ(ReasonLabel(v1::DisruptionReason::kDrifted), "drifted");
}

TEST_F(QueueTest, ReplaceTaintsCreatesThenMarksAndHolds) {
  absl::StatusOr<std::string> id = queue_.StartCommand(Replace({"a"}), pools_);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_THAT(writer_.tainted, UnorderedElementsAre("a"));
  EXPECT_EQ(writer_.conditions["claim-a"], "Underutilized");
  ASSERT_EQ(writer_.created.size(), 1u);
  EXPECT_TRUE(cluster_.GetByNodeClaimName(writer_.created[0]).has_value());
  EXPECT_TRUE(Marked("a"));
  EXPECT_FALSE(Marked("b"));
  EXPECT_THAT(queue_.Held(), UnorderedElementsAre("kwok://a"));
  EXPECT_EQ(queue_.size(), 1u);
}

TEST_F(QueueTest, DecisionIdAnnotatesCandidatesAndReplacements) {
  Command command = Replace({"a"});
  command.decision_id = "0a1b2c3d";
  ASSERT_TRUE(queue_.StartCommand(command, pools_).ok());
  ASSERT_EQ(writer_.created.size(), 1u);
  EXPECT_EQ(writer_.annotations["claim-a"]["dovetail.sh/decision-id"], "0a1b2c3d");
  EXPECT_EQ(writer_.annotations[writer_.created[0]]["dovetail.sh/decision-id"], "0a1b2c3d");
  EXPECT_EQ(queue_.Find("claim-a")->decision_id, "0a1b2c3d");
}

TEST_F(QueueTest, RejectsACommandWhoseCandidateIsHeld) {
  ASSERT_TRUE(queue_.StartCommand(Replace({"a"}), pools_).ok());
  absl::StatusOr<std::string> second = queue_.StartCommand(Delete({"b", "a"}), pools_);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(writer_.tainted, UnorderedElementsAre("a"));
  EXPECT_THAT(queue_.Held(), UnorderedElementsAre("kwok://a"));
  EXPECT_EQ(queue_.stats().rejected, 1);
}

TEST_F(QueueTest, FailedCreateUndoesEverything) {
  writer_.creates_before_failure = 0;
  absl::StatusOr<std::string> id = queue_.StartCommand(Replace({"a"}), pools_);
  EXPECT_EQ(id.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(writer_.tainted, IsEmpty());
  EXPECT_THAT(writer_.conditions, IsEmpty());
  EXPECT_FALSE(Marked("a"));
  EXPECT_THAT(queue_.Held(), IsEmpty());
  EXPECT_EQ(queue_.size(), 0u);
}

TEST_F(QueueTest, UnknownReplacementPoolIsRejectedBeforeAnyWrite) {
  Command command = Replace({"a"});
  command.replacements[0].pool = "missing";
  EXPECT_EQ(queue_.StartCommand(command, pools_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(writer_.tainted, IsEmpty());
}

TEST_F(QueueTest, StartedCommandNominatesTheDestinations) {
  Command command = Delete({"a"});
  command.destinations = {"b", "unknown-node"};
  ASSERT_TRUE(queue_.StartCommand(command, pools_).ok());
  EXPECT_TRUE(cluster_.GetByNodeName("b")->Nominated(clock_.Now()));
  EXPECT_FALSE(cluster_.GetByNodeName("a")->Nominated(clock_.Now()));
}

TEST_F(QueueTest, DeleteGoesOnWithoutACandidateThatCannotBeTainted) {
  writer_.fail_taint.insert("b");
  ASSERT_TRUE(queue_.StartCommand(Delete({"a", "b"}), pools_).ok());
  EXPECT_TRUE(Marked("a"));
  EXPECT_FALSE(Marked("b"));
  EXPECT_THAT(queue_.Held(), UnorderedElementsAre("kwok://a"));
  queue_.Reconcile();  // no replacements: terminates at once
  EXPECT_THAT(writer_.deleted, UnorderedElementsAre("claim-a"));
  EXPECT_THAT(queue_.Held(), IsEmpty());
  EXPECT_EQ(metrics_.NewCounter("karpenter_nodeclaims_disrupted_total", "", {})
                .Value({"empty", "pool", "spot"}),
            1);
}

TEST_F(QueueTest, ReplaceFailsWhenACandidateCannotBeTainted) {
  writer_.fail_taint.insert("b");
  EXPECT_FALSE(queue_.StartCommand(Replace({"a", "b"}), pools_).ok());
  EXPECT_THAT(writer_.tainted, IsEmpty());
  EXPECT_THAT(writer_.conditions, IsEmpty());
  EXPECT_THAT(writer_.created, IsEmpty());
  EXPECT_THAT(queue_.Held(), IsEmpty());
}

TEST_F(QueueTest, WaitsForTheReplacementThenDeletesTheCandidate) {
  ASSERT_TRUE(queue_.StartCommand(Replace({"a"}), pools_).ok());
  queue_.Reconcile();
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, IsEmpty());
  EXPECT_THAT(writer_.events, UnorderedElementsAre("NodeClaim/claim-a:DisruptionLaunching"));
  Initialize(writer_.created[0]);
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, UnorderedElementsAre("claim-a"));
  EXPECT_THAT(writer_.events, UnorderedElementsAre("NodeClaim/claim-a:DisruptionLaunching",
                                                   "Node/a:DisruptionTerminating",
                                                   "NodeClaim/claim-a:DisruptionTerminating"));
  EXPECT_THAT(queue_.Held(), IsEmpty());
  EXPECT_TRUE(Marked("a"));  // it is going away
  EXPECT_EQ(queue_.stats().terminated, 1);
}

TEST_F(QueueTest, DeletedReplacementRollsBack) {
  ASSERT_TRUE(queue_.StartCommand(Replace({"a"}), pools_).ok());
  const std::string replacement = writer_.created[0];
  queue_.Reconcile();
  cluster_.DeleteNodeClaim(*cluster_.GetByNodeClaimName(replacement)->node_claim);
  writer_.alive.erase(replacement);
  queue_.Reconcile();
  EXPECT_THAT(writer_.tainted, IsEmpty());
  EXPECT_THAT(writer_.conditions, IsEmpty());
  EXPECT_FALSE(Marked("a"));
  EXPECT_THAT(queue_.Held(), IsEmpty());
  EXPECT_THAT(writer_.deleted, IsEmpty());
  EXPECT_EQ(metrics_.NewCounter("karpenter_voluntary_disruption_queue_failures_total", "", {})
                .Value({"replace", "underutilized", "single"}),
            1);
}

TEST_F(QueueTest, ReplacementMissingFromStateButAliveKeepsWaiting) {
  ASSERT_TRUE(queue_.StartCommand(Replace({"a"}), pools_).ok());
  cluster_.DeleteNodeClaim(*cluster_.GetByNodeClaimName(writer_.created[0])->node_claim);
  queue_.Reconcile();  // the API server still has it
  EXPECT_THAT(queue_.Held(), UnorderedElementsAre("kwok://a"));
  EXPECT_TRUE(Marked("a"));
}

TEST_F(QueueTest, TimeoutRollsBack) {
  ASSERT_TRUE(queue_.StartCommand(Replace({"a"}), pools_).ok());
  clock_.Advance(absl::Minutes(9));
  queue_.Reconcile();
  EXPECT_EQ(queue_.size(), 1u);
  clock_.Advance(absl::Minutes(1));
  queue_.Reconcile();
  EXPECT_EQ(queue_.size(), 0u);
  EXPECT_FALSE(Marked("a"));
  EXPECT_THAT(writer_.tainted, IsEmpty());
  EXPECT_EQ(queue_.stats().rolled_back, 1);
}

TEST_F(QueueTest, RollbackRetriesFailedWritesAndHoldsUntilDone) {
  ASSERT_TRUE(queue_.StartCommand(Replace({"a"}), pools_).ok());
  writer_.alive.clear();
  cluster_.DeleteNodeClaim(*cluster_.GetByNodeClaimName(writer_.created[0])->node_claim);
  writer_.untaint_failures = 1;
  queue_.Reconcile();
  EXPECT_FALSE(Marked("a"));
  EXPECT_THAT(writer_.tainted, UnorderedElementsAre("a"));
  EXPECT_THAT(queue_.Held(), UnorderedElementsAre("kwok://a"));
  queue_.Reconcile();
  EXPECT_THAT(writer_.tainted, IsEmpty());
  EXPECT_THAT(queue_.Held(), IsEmpty());
  EXPECT_EQ(queue_.stats().rolled_back, 1);  // counted once
}

TEST_F(QueueTest, CommandsWaitInParallel) {
  ASSERT_TRUE(queue_.StartCommand(Replace({"a"}), pools_).ok());
  ASSERT_TRUE(queue_.StartCommand(Replace({"b"}), pools_).ok());
  ASSERT_EQ(writer_.created.size(), 2u);
  Initialize(writer_.created[1]);
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, UnorderedElementsAre("claim-b"));
  EXPECT_THAT(queue_.Held(), UnorderedElementsAre("kwok://a"));
}

TEST_F(QueueTest, RemovesStaleMarksOnlyOutsideTheQueueAndDeletions) {
  for (const std::string name : {"c", "d", "e"}) {
    const std::string provider = absl::StrCat("kwok://", name);
    nlohmann::json node =
        NodeJson(name, provider, "4", "16Gi", {{"karpenter.sh/nodepool", "pool"}});
    node["spec"]["taints"] = {{{"key", "karpenter.sh/disrupted"}, {"effect", "NoSchedule"}}};
    cluster_.UpdateNode(objects_.Node(node));
    nlohmann::json claim = NodeClaimJson(ClaimOf(name), "pool", provider);
    claim["status"]["conditions"] = {
        {{"type", "DisruptionReason"}, {"status", "True"}, {"reason", "Underutilized"}}};
    cluster_.UpdateNodeClaim(objects_.NodeClaim(claim));
    writer_.tainted.insert(name);
    writer_.conditions[ClaimOf(name)] = "Underutilized";
  }
  cluster_.MarkForDeletion({"kwok://e"});
  absl::StatusOr<int> removed = RemoveStaleDisruptionMarks(cluster_, {"kwok://d"}, writer_);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 2);
  EXPECT_THAT(writer_.tainted, UnorderedElementsAre("d", "e"));
  EXPECT_EQ(writer_.conditions.count("claim-c"), 0u);
  EXPECT_EQ(writer_.conditions.count("claim-d"), 1u);
}

TEST_F(QueueTest, StaleMarkRemovalReportsAFailedWrite) {
  nlohmann::json node = NodeJson("c", "kwok://c", "4", "16Gi");
  node["spec"]["taints"] = {{{"key", "karpenter.sh/disrupted"}, {"effect", "NoSchedule"}}};
  cluster_.UpdateNode(objects_.Node(node));
  writer_.untaint_failures = 1;
  EXPECT_EQ(RemoveStaleDisruptionMarks(cluster_, {}, writer_).status().code(),
            absl::StatusCode::kUnavailable);
}

// ---- Involuntary commands ----------------------------------------------------------------------

class InvoluntaryQueueTest : public QueueTest {
 protected:
  CommandOptions Involuntary(absl::Duration deadline, bool delete_when_ready, bool cordon) {
    return {.involuntary = true,
            .deadline = clock_.Now() + deadline,
            .delete_when_ready = delete_when_ready,
            .cordon = cordon,
            .reason = "SpotInterrupted"};
  }
  void DeleteReplacement(const std::string& name) {
    cluster_.DeleteNodeClaim(*cluster_.GetByNodeClaimName(name)->node_claim);
    writer_.alive.erase(name);
  }
  int64_t Disrupted(const std::string& reason) {
    return metrics_.NewCounter("karpenter_nodeclaims_disrupted_total", "", {})
        .Value({reason, "pool", "spot"});
  }
  int64_t QueueFailures() {
    return metrics_.NewCounter("karpenter_voluntary_disruption_queue_failures_total", "", {})
        .Value({"replace", "underutilized", "single"});
  }
};

TEST_F(InvoluntaryQueueTest, TerminatesAtTheDeadlineWithoutInitializedReplacements) {
  absl::StatusOr<std::string> id = queue_.StartCommand(
      Replace({"a"}), pools_, Involuntary(absl::Minutes(2), /*delete_when_ready=*/true, true));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->rfind("spotinterrupted-", 0), 0u) << *id;
  EXPECT_THAT(writer_.tainted, UnorderedElementsAre("a"));
  EXPECT_THAT(writer_.conditions, IsEmpty());  // no DisruptionReason for involuntary commands
  EXPECT_TRUE(Marked("a"));
  ASSERT_TRUE(queue_.Find("claim-a").has_value());
  EXPECT_EQ(queue_.Find("claim-a")->involuntary, true);
  clock_.Advance(absl::Minutes(1));
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, IsEmpty());
  clock_.Advance(absl::Minutes(1));
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, UnorderedElementsAre("claim-a"));
  EXPECT_THAT(writer_.tainted, UnorderedElementsAre("a"));  // not undone
  EXPECT_THAT(queue_.Held(), IsEmpty());
  EXPECT_EQ(queue_.stats().rolled_back, 0);
  EXPECT_EQ(queue_.stats().terminated, 1);
  EXPECT_EQ(Disrupted("spotinterrupted"), 1);
  EXPECT_EQ(Disrupted("underutilized"), 0);
}

TEST_F(InvoluntaryQueueTest, MetricReasonLabelsTheCountersAndTheCommandId) {
  CommandOptions options = Involuntary(absl::Minutes(2), /*delete_when_ready=*/true, true);
  options.metric_reason = "spot_interrupted";
  absl::StatusOr<std::string> id = queue_.StartCommand(Replace({"a"}), pools_, options);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->rfind("spot_interrupted-", 0), 0u) << *id;
  EXPECT_EQ(queue_.Find("claim-a")->reason, "SpotInterrupted");  // events keep the reason
  clock_.Advance(absl::Minutes(2));
  queue_.Reconcile();
  EXPECT_EQ(Disrupted("spot_interrupted"), 1);
  EXPECT_EQ(Disrupted("spotinterrupted"), 0);
}

TEST_F(InvoluntaryQueueTest, DeletedReplacementTerminatesWhenDeleteWhenReady) {
  ASSERT_TRUE(queue_
                  .StartCommand(Replace({"a"}), pools_,
                                Involuntary(absl::Minutes(10), /*delete_when_ready=*/true, true))
                  .ok());
  queue_.Reconcile();
  DeleteReplacement(writer_.created[0]);
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, UnorderedElementsAre("claim-a"));
  EXPECT_TRUE(Marked("a"));
  EXPECT_EQ(queue_.stats().rolled_back, 0);
  EXPECT_EQ(QueueFailures(), 0);
}

TEST_F(InvoluntaryQueueTest, DeletedReplacementWaitsForTheDeadlineWithoutDeleteWhenReady) {
  ASSERT_TRUE(queue_
                  .StartCommand(Replace({"a"}), pools_,
                                Involuntary(absl::Minutes(10), /*delete_when_ready=*/false, true))
                  .ok());
  DeleteReplacement(writer_.created[0]);
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, IsEmpty());
  EXPECT_THAT(queue_.Held(), UnorderedElementsAre("kwok://a"));
  EXPECT_TRUE(Marked("a"));
  EXPECT_THAT(writer_.tainted, UnorderedElementsAre("a"));
  clock_.Advance(absl::Minutes(10));
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, UnorderedElementsAre("claim-a"));
  EXPECT_EQ(queue_.stats().rolled_back, 0);
}

TEST_F(InvoluntaryQueueTest, WithoutDeleteWhenReadyWaitsForTheDeadlineEvenWhenReady) {
  ASSERT_TRUE(queue_
                  .StartCommand(Replace({"a"}), pools_,
                                Involuntary(absl::Minutes(5), /*delete_when_ready=*/false, true))
                  .ok());
  Initialize(writer_.created[0]);
  queue_.Reconcile();
  clock_.Advance(absl::Minutes(4));
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, IsEmpty());
  EXPECT_THAT(queue_.Held(), UnorderedElementsAre("kwok://a"));
  clock_.Advance(absl::Minutes(1));
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, UnorderedElementsAre("claim-a"));
}

TEST_F(InvoluntaryQueueTest, WithoutCordonNeitherTaintsNorMarksAndKeepsNominating) {
  ASSERT_TRUE(queue_
                  .StartCommand(Replace({"a"}), pools_,
                                Involuntary(absl::Minutes(5), /*delete_when_ready=*/false,
                                            /*cordon=*/false))
                  .ok());
  const std::string replacement = writer_.created[0];
  EXPECT_THAT(writer_.tainted, IsEmpty());
  EXPECT_THAT(writer_.conditions, IsEmpty());
  EXPECT_FALSE(Marked("a"));
  EXPECT_THAT(queue_.Held(), UnorderedElementsAre("kwok://a"));
  Initialize(replacement);
  for (int i = 0; i < 4; ++i) {
    // Past the 20 s nomination of the start: re-nominated every poll.
    clock_.Advance(absl::Seconds(50));
    queue_.Reconcile();
    EXPECT_TRUE(cluster_.GetByNodeClaimName(replacement)->Nominated(clock_.Now())) << "poll " << i;
  }
  EXPECT_FALSE(Marked("a"));
  EXPECT_THAT(writer_.deleted, IsEmpty());
  clock_.Advance(absl::Minutes(2));
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, UnorderedElementsAre("claim-a"));
  EXPECT_TRUE(Marked("a"));  // marked when it terminates
  EXPECT_THAT(writer_.tainted, IsEmpty());
}

TEST_F(InvoluntaryQueueTest, UpgradesAVoluntaryCommand) {
  ASSERT_TRUE(queue_.StartCommand(Replace({"a"}), pools_).ok());
  queue_.Reconcile();
  ASSERT_TRUE(queue_.Find("kwok://a").has_value());
  EXPECT_EQ(queue_.Find("kwok://a")->involuntary, false);
  // The voluntary command counts as delete_when_ready and cordon: they stay true.
  absl::StatusOr<std::string> id = queue_.MakeInvoluntary(
      "claim-a", Involuntary(absl::Minutes(2), /*delete_when_ready=*/false, /*cordon=*/false));
  ASSERT_TRUE(id.ok()) << id.status();
  std::optional<CommandInfo> info = queue_.Find("kwok://a");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->id, *id);
  EXPECT_TRUE(info->involuntary);
  EXPECT_TRUE(info->delete_when_ready);
  EXPECT_TRUE(info->cordon);
  EXPECT_EQ(info->reason, "SpotInterrupted");
  EXPECT_EQ(info->deadline, clock_.Now() + absl::Minutes(2));
  DeleteReplacement(writer_.created[0]);
  queue_.Reconcile();  // voluntary, this would roll back
  EXPECT_THAT(writer_.deleted, UnorderedElementsAre("claim-a"));
  EXPECT_TRUE(Marked("a"));
  EXPECT_EQ(queue_.stats().rolled_back, 0);
  EXPECT_EQ(QueueFailures(), 0);
  EXPECT_EQ(Disrupted("spotinterrupted"), 1);
}

TEST_F(InvoluntaryQueueTest, UpgradeTakesTheEarlierDeadlineAndCordons) {
  ASSERT_TRUE(queue_
                  .StartCommand(Replace({"a"}), pools_,
                                Involuntary(absl::Minutes(30), /*delete_when_ready=*/false,
                                            /*cordon=*/false))
                  .ok());
  EXPECT_FALSE(Marked("a"));
  // A later deadline does not extend the command; cordon turns true now.
  ASSERT_TRUE(
      queue_.MakeInvoluntary("kwok://a", Involuntary(absl::Hours(2), false, /*cordon=*/true)).ok());
  EXPECT_THAT(writer_.tainted, UnorderedElementsAre("a"));
  EXPECT_TRUE(Marked("a"));
  ASSERT_TRUE(
      queue_.MakeInvoluntary("claim-a", Involuntary(absl::Minutes(2), false, /*cordon=*/false))
          .ok());
  EXPECT_EQ(queue_.Find("claim-a")->deadline, clock_.Now() + absl::Minutes(2));
  EXPECT_TRUE(queue_.Find("claim-a")->cordon);  // OR-ed
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, IsEmpty());
  clock_.Advance(absl::Minutes(2));
  queue_.Reconcile();
  EXPECT_THAT(writer_.deleted, UnorderedElementsAre("claim-a"));
}

TEST_F(InvoluntaryQueueTest, UpgradeOfAnUnheldNodeIsNotFound) {
  EXPECT_EQ(
      queue_.MakeInvoluntary("claim-b", Involuntary(absl::Minutes(2), true, true)).status().code(),
      absl::StatusCode::kNotFound);
  EXPECT_FALSE(queue_.Find("claim-b").has_value());
}

TEST_F(InvoluntaryQueueTest, HeldInvoluntaryNodesKeepTheirTaintInStaleMarkRecovery) {
  nlohmann::json node = NodeJson("c", "kwok://c", "4", "16Gi", {{"karpenter.sh/nodepool", "pool"}});
  node["spec"]["taints"] = {{{"key", "karpenter.sh/disrupted"}, {"effect", "NoSchedule"}}};
  cluster_.UpdateNode(objects_.Node(node));
  cluster_.UpdateNodeClaim(objects_.NodeClaim(NodeClaimJson(ClaimOf("c"), "pool", "kwok://c")));
  ASSERT_TRUE(queue_
                  .StartCommand(Replace({"c"}), pools_,
                                Involuntary(absl::Minutes(5), false, /*cordon=*/false))
                  .ok());
  writer_.tainted.insert("c");
  absl::StatusOr<int> removed = RemoveStaleDisruptionMarks(cluster_, queue_.Held(), writer_);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 0);
  EXPECT_THAT(writer_.tainted, UnorderedElementsAre("c"));
}

}  // namespace
}  // namespace dovetail::controllers::disruption
