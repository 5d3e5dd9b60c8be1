// The interruption controller against moto SQS and a real kube-apiserver with the CRDs of
// charts/dovetail/crds: a NodeClaim (status.providerID aws:///us-east-1a/<id>, spot labels) and
// its Node; a spot interruption EventBridge event for that instance sent to the queue deletes the
// NodeClaim, marks the spot offering unavailable and leaves the queue empty; a garbage body and
// an event for an unknown instance are deleted without action while the loop keeps going. With a
// Replacer (a fake that records its requests), spot warnings and Health events ask it to replace
// first with the right deadline and do not delete; a Replacer error falls back to deleting; a
// rebalance recommendation on a NodePool with dovetail.sh/rebalance-policy: Replace taints and
// asks for a pre-launch that neither cordons nor deletes when ready.
//
// The API server is shared with other integration tests: every assertion is about this test's
// objects; moto is this test's own.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/disruption/involuntary_record.h"
#include "dovetail/controllers/disruption/replacer.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/providers/aws/interruption/interruption_controller.h"
#include "dovetail/providers/aws/sqs_client.h"
#include "dovetail/providers/aws/unavailable_offerings.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/aws/moto_env.h"
#include "test/integration/aws/no_cloud.h"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::providers::aws::interruption {
namespace {

using kube::testing::UniqueName;
using kube::testing::WaitFor;

using ::dovetail::testing::NoCloud;

using controllers::disruption::ReplaceRequest;
using controllers::disruption::ReplaceResult;

// Records every request; answers OK (already_held from the second request for a NodeClaim on) or
// the error it was told to fail with. Notes whether the spot offering was already marked
// unavailable when it was asked.
class FakeReplacer final : public controllers::disruption::Replacer {
 public:
  explicit FakeReplacer(const UnavailableOfferings& unavailable) : unavailable_(unavailable) {}

  absl::StatusOr<ReplaceResult> Replace(const ReplaceRequest& request) override {
    absl::MutexLock lock(&mu_);
    requests_.push_back(request);
    spot_marked_at_call_.push_back(unavailable_.IsUnavailable("spot", "m5.large", "us-east-1a"));
    if (!error_.ok()) return error_;
    ReplaceResult result;
    result.command_id = absl::StrCat("cmd-", request.node_claim);
    result.replacements = {absl::StrCat(request.node_claim, "-replacement")};
    for (size_t i = 0; i + 1 < requests_.size(); ++i) {
      if (requests_[i].node_claim == request.node_claim) result.already_held = true;
    }
    return result;
  }

  void FailWith(absl::Status error) {
    absl::MutexLock lock(&mu_);
    error_ = std::move(error);
  }
  std::vector<ReplaceRequest> RequestsFor(const std::string& claim) {
    absl::MutexLock lock(&mu_);
    std::vector<ReplaceRequest> out;
    for (const ReplaceRequest& r : requests_) {
      if (r.node_claim == claim) out.push_back(r);
    }
    return out;
  }
  size_t Count() {
    absl::MutexLock lock(&mu_);
    return requests_.size();
  }
  bool SpotMarkedAtEveryCall() {
    absl::MutexLock lock(&mu_);
    for (bool b : spot_marked_at_call_) {
      if (!b) return false;
    }
    return !spot_marked_at_call_.empty();
  }

 private:
  const UnavailableOfferings& unavailable_;
  absl::Mutex mu_;
  std::vector<ReplaceRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> spot_marked_at_call_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

// Now, to the second (event times have seconds).
absl::Time NowSeconds() { return absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now())); }

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime(absl::RFC3339_sec, t, absl::UTCTimeZone());
}

std::string HealthEvent(const std::string& instance_id, absl::Time start) {
  const std::string rfc1123 =
      absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT", start, absl::UTCTimeZone());
  const nlohmann::json event = {
      {"version", "0"},
      {"id", UniqueName("evt")},
      {"detail-type", "AWS Health Event"},
      {"source", "aws.health"},
      {"account", "123456789012"},
      {"time", Rfc3339(NowSeconds())},
      {"region", "us-east-1"},
      {"resources", {instance_id}},
      {"detail",
       {{"eventArn", "arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/1"},
        {"service", "EC2"},
        {"eventTypeCode", "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"},
        {"eventTypeCategory", "scheduledChange"},
        {"startTime", rfc1123},
        {"affectedEntities", {{{"entityValue", instance_id}}}}}}};
  return event.dump();
}

