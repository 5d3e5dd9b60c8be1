// The interruption.instancestatus controller against a real kube-apiserver (the CRDs of
// charts/dovetail/crds) and a loopback stand-in for EC2's DescribeInstanceStatus: moto reports
// every instance as healthy, so the stand-in (dovetail/providers/aws/test_server.h) answers the
// EC2 Query protocol with the statuses each test sets, the reply to the instance-check filter in
// two pages. NodeClaims carry a finalizer of this test's so that a deleted one stays, deleting.
//
// Asserted: an impaired instance check (failed for 10 min) annotates the NodeClaim's termination
// timestamp and deletes it; a scheduled event deletes without the annotation; an instance without
// a NodeClaim and a check failed for only 30 s change nothing; the unhealthy counter counts each
// (instance, category) once across polls, and again after a poll that did not report it; the
// worker polls every interval until EC2 answers UnauthorizedOperation, then stops.
//
// The API server is shared with other integration tests: every assertion is about this test's
// objects.
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/providers/aws/aws_client.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/interruption/instance_status_controller.h"
#include "dovetail/providers/aws/test_server.h"
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

constexpr char kHoldFinalizer[] = "dovetail.sh/instance-status-test";
constexpr char kSecondPageToken[] = "AAEAAWQ2ZWQ5ZTItYjU5Ny00NmE4LWI0MDItMjA5YjJkMTc0ZTg2";

using ::dovetail::testing::NoCloud;

std::map<std::string, std::string> ParseForm(const std::string& body) {
  std::map<std::string, std::string> out;
  for (absl::string_view kv : absl::StrSplit(body, '&')) {
    std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    out[httplib::detail::decode_url(p.first, true)] = httplib::detail::decode_url(p.second, true);
  }
  return out;
}