std::string StateChangeEvent(const std::string& instance_id, const std::string& state) {
  const nlohmann::json event = {
      {"version", "0"},
      {"id", UniqueName("evt")},
      {"detail-type", "EC2 Instance State-change Notification"},
      {"source", "aws.ec2"},
      {"account", "123456789012"},
      {"time", Rfc3339(NowSeconds())},
      {"region", "us-east-1"},
      {"resources", {absl::StrCat("arn:aws:ec2:us-east-1:123456789012:instance/", instance_id)}},
      {"detail", {{"instance-id", instance_id}, {"state", state}}}};
  return event.dump();
}

std::string RebalanceEvent(const std::string& instance_id) {
  const nlohmann::json event = {
      {"version", "0"},
      {"id", UniqueName("evt")},
      {"detail-type", "EC2 Instance Rebalance Recommendation"},
      {"source", "aws.ec2"},
      {"account", "123456789012"},
      {"time", "2026-11-30T16:00:00Z"},
      {"region", "us-east-1"},
      {"resources", {absl::StrCat("arn:aws:ec2:us-east-1a:instance/", instance_id)}},
      {"detail", {{"instance-id", instance_id}}}};
  return event.dump();
}

std::string SpotEvent(const std::string& instance_id,
                      const std::string& time = "2026-11-30T16:00:00Z") {
  const nlohmann::json event = {
      {"version", "0"},
      {"id", UniqueName("evt")},
      {"detail-type", "EC2 Spot Instance Interruption Warning"},
      {"source", "aws.ec2"},
      {"account", "123456789012"},
      {"time", time},
      {"region", "us-east-1"},
      {"resources", {absl::StrCat("arn:aws:ec2:us-east-1a:instance/", instance_id)}},
      {"detail", {{"instance-id", instance_id}, {"instance-action", "terminate"}}}};
  return event.dump();
}

class InterruptionIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::MotoEndpoint().empty()) << "DOVETAIL_MOTO_DIR/endpoint missing";
    sqs_client_ = aws_connection_.Client(kSqs);
    sqs_ = std::make_unique<SqsClient>(*sqs_client_);
    queue_name_ = UniqueName("dovetail-interruption");
    auto url = sqs_->CreateQueue(queue_name_);
    ASSERT_TRUE(url.ok()) << url.status();
    queue_url_ = *url;

    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-interruption-test");
    events_ = std::make_unique<kube::EventRecorder>(*client_, aws_connection_.clock,
                                                    kube::EventRecorderOptions{});
    informers_ = std::make_unique<state::ClusterInformers>(*client_, cluster_);
    deps_ = std::make_unique<controllers::Dependencies>(controllers::Dependencies{
        *client_, cluster_, *informers_, cloud_, aws_connection_.clock, *events_, &metrics_});
    ControllerOptions options;
    options.queue_name = queue_name_;
    options.receive.wait_time = absl::Seconds(1);
    options.receive.visibility_timeout = absl::Seconds(5);
    controller_ =
        std::make_unique<InterruptionController>(*deps_, *sqs_, &unavailable_, Replacer(), options);
    informers_->Start();
    ASSERT_TRUE(informers_->WaitForSync(absl::Now() + absl::Seconds(60)));
    controller_->Start();
  }

  // The Replacer the controller gets: none (upstream's delete-at-once) unless a fixture says so.
  virtual controllers::disruption::Replacer* Replacer() { return nullptr; }

  void TearDown() override {
    if (controller_ != nullptr) controller_->Stop();
    controller_.reset();
    if (informers_ != nullptr) informers_->Stop();
    if (client_ == nullptr) return;
    for (const std::string& name : claims_) {
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    for (const std::string& name : nodes_) (void)client_->Delete(kube::resources::kNodes, "", name);
    for (const std::string& name : pools_) {
      (void)client_->Delete(kube::resources::kNodePools, "", name);
    }
  }

  // A launched spot NodeClaim and its Node for `instance_id`; returns the NodeClaim's name.
  std::string CreateLaunched(const std::string& instance_id, const std::string& pool = "int-it") {
    const std::string claim = UniqueName("int-it-claim");
    const std::string node = UniqueName("int-it-node");
    const std::string provider_id = absl::StrCat("aws:///us-east-1a/", instance_id);
    const nlohmann::json labels = {{"karpenter.sh/nodepool", pool},
                                   {"karpenter.sh/capacity-type", "spot"},
                                   {"node.kubernetes.io/instance-type", "m5.large"},
                                   {"topology.kubernetes.io/zone", "us-east-1a"}};
    nlohmann::json body = {
        {"apiVersion", "karpenter.sh/v1"},
        {"kind", "NodeClaim"},
        {"metadata", {{"name", claim}, {"labels", labels}}},
        {"spec",
         {{"requirements",
           {{{"key", "kubernetes.io/arch"}, {"operator", "In"}, {"values", {"amd64"}}}}},
          {"nodeClassRef",
           {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "default"}}}}}};
    auto created = client_->Create(kube::resources::kNodeClaims, "", body.dump());
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return claim;
    claims_.push_back(claim);
    nlohmann::json stored = nlohmann::json::parse(*created);
    stored["status"] = {{"providerID", provider_id}, {"nodeName", node}};
    auto updated = client_->UpdateStatus(kube::resources::kNodeClaims, "", claim, stored.dump());
    EXPECT_TRUE(updated.ok()) << updated.status();
    const nlohmann::json node_body = {{"apiVersion", "v1"},
                                      {"kind", "Node"},
                                      {"metadata", {{"name", node}, {"labels", labels}}},
                                      {"spec", {{"providerID", provider_id}}}};
    auto node_created = client_->Create(kube::resources::kNodes, "", node_body.dump());
    EXPECT_TRUE(node_created.ok()) << node_created.status();
    nodes_.push_back(node);
    EXPECT_TRUE(WaitFor([&] {
      auto n = cluster_.GetByNodeClaimName(claim);
      return n.has_value() && n->ProviderId() == provider_id && n->node != nullptr;
    })) << "the cluster state does not see the launched NodeClaim";
    return claim;
  }

  bool ClaimGone(const std::string& claim) {
    auto got = client_->Get(kube::resources::kNodeClaims, "", claim);
    return !got.ok() && kube::IsNotFound(got.status());
  }

  // The queue has no message, visible or in flight.
  bool QueueEmpty() {
    auto attrs =
        sqs_->Call("GetQueueAttributes",
                   {{"QueueUrl", queue_url_},
                    {"AttributeNames",
                     {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}}});
    if (!attrs.ok()) return false;
    const nlohmann::json& a = (*attrs)["Attributes"];
    return a.value("ApproximateNumberOfMessages", "x") == "0" &&
           a.value("ApproximateNumberOfMessagesNotVisible", "x") == "0";
  }

  double Received(const std::string& type) {
    return metrics_
        .NewCounter("karpenter_interruption_received_messages_total", "", {"message_type"})
        .Value({type});
  }
  double Deleted() {
    return metrics_.NewCounter("karpenter_interruption_deleted_messages_total", "").Value();
  }
  double Disrupted(const std::string& reason, const std::string& pool) {
    return metrics_
        .NewCounter("karpenter_nodeclaims_disrupted_total", "",
                    {"reason", "nodepool", "capacity_type"})
        .Value({reason, pool, "spot"});
  }
  std::string CreatePool(const nlohmann::json& annotations) {
    const std::string pool = UniqueName("int-it-pool");
    const nlohmann::json body = {
        {"apiVersion", "karpenter.sh/v1"},
        {"kind", "NodePool"},
        {"metadata", {{"name", pool}, {"annotations", annotations}}},
        {"spec",
         {{"template",
           {{"spec",
             {{"nodeClassRef",
               {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "default"}}},
              {"requirements", nlohmann::json::array()}}}}}}}};
    auto created = client_->Create(kube::resources::kNodePools, "", body.dump());
    EXPECT_TRUE(created.ok()) << created.status();
    pools_.push_back(pool);
    return pool;
  }
  bool Tainted(const std::string& node) {
    auto got = client_->Get(kube::resources::kNodes, "", node);
    if (!got.ok()) return false;
    const nlohmann::json n = nlohmann::json::parse(*got);
    for (const auto& t : n["spec"].value("taints", nlohmann::json::array())) {
      if (t.value("key", "") == "dovetail.sh/rebalance-recommended" &&
          t.value("effect", "") == "PreferNoSchedule") {
        return true;
      }
    }
    return false;
  }

  testing::MotoConnection aws_connection_;
  std::unique_ptr<AwsClient> sqs_client_;
  std::unique_ptr<SqsClient> sqs_;
  std::string queue_name_, queue_url_;
  UnavailableOfferings unavailable_{aws_connection_.clock};
  metrics::Registry metrics_;

  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  state::Cluster cluster_{aws_connection_.clock};
  NoCloud cloud_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<state::ClusterInformers> informers_;
  std::unique_ptr<controllers::Dependencies> deps_;
  std::unique_ptr<InterruptionController> controller_;
  std::vector<std::string> claims_, nodes_, pools_;
};