std::string Rfc3339Millis(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

// One instanceStatusSet item in EC2's response shape.
std::string StatusItem(const std::string& id, const std::string& instance_check,
                       absl::Time instance_since, const std::string& system_check,
                       absl::Time system_since, const std::string& event_code) {
  auto summary = [](const char* tag, const std::string& check, absl::Time since) {
    const bool failed = check == "failed";
    return absl::StrCat(
        "<", tag, "><status>", failed ? "impaired" : "ok",
        "</status><details><item><name>reachability</name><status>", check, "</status>",
        failed ? absl::StrCat("<impairedSince>", Rfc3339Millis(since), "</impairedSince>") : "",
        "</item></details></", tag, ">");
  };
  std::string events;
  if (!event_code.empty()) {
    const absl::Time start = absl::Now() + absl::Hours(72);
    events = absl::StrCat(
        "<eventsSet><item><instanceEventId>instance-event-0123456789abcdef0</instanceEventId>"
        "<code>",
        event_code, "</code><description>The instance is scheduled for ", event_code,
        "</description><notBefore>", Rfc3339Millis(start), "</notBefore><notAfter>",
        Rfc3339Millis(start + absl::Hours(2)), "</notAfter></item></eventsSet>");
  }
  return absl::StrCat(
      "<item><instanceId>", id,
      "</instanceId><availabilityZone>us-east-1a</availabilityZone>"
      "<availabilityZoneId>use1-az1</availabilityZoneId>",
      events, "<instanceState><code>16</code><name>running</name></instanceState>",
      summary("systemStatus", system_check, system_since),
      summary("instanceStatus", instance_check, instance_since),
      "<attachedEbsStatus><status>ok</status><details><item><name>reachability</name>"
      "<status>passed</status></item></details></attachedEbsStatus></item>");
}

std::string Response(const std::vector<std::string>& items, const std::string& next_token) {
  std::string xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DescribeInstanceStatusResponse "
      "xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>"
      "5e9c1b2a-3d4f-4a6b-8c7d-9e0f1a2b3c4d</requestId><instanceStatusSet>";
  for (const std::string& item : items) xml += item;
  xml += "</instanceStatusSet>";
  if (!next_token.empty()) xml += absl::StrCat("<nextToken>", next_token, "</nextToken>");
  xml += "</DescribeInstanceStatusResponse>";
  return xml;
}

// The EC2 stand-in: replies by the call's filter name, as EC2 would for what the test has set.
class Ec2StandIn {
 public:
  Ec2StandIn() {
    server_.server().Post("/", [this](const httplib::Request& req, httplib::Response& res) {
      std::map<std::string, std::string> form = ParseForm(req.body);
      absl::MutexLock lock(&mu_);
      ++requests_;
      if (form["Action"] != "DescribeInstanceStatus") {
        res.status = 400;
        res.set_content(Error("InvalidAction", "The action is not valid for this web service."),
                        "text/xml");
        return;
      }
      if (unauthorized_) {
        res.status = 403;
        res.set_content(
            Error("UnauthorizedOperation", "You are not authorized to perform this operation."),
            "text/xml");
        return;
      }
      const std::string filter = form["Filter.1.Name"];
      ++calls_by_filter_[filter];
      std::vector<std::string> items = replies_[filter];
      std::string next;
      // The instance-check reply in two pages: the first item, then the rest.
      if (filter == "instance-status.status" && items.size() > 1) {
        if (form["NextToken"] == kSecondPageToken) {
          items.erase(items.begin());
        } else {
          items.resize(1);
          next = kSecondPageToken;
        }
      }
      res.set_content(Response(items, next), "text/xml;charset=UTF-8");
    });
  }

  bool Start() { return server_.Start(); }
  void Stop() { server_.Stop(); }
  std::string url() const { return server_.url(); }

  void Set(const std::string& filter, std::vector<std::string> items) {
    absl::MutexLock lock(&mu_);
    replies_[filter] = std::move(items);
  }
  void SetUnauthorized(bool unauthorized) {
    absl::MutexLock lock(&mu_);
    unauthorized_ = unauthorized;
  }
  int requests() {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  int calls(const std::string& filter) {
    absl::MutexLock lock(&mu_);
    return calls_by_filter_[filter];
  }

 private:
  static std::string Error(const std::string& code, const std::string& message) {
    return absl::StrCat(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>", code,
        "</Code><Message>", message,
        "</Message></Error></Errors><RequestID>"
        "0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9</RequestID></Response>");
  }

  testing::TestServer server_;
  absl::Mutex mu_;
  std::map<std::string, std::vector<std::string>> replies_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> calls_by_filter_ ABSL_GUARDED_BY(mu_);
  bool unauthorized_ ABSL_GUARDED_BY(mu_) = false;
  int requests_ ABSL_GUARDED_BY(mu_) = 0;
};

class InstanceStatusIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(ec2_stand_in_.Start());
    ec2_client_ = std::make_unique<AwsClient>(
        AwsClient::Dependencies{.transport = aws_connection_.transport,
                                .credentials = &aws_connection_.credentials,
                                .clock = aws_connection_.clock},
        AwsClient::Options{
            .service = kEc2, .region = "us-east-1", .endpoint = ec2_stand_in_.url()});
    ec2_ = std::make_unique<Ec2Client>(*ec2_client_);

    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-instance-status-test");
    events_ = std::make_unique<kube::EventRecorder>(*client_, aws_connection_.clock,
                                                    kube::EventRecorderOptions{});
    informers_ = std::make_unique<state::ClusterInformers>(*client_, cluster_);
    deps_ = std::make_unique<controllers::Dependencies>(controllers::Dependencies{
        *client_, cluster_, *informers_, cloud_, aws_connection_.clock, *events_, &metrics_});
    controller_ = std::make_unique<InstanceStatusController>(
        *deps_, *ec2_, InstanceStatusOptions{.interval = absl::Milliseconds(300)});
    informers_->Start();
    ASSERT_TRUE(informers_->WaitForSync(absl::Now() + absl::Seconds(60)));
  }

  void TearDown() override {
    if (controller_ != nullptr) controller_->Stop();
    controller_.reset();
    if (informers_ != nullptr) informers_->Stop();
    ec2_stand_in_.Stop();
    if (client_ == nullptr) return;
    for (const std::string& name : claims_) {
      (void)client_->Patch(kube::resources::kNodeClaims, "", name, kube::PatchType::kMerge,
                           R"({"metadata":{"finalizers":null}})");
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    for (const std::string& name : nodes_) (void)client_->Delete(kube::resources::kNodes, "", name);
  }

  // A launched on-demand NodeClaim (held by this test's finalizer) and its Node for
  // `instance_id`; returns the NodeClaim's name.
  std::string CreateLaunched(const std::string& instance_id) {
    const std::string claim = UniqueName("ist-claim");
    const std::string node = UniqueName("ist-node");
    const std::string provider_id = absl::StrCat("aws:///us-east-1a/", instance_id);
    const nlohmann::json labels = {{"karpenter.sh/nodepool", "ist-pool"},
                                   {"karpenter.sh/capacity-type", "on-demand"},
                                   {"node.kubernetes.io/instance-type", "m5.large"},
                                   {"topology.kubernetes.io/zone", "us-east-1a"}};
    nlohmann::json body = {
        {"apiVersion", "karpenter.sh/v1"},
        {"kind", "NodeClaim"},
        {"metadata", {{"name", claim}, {"labels", labels}, {"finalizers", {kHoldFinalizer}}}},
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

  nlohmann::json GetClaim(const std::string& claim) {
    auto got = client_->Get(kube::resources::kNodeClaims, "", claim);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? nlohmann::json::parse(*got) : nlohmann::json::object();
  }
  bool Deleting(const std::string& claim) {
    return GetClaim(claim)["metadata"].contains("deletionTimestamp");
  }
  std::string TerminationTimestamp(const std::string& claim) {
    return GetClaim(claim)["metadata"]
        .value("annotations", nlohmann::json::object())
        .value("karpenter.sh/nodeclaim-termination-timestamp", "");
  }
  // The cluster state has caught up with the deletion (so the next poll sees it deleting).
  bool StateDeleting(const std::string& claim) {
    auto n = cluster_.GetByNodeClaimName(claim);
    return n.has_value() && n->Deleting();
  }
  double Unhealthy(const std::string& category) {
    return InstanceStatusUnhealthyCounter(metrics_).Value({category});
  }
  double Disrupted(const std::string& reason) {
    return metrics_
        .NewCounter("karpenter_nodeclaims_disrupted_total", "",
                    {"reason", "nodepool", "capacity_type"})
        .Value({reason, "ist-pool", "on-demand"});
  }
  void ExpectPollRequeues() {
    absl::StatusOr<kube::ReconcileResult> result = controller_->Poll();
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->requeue_after.has_value());
    EXPECT_EQ(*result->requeue_after, absl::Milliseconds(300));
  }

  Ec2StandIn ec2_stand_in_;
  testing::MotoConnection aws_connection_;
  std::unique_ptr<AwsClient> ec2_client_;
  std::unique_ptr<Ec2Client> ec2_;
  metrics::Registry metrics_;

  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  state::Cluster cluster_{aws_connection_.clock};
  NoCloud cloud_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<state::ClusterInformers> informers_;
  std::unique_ptr<controllers::Dependencies> deps_;
  std::unique_ptr<InstanceStatusController> controller_;
  std::vector<std::string> claims_, nodes_;
};

TEST_F(InstanceStatusIntegrationTest, ActsOnUnhealthyInstancesAndCountsEachPairOnce) {
  const std::string impaired_id = "i-0a1b2c3d4e5f70001";
  const std::string event_id = "i-0a1b2c3d4e5f70002";
  const std::string unmanaged_id = "i-0a1b2c3d4e5f70003";
  const std::string recent_id = "i-0a1b2c3d4e5f70004";
  const std::string impaired = CreateLaunched(impaired_id);
  const std::string event = CreateLaunched(event_id);
  const std::string recent = CreateLaunched(recent_id);
  const absl::Time now = absl::Now();
  const std::string impaired_item =
      StatusItem(impaired_id, "failed", now - absl::Minutes(10), "passed", now, "");
  ec2_stand_in_.Set(
      "instance-status.status",
      {impaired_item, StatusItem(recent_id, "failed", now - absl::Seconds(30), "passed", now, "")});
  ec2_stand_in_.Set("system-status.status", {StatusItem(unmanaged_id, "passed", now, "failed",
                                                        now - absl::Minutes(10), "")});
  ec2_stand_in_.Set("event.code",
                    {StatusItem(event_id, "passed", now, "passed", now, "system-maintenance")});

  ExpectPollRequeues();
  EXPECT_EQ(ec2_stand_in_.calls("instance-status.status"), 2);  // two pages
  EXPECT_EQ(ec2_stand_in_.calls("system-status.status"), 1);
  EXPECT_EQ(ec2_stand_in_.calls("event.code"), 1);

  // Instance check failed: forceful termination.
  EXPECT_TRUE(Deleting(impaired));
  const std::string stamp = TerminationTimestamp(impaired);
  absl::Time stamped;
  std::string err;
  ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, stamp, &stamped, &err)) << stamp;
  EXPECT_LE(absl::AbsDuration(stamped - now), absl::Minutes(1));
  // Scheduled event: graceful deletion.
  EXPECT_TRUE(Deleting(event));
  EXPECT_EQ(TerminationTimestamp(event), "");
  // Failed for 30 s only: nothing yet.
  EXPECT_FALSE(Deleting(recent));
  EXPECT_EQ(TerminationTimestamp(recent), "");

  EXPECT_EQ(Unhealthy("InstanceStatus"), 1);
  EXPECT_EQ(Unhealthy("EventStatus"), 1);
  EXPECT_EQ(Unhealthy("SystemStatus"), 0);  // i-...03 has no NodeClaim
  EXPECT_EQ(Disrupted("instance_status"), 1);
  EXPECT_EQ(Disrupted("event_status"), 1);

  // Still reported on the next poll: not counted again, not deleted again.
  ASSERT_TRUE(WaitFor([&] { return StateDeleting(impaired) && StateDeleting(event); }));
  ExpectPollRequeues();
  EXPECT_EQ(Unhealthy("InstanceStatus"), 1);
  EXPECT_EQ(Unhealthy("EventStatus"), 1);
  EXPECT_EQ(Disrupted("instance_status"), 1);
  EXPECT_EQ(Disrupted("event_status"), 1);
  EXPECT_EQ(TerminationTimestamp(impaired), stamp);

  // The impaired instance recovers for a poll, then fails again: counted again.
  ec2_stand_in_.Set("instance-status.status", {});
  ExpectPollRequeues();
  EXPECT_EQ(Unhealthy("InstanceStatus"), 1);
  ec2_stand_in_.Set("instance-status.status", {impaired_item});
  ExpectPollRequeues();
  EXPECT_EQ(Unhealthy("InstanceStatus"), 2);
  EXPECT_EQ(Unhealthy("EventStatus"), 1);
  EXPECT_EQ(Disrupted("instance_status"), 1);  // already deleting
}

TEST_F(InstanceStatusIntegrationTest, PollsEveryIntervalUntilUnauthorizedOperation) {
  controller_->Start();
  // Three calls per poll: at least three polls.
  EXPECT_TRUE(WaitFor([&] { return ec2_stand_in_.requests() >= 9; }, absl::Seconds(30)))
      << "the controller does not poll again after its interval";
  ec2_stand_in_.SetUnauthorized(true);
  int before = 0;
  EXPECT_TRUE(WaitFor(
      [&] {
        const int n = ec2_stand_in_.requests();
        absl::SleepFor(absl::Seconds(1));  // three intervals
        before = n;
        return ec2_stand_in_.requests() == n;
      },
      absl::Seconds(30)))
      << "the controller keeps polling after UnauthorizedOperation";
  absl::SleepFor(absl::Seconds(2));
  EXPECT_EQ(ec2_stand_in_.requests(), before) << "polling resumed";

  // A poll by hand answers "no requeue" for the same reply.
  absl::StatusOr<kube::ReconcileResult> result = controller_->Poll();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->requeue_after.has_value());
  controller_->Stop();
}

}  // namespace
}  // namespace dovetail::providers::aws::interruption