TEST_F(InterruptionIntegrationTest, SpotInterruptionDeletesTheNodeClaimAndTheMessage) {
  const std::string instance = "i-0a1b2c3d4e5f60001";
  const std::string claim = CreateLaunched(instance);
  ASSERT_FALSE(ClaimGone(claim));
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, SpotEvent(instance)).ok());
  EXPECT_TRUE(WaitFor([&] { return ClaimGone(claim); }, absl::Seconds(30)))
      << "the NodeClaim was not deleted";
  EXPECT_TRUE(WaitFor([&] { return QueueEmpty(); }, absl::Seconds(30)));
  EXPECT_TRUE(unavailable_.IsUnavailable("spot", "m5.large", "us-east-1a"));
  EXPECT_FALSE(unavailable_.IsUnavailable("on-demand", "m5.large", "us-east-1a"));
  EXPECT_EQ(Received("spot_interrupted"), 1);
  EXPECT_TRUE(WaitFor([&] { return Deleted() == 1; }, absl::Seconds(10)));
  EXPECT_EQ(Disrupted("spot_interrupted", "int-it"), 1);
}

TEST_F(InterruptionIntegrationTest, GarbageAndUnknownInstancesAreDeletedAndTheLoopGoesOn) {
  const std::string instance = "i-0a1b2c3d4e5f60002";
  const std::string bystander = CreateLaunched("i-0a1b2c3d4e5f60003");
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, "this is not an EventBridge event {").ok());
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, SpotEvent("i-0fffffffffffffff9")).ok());
  EXPECT_TRUE(WaitFor([&] { return Deleted() == 2; }, absl::Seconds(30)));
  EXPECT_TRUE(WaitFor([&] { return QueueEmpty(); }, absl::Seconds(30)));
  EXPECT_FALSE(ClaimGone(bystander)) << "an event for another instance deleted a NodeClaim";
  EXPECT_TRUE(unavailable_.Entries().empty());

  // The loop keeps going: a real event afterwards is still acted on.
  const std::string claim = CreateLaunched(instance);
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, SpotEvent(instance)).ok());
  EXPECT_TRUE(WaitFor([&] { return ClaimGone(claim); }, absl::Seconds(30)));
  EXPECT_TRUE(WaitFor([&] { return QueueEmpty(); }, absl::Seconds(30)));
  EXPECT_FALSE(ClaimGone(bystander));
}

// Rebalance recommendations: an event only, unless the NodePool opts in with
// dovetail.sh/rebalance-policy: Taint, which taints the Node PreferNoSchedule. Nothing is deleted.
TEST_F(InterruptionIntegrationTest, RebalanceTaintsOnlyOptedInNodePools) {
  const std::string pool = UniqueName("int-it-pool");
  const nlohmann::json body = {
      {"apiVersion", "karpenter.sh/v1"},
      {"kind", "NodePool"},
      {"metadata", {{"name", pool}, {"annotations", {{"dovetail.sh/rebalance-policy", "Taint"}}}}},
      {"spec",
       {{"template",
         {{"spec",
           {{"nodeClassRef",
             {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "default"}}},
            {"requirements", nlohmann::json::array()}}}}}}}};
  auto created = client_->Create(kube::resources::kNodePools, "", body.dump());
  ASSERT_TRUE(created.ok()) << created.status();
  pools_.push_back(pool);
  const std::string opted = CreateLaunched("i-0a1b2c3d4e5f60004", pool);
  const std::string plain = CreateLaunched("i-0a1b2c3d4e5f60005");
  const std::string opted_node = cluster_.GetByNodeClaimName(opted)->Name();
  const std::string plain_node = cluster_.GetByNodeClaimName(plain)->Name();
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, RebalanceEvent("i-0a1b2c3d4e5f60004")).ok());
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, RebalanceEvent("i-0a1b2c3d4e5f60005")).ok());
  EXPECT_TRUE(WaitFor([&] { return Deleted() == 2; }, absl::Seconds(30)));
  auto tainted = [&](const std::string& node) {
    auto got = client_->Get(kube::resources::kNodes, "", node);
    if (!got.ok()) return false;
    const nlohmann::json n = nlohmann::json::parse(*got);
    for (const auto& t : n["spec"].value("taints", nlohmann::json::array())) {
      if (t.value("key", "") == "dovetail.sh/rebalance-recommended" &&
          t.value("effect", "") == "PreferNoSchedule") {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(tainted(opted_node));
  EXPECT_FALSE(tainted(plain_node));
  EXPECT_FALSE(ClaimGone(opted));
  EXPECT_FALSE(ClaimGone(plain));
  EXPECT_EQ(Received("rebalance_recommendation"), 2);
  EXPECT_TRUE(unavailable_.Entries().empty());
}

// ---- with a Replacer ---------------------------------------------------------------------------

class InterruptionReplaceIntegrationTest : public InterruptionIntegrationTest {
 protected:
  controllers::disruption::Replacer* Replacer() override { return &replacer_; }
  FakeReplacer replacer_{unavailable_};
};

TEST_F(InterruptionReplaceIntegrationTest, SpotInterruptionReplacesFirstAndDoesNotDelete) {
  const std::string instance = "i-0b1b2c3d4e5f60001";
  const std::string claim = CreateLaunched(instance);
  const absl::Time event = NowSeconds();
  const std::string body = SpotEvent(instance, Rfc3339(event));
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, "{\"version\": \"0\", \"detail\": 7}").ok());
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, body).ok());
  EXPECT_TRUE(WaitFor([&] { return Deleted() == 2; }, absl::Seconds(30)));
  EXPECT_TRUE(WaitFor([&] { return QueueEmpty(); }, absl::Seconds(30)));
  std::vector<ReplaceRequest> requests = replacer_.RequestsFor(claim);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].reason, "SpotInterrupted");
  EXPECT_EQ(requests[0].metric_reason, "spot_interrupted");
  EXPECT_EQ(requests[0].deadline, event + absl::Seconds(75))  // 2 min - the 45 s drain reserve
      << absl::FormatTime(requests[0].deadline);
  EXPECT_TRUE(requests[0].cordon);
  EXPECT_TRUE(requests[0].delete_when_ready);
  EXPECT_TRUE(replacer_.SpotMarkedAtEveryCall()) << "the offering is marked before replacing";
  EXPECT_EQ(replacer_.Count(), 1u) << "the garbage message reached the Replacer";
  EXPECT_FALSE(ClaimGone(claim)) << "the NodeClaim was deleted directly";
  EXPECT_EQ(Disrupted("spot_interrupted", "int-it"), 0) << "the Replacer's queue counts it";

  // At-least-once: the same event again asks again (the Replacer updates what it holds) and still
  // deletes nothing.
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, body).ok());
  EXPECT_TRUE(WaitFor([&] { return Deleted() == 3; }, absl::Seconds(30)));
  requests = replacer_.RequestsFor(claim);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].deadline, requests[0].deadline);
  EXPECT_EQ(requests[1].cordon, requests[0].cordon);
  EXPECT_FALSE(ClaimGone(claim));
  EXPECT_TRUE(WaitFor([&] { return QueueEmpty(); }, absl::Seconds(30)));
}

// The request is on the NodeClaim before the message is gone; a controller started afresh (a
// crash, a new leader: an empty queue, a new Replacer) resumes it without any message: replace
// first while the deadline is ahead, delete at once once it has passed.
TEST_F(InterruptionReplaceIntegrationTest, RecordedCommandsSurviveARestart) {
  const std::string ahead = CreateLaunched("i-0b1b2c3d4e5f60011");
  const std::string passed = CreateLaunched("i-0b1b2c3d4e5f60012");
  const absl::Time event = NowSeconds();
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, SpotEvent("i-0b1b2c3d4e5f60011", Rfc3339(event))).ok());
  EXPECT_TRUE(WaitFor([&] { return Deleted() == 1; }, absl::Seconds(30)));
  auto record = [&](const std::string& claim) -> std::string {
    auto got = client_->Get(kube::resources::kNodeClaims, "", claim);
    if (!got.ok()) return "";
    const nlohmann::json meta = nlohmann::json::parse(*got)["metadata"];
    return meta.value("annotations", nlohmann::json::object())
        .value("dovetail.sh/involuntary-disruption", "");
  };
  const std::string recorded = record(ahead);
  ASSERT_FALSE(recorded.empty()) << "no record on the NodeClaim after the message was deleted";
  absl::StatusOr<ReplaceRequest> decoded =
      controllers::disruption::DecodeInvoluntaryRecord(ahead, recorded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->deadline, event + absl::Seconds(75));
  EXPECT_EQ(decoded->reason, "SpotInterrupted");

  // The other NodeClaim's command was recorded by an earlier leader and its deadline has passed.
  ReplaceRequest old;
  old.node_claim = passed;
  old.reason = "SpotInterrupted";
  old.metric_reason = "spot_interrupted";
  old.deadline = event - absl::Minutes(1);
  const nlohmann::json patch = {{"metadata",
                                 {{"annotations",
                                   {{"dovetail.sh/involuntary-disruption",
                                     controllers::disruption::EncodeInvoluntaryRecord(old)}}}}}};
  ASSERT_TRUE(
      client_
          ->Patch(kube::resources::kNodeClaims, "", passed, kube::PatchType::kMerge, patch.dump())
          .ok());
  ASSERT_TRUE(WaitFor([&] {
    auto n = cluster_.GetByNodeClaimName(passed);
    return n.has_value() &&
           n->node_claim->metadata.annotations.contains("dovetail.sh/involuntary-disruption");
  }));

  // Restart: a new controller with a new (empty) Replacer and no message in the queue.
  controller_->Stop();
  FakeReplacer fresh{unavailable_};
  ControllerOptions options;
  options.queue_name = queue_name_;
  options.receive.wait_time = absl::Seconds(1);
  controller_ =
      std::make_unique<InterruptionController>(*deps_, *sqs_, &unavailable_, &fresh, options);
  controller_->Start();
  EXPECT_TRUE(WaitFor([&] { return fresh.RequestsFor(ahead).size() == 1; }, absl::Seconds(30)))
      << "the recorded command was not resumed";
  EXPECT_TRUE(WaitFor([&] { return ClaimGone(passed); }, absl::Seconds(30)))
      << "a recorded command past its deadline was not drained at once";
  const std::vector<ReplaceRequest> resumed = fresh.RequestsFor(ahead);
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_EQ(resumed[0].deadline, event + absl::Seconds(75));
  EXPECT_TRUE(resumed[0].cordon);
  EXPECT_TRUE(resumed[0].delete_when_ready);
  EXPECT_TRUE(fresh.RequestsFor(passed).empty());
  EXPECT_FALSE(ClaimGone(ahead));
  EXPECT_EQ(Disrupted("spot_interrupted", "int-it"), 1) << "the drained NodeClaim is counted";
  controller_->Stop();
  controller_.reset();
}

// At-least-once delivery: a handling that fails (the record cannot be written: the write gate is
// closed, as when the lease is lost mid-handling) leaves the message in the queue; SQS delivers it
// again after its visibility timeout, and it is then handled once.
TEST_F(InterruptionReplaceIntegrationTest, AFailedHandlingIsRedeliveredAndHandledOnce) {
  controller_->Stop();  // this test's controller has a gated client
  kube::WriteGate gate;
  gate.Close();
  kube::Client gated(*rest_, &gate);
  const controllers::Dependencies deps{
      gated, cluster_, *informers_, cloud_, aws_connection_.clock, *events_, &metrics_};
  ControllerOptions options;
  options.queue_name = queue_name_;
  options.receive.wait_time = absl::Seconds(1);
  options.receive.visibility_timeout = absl::Seconds(3);
  FakeReplacer replacer{unavailable_};
  InterruptionController controller(deps, *sqs_, &unavailable_, &replacer, options);
  const std::string claim = CreateLaunched("i-0b1b2c3d4e5f60031");
  const double received = Received("spot_interrupted");
  const double deleted = Deleted();
  ASSERT_TRUE(
      sqs_->SendMessage(queue_url_, SpotEvent("i-0b1b2c3d4e5f60031", Rfc3339(NowSeconds()))).ok());
  controller.Start();
  // Received a second time while the gate is still closed: the failed handling left it queued.
  ASSERT_TRUE(
      WaitFor([&] { return Received("spot_interrupted") >= received + 2; }, absl::Seconds(30)));
  EXPECT_EQ(Deleted(), deleted) << "a message whose handling failed was deleted";
  EXPECT_EQ(replacer.Count(), 0u) << "the Replacer was asked before the command was recorded";
  gate.Open();
  EXPECT_TRUE(WaitFor([&] { return Deleted() == deleted + 1; }, absl::Seconds(30)));
  EXPECT_TRUE(WaitFor([&] { return QueueEmpty(); }, absl::Seconds(30)));
  EXPECT_GE(Received("spot_interrupted"), received + 2) << "the message was not redelivered";
  EXPECT_EQ(replacer.RequestsFor(claim).size(), 1u);
  controller.Stop();
}

TEST_F(InterruptionReplaceIntegrationTest, ReplacerErrorFallsBackToDeletionUnlessTheClaimIsGone) {
  const std::string gone = CreateLaunched("i-0b1b2c3d4e5f60002");
  replacer_.FailWith(absl::NotFoundError("no such NodeClaim in the cluster state"));
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, SpotEvent("i-0b1b2c3d4e5f60002")).ok());
  EXPECT_TRUE(WaitFor([&] { return Deleted() == 1; }, absl::Seconds(30)));
  EXPECT_EQ(replacer_.RequestsFor(gone).size(), 1u);
  EXPECT_FALSE(ClaimGone(gone)) << "NotFound from the Replacer means nothing is left to delete";

  const std::string claim = CreateLaunched("i-0b1b2c3d4e5f60003");
  replacer_.FailWith(absl::InternalError("simulation failed"));
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, SpotEvent("i-0b1b2c3d4e5f60003")).ok());
  EXPECT_TRUE(WaitFor([&] { return ClaimGone(claim); }, absl::Seconds(30)))
      << "a Replacer error did not fall back to deleting the NodeClaim";
  EXPECT_EQ(replacer_.RequestsFor(claim).size(), 1u);
  EXPECT_TRUE(WaitFor([&] { return QueueEmpty(); }, absl::Seconds(30)));
  EXPECT_TRUE(WaitFor([&] { return Disrupted("spot_interrupted", "int-it") == 1; }));
}

TEST_F(InterruptionReplaceIntegrationTest, StoppingInstancesAreDeletedAtOnce) {
  const std::string claim = CreateLaunched("i-0b1b2c3d4e5f60004");
  ASSERT_TRUE(
      sqs_->SendMessage(queue_url_, StateChangeEvent("i-0b1b2c3d4e5f60004", "stopping")).ok());
  EXPECT_TRUE(WaitFor([&] { return ClaimGone(claim); }, absl::Seconds(30)));
  EXPECT_EQ(replacer_.Count(), 0u);
  EXPECT_TRUE(WaitFor([&] { return Disrupted("instance_stopped", "int-it") == 1; }));
}

TEST_F(InterruptionReplaceIntegrationTest, HealthEventReplacesFirstBeforeTheWindowStarts) {
  const std::string claim = CreateLaunched("i-0b1b2c3d4e5f60005");
  const absl::Time start = NowSeconds() + absl::Minutes(5);
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, HealthEvent("i-0b1b2c3d4e5f60005", start)).ok());
  EXPECT_TRUE(WaitFor([&] { return Deleted() == 1; }, absl::Seconds(30)));
  const std::vector<ReplaceRequest> requests = replacer_.RequestsFor(claim);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].reason, "InstanceUnhealthy");
  EXPECT_EQ(requests[0].metric_reason, "scheduled_change");
  EXPECT_EQ(requests[0].deadline, start - absl::Seconds(45));
  EXPECT_TRUE(requests[0].cordon);
  EXPECT_TRUE(requests[0].delete_when_ready);
  EXPECT_FALSE(ClaimGone(claim));
}

// dovetail.sh/rebalance-policy: Replace taints and pre-launches without cordoning, draining at
// now + drain-after (7m here; an invalid value means the 10m default); a spot warning that
// follows asks again with cordon and delete_when_ready, which upgrades the held command.
TEST_F(InterruptionReplaceIntegrationTest, RebalanceWithReplacePolicyPreLaunches) {
  const std::string pool = CreatePool(
      {{"dovetail.sh/rebalance-policy", "Replace"}, {"dovetail.sh/rebalance-drain-after", "7m"}});
  const std::string bad_pool = CreatePool(
      {{"dovetail.sh/rebalance-policy", "Replace"}, {"dovetail.sh/rebalance-drain-after", "soon"}});
  const std::string taint_pool = CreatePool({{"dovetail.sh/rebalance-policy", "Taint"}});
  const std::string claim = CreateLaunched("i-0b1b2c3d4e5f60006", pool);
  const std::string bad = CreateLaunched("i-0b1b2c3d4e5f60007", bad_pool);
  const std::string tainted_only = CreateLaunched("i-0b1b2c3d4e5f60008", taint_pool);
  const std::string plain = CreateLaunched("i-0b1b2c3d4e5f60009");
  const absl::Time before = absl::Now();
  for (const char* id : {"i-0b1b2c3d4e5f60006", "i-0b1b2c3d4e5f60007", "i-0b1b2c3d4e5f60008",
                         "i-0b1b2c3d4e5f60009"}) {
    ASSERT_TRUE(sqs_->SendMessage(queue_url_, RebalanceEvent(id)).ok());
  }
  EXPECT_TRUE(WaitFor([&] { return Deleted() == 4; }, absl::Seconds(30)));
  const absl::Time after = absl::Now();

  std::vector<ReplaceRequest> requests = replacer_.RequestsFor(claim);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].reason, "SpotRebalanceRecommendation");
  EXPECT_FALSE(requests[0].cordon);
  EXPECT_FALSE(requests[0].delete_when_ready);
  EXPECT_GE(requests[0].deadline, before + absl::Minutes(7));
  EXPECT_LE(requests[0].deadline, after + absl::Minutes(7));
  EXPECT_TRUE(Tainted(cluster_.GetByNodeClaimName(claim)->Name()));

  const std::vector<ReplaceRequest> defaulted = replacer_.RequestsFor(bad);
  ASSERT_EQ(defaulted.size(), 1u);
  EXPECT_GE(defaulted[0].deadline, before + absl::Minutes(10));
  EXPECT_LE(defaulted[0].deadline, after + absl::Minutes(10));

  EXPECT_TRUE(replacer_.RequestsFor(tainted_only).empty());
  EXPECT_TRUE(Tainted(cluster_.GetByNodeClaimName(tainted_only)->Name()));
  EXPECT_TRUE(replacer_.RequestsFor(plain).empty());
  EXPECT_FALSE(Tainted(cluster_.GetByNodeClaimName(plain)->Name()));
  for (const std::string& c : {claim, bad, tainted_only, plain}) EXPECT_FALSE(ClaimGone(c)) << c;
  EXPECT_TRUE(unavailable_.Entries().empty());

  // The interruption follows.
  const absl::Time event = NowSeconds();
  ASSERT_TRUE(sqs_->SendMessage(queue_url_, SpotEvent("i-0b1b2c3d4e5f60006", Rfc3339(event))).ok());
  EXPECT_TRUE(WaitFor([&] { return Deleted() == 5; }, absl::Seconds(30)));
  requests = replacer_.RequestsFor(claim);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_TRUE(requests[1].cordon);
  EXPECT_TRUE(requests[1].delete_when_ready);
  EXPECT_EQ(requests[1].deadline, event + absl::Seconds(75));
  EXPECT_FALSE(ClaimGone(claim));
  EXPECT_TRUE(WaitFor([&] { return QueueEmpty(); }, absl::Seconds(30)));
}

}  // namespace
}  // namespace dovetail::providers::aws::interruption
