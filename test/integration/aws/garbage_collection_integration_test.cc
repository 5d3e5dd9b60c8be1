// nodeclaim.garbagecollection with the AWS provider against moto (a server of its own) and the
// shared kube-apiserver fixture: real instances, real NodeClaims and Nodes, the controller's
// passes run one at a time (RunOnce) on a fake clock set to the wall clock, so that the 30 s
// grace window for leaked instances is crossed by advancing it.
//
// Asserted (fault tests 1 and 10 of docs/reliability.md):
//   - An instance terminated behind Dovetail's back while its Node is Ready: the NodeClaim is
//     kept (a Ready kubelet beats an eventually consistent cloud API); once the Node is NotReady
//     the next pass deletes it.
//   - A NodeClaim deleted and created again under the same name before its status was written (a
//     crash after CreateFleet returned, then a recreation): the new NodeClaim's launch does not
//     adopt the earlier instance, which records the earlier UID; garbage collection keeps both
//     within the grace window, then terminates the earlier one and keeps the one whose UID is
//     still launching, however old.
//
// The API server is shared with other integration tests: every assertion is about this test's
// objects.
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/common/clock.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/nodeclaim/garbage_collection_controller.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/providers/aws/cloudprovider/aws_cloud_provider.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/aws/moto_cluster_test.h"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::providers::aws {
namespace {

namespace awsv1 = apis::aws::v1;
namespace core = apis::core;
namespace v1 = apis::v1;
using controllers::nodeclaim::GarbageCollectionController;
using kube::testing::UniqueName;
using kube::testing::WaitFor;

constexpr char kCluster[] = "moto-gc";

class GarbageCollectionIntegrationTest : public testing::MotoClusterTest {
 protected:
  void SetUp() override {
    SetUpMotoCluster("10.60", kCluster, "dovetail-gc-test");
    if (HasFatalFailure()) return;
    gc_ = std::make_unique<GarbageCollectionController>(*deps_);  // the default 30 s grace
    StartInformers();
  }

  void TearDown() override {
    StopInformers();
    if (client_ == nullptr) return;
    for (const std::string& name : claims_) {
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    for (const std::string& name : nodes_) (void)client_->Delete(kube::resources::kNodes, "", name);
  }

  // Creates NodeClaim `name` in the API server (no status) and returns it as stored, its UID
  // included.
  v1::NodeClaim CreateClaim(const std::string& name) {
    const nlohmann::json body = M5NodeClaim(name, "gc-it");
    auto created = client_->Create(kube::resources::kNodeClaims, "", body.dump());
    EXPECT_TRUE(created.ok()) << created.status();
    claims_.push_back(name);
    auto claim = Claims().Get("", name);
    EXPECT_TRUE(claim.ok()) << claim.status();
    return claim.value_or(v1::NodeClaim{});
  }

  // Launches `claim` in moto and writes what registration leaves in its status (provider id,
  // Node name, Registered=True), and a Node of that provider id, Ready as `ready` says.
  std::string LaunchAndRegister(const v1::NodeClaim& claim, bool ready) {
    absl::StatusOr<v1::NodeClaim> launched = cloud_->Create(claim);
    EXPECT_TRUE(launched.ok()) << launched.status();
    if (!launched.ok()) return "";
    const std::string provider_id = launched->status.provider_id;
    const std::string node = UniqueName("gc-node");
    auto stored = client_->Get(kube::resources::kNodeClaims, "", claim.metadata.name);
    EXPECT_TRUE(stored.ok()) << stored.status();
    nlohmann::json status = nlohmann::json::parse(stored.value_or("{}"));
    status["status"] = {{"providerID", provider_id},
                        {"nodeName", node},
                        {"conditions",
                         {{{"type", "Registered"},
                           {"status", "True"},
                           {"reason", "Registered"},
                           {"message", ""},
                           {"lastTransitionTime", "2026-12-06T00:00:00Z"}}}}};
    auto updated =
        client_->UpdateStatus(kube::resources::kNodeClaims, "", claim.metadata.name, status.dump());
    EXPECT_TRUE(updated.ok()) << updated.status();
    const nlohmann::json node_body = {{"apiVersion", "v1"},
                                      {"kind", "Node"},
                                      {"metadata", {{"name", node}}},
                                      {"spec", {{"providerID", provider_id}}}};
    auto created = client_->Create(kube::resources::kNodes, "", node_body.dump());
    EXPECT_TRUE(created.ok()) << created.status();
    nodes_.push_back(node);
    SetNodeReady(node, ready);
    return provider_id;
  }

  void SetNodeReady(const std::string& node, bool ready) {
    auto stored = client_->Get(kube::resources::kNodes, "", node);
    ASSERT_TRUE(stored.ok()) << stored.status();
    nlohmann::json body = nlohmann::json::parse(*stored);
    body["status"]["conditions"] = {{{"type", "Ready"},
                                     {"status", ready ? "True" : "False"},
                                     {"reason", ready ? "KubeletReady" : "KubeletNotReady"},
                                     {"message", ""},
                                     {"lastHeartbeatTime", "2026-12-06T00:00:00Z"},
                                     {"lastTransitionTime", "2026-12-06T00:00:00Z"}}};
    auto updated = client_->UpdateStatus(kube::resources::kNodes, "", node, body.dump());
    ASSERT_TRUE(updated.ok()) << updated.status();
    const core::ConditionStatus want =
        ready ? core::ConditionStatus::kTrue : core::ConditionStatus::kFalse;
    ASSERT_TRUE(WaitFor([&] {
      auto cached = informers_->nodes().store().Get(node);
      return cached != nullptr && cached->ready == want;
    })) << "the Node informer does not see Ready="
        << ready;
  }

  kube::TypedClient<v1::NodeClaim> Claims() {
    return kube::TypedClient<v1::NodeClaim>(*client_, kube::resources::kNodeClaims);
  }
  bool ClaimGoneOrDeleting(const std::string& name) {
    auto claim = Claims().Get("", name);
    if (!claim.ok()) return kube::IsNotFound(claim.status());
    return claim->metadata.deletion_timestamp.has_value();
  }
  bool InstanceLive(const std::string& provider_id) { return cloud_->Get(provider_id).ok(); }

  void Terminate(const std::string& provider_id) {
    const std::string id = provider_id.substr(provider_id.rfind('/') + 1);
    auto done = ec2_->Query("TerminateInstances", {{"InstanceId.1", id}});
    ASSERT_TRUE(done.ok()) << done.status();
    ASSERT_TRUE(WaitFor([&] { return !InstanceLive(provider_id); }))
        << provider_id << " still live after TerminateInstances";
  }

  std::unique_ptr<GarbageCollectionController> gc_;
  std::vector<std::string> claims_, nodes_;
};

TEST_F(GarbageCollectionIntegrationTest, AReadyNodeKeepsItsNodeClaimWhenTheInstanceIsGone) {
  const v1::NodeClaim claim = CreateClaim(UniqueName("gc-ready"));
  const std::string provider_id = LaunchAndRegister(claim, /*ready=*/true);
  ASSERT_FALSE(provider_id.empty());
  Terminate(provider_id);

  ASSERT_TRUE(gc_->RunOnce().ok());
  EXPECT_FALSE(ClaimGoneOrDeleting(claim.metadata.name))
      << "a NodeClaim whose Node is Ready was garbage-collected";

  SetNodeReady(nodes_.back(), false);
  ASSERT_TRUE(gc_->RunOnce().ok());
  EXPECT_TRUE(ClaimGoneOrDeleting(claim.metadata.name))
      << "a NodeClaim whose instance is gone and Node NotReady was kept";
  EXPECT_GE(gc_->stats().node_claims_deleted, 1);
}

TEST_F(GarbageCollectionIntegrationTest, AnEarlierNodeClaimsInstanceIsNeitherAdoptedNorKept) {
  // The first NodeClaim launches, and is deleted before its status is written.
  const std::string name = UniqueName("gc-again");
  const v1::NodeClaim first = CreateClaim(name);
  absl::StatusOr<v1::NodeClaim> first_launch = cloud_->Create(first);
  ASSERT_TRUE(first_launch.ok()) << first_launch.status();
  ASSERT_TRUE(client_->Delete(kube::resources::kNodeClaims, "", name).ok());
  ASSERT_TRUE(WaitFor([&] { return ClaimGoneOrDeleting(name); }));
  ASSERT_TRUE(WaitFor([&] { return !Claims().Get("", name).ok(); }));

  // A new NodeClaim of the same name: its launch is its own instance, not the earlier one.
  const v1::NodeClaim second = CreateClaim(name);
  ASSERT_NE(second.metadata.uid, first.metadata.uid);
  absl::StatusOr<v1::NodeClaim> second_launch = cloud_->Create(second);
  ASSERT_TRUE(second_launch.ok()) << second_launch.status();
  EXPECT_NE(second_launch->status.provider_id, first_launch->status.provider_id)
      << "the new NodeClaim adopted its predecessor's instance";
  // The same NodeClaim launching again (a retry after a crash) adopts its own instance.
  absl::StatusOr<v1::NodeClaim> retried = cloud_->Create(second);
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(retried->status.provider_id, second_launch->status.provider_id);

  auto listed = cloud_->List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  for (const v1::NodeClaim& machine : *listed) {
    if (machine.status.provider_id == first_launch->status.provider_id) {
      EXPECT_EQ(machine.metadata.uid, first.metadata.uid);
    }
    if (machine.status.provider_id == second_launch->status.provider_id) {
      EXPECT_EQ(machine.metadata.uid, second.metadata.uid);
    }
  }

  // Within the grace window both instances stay (a launch's status write may still be coming).
  ASSERT_TRUE(gc_->RunOnce().ok());
  EXPECT_TRUE(InstanceLive(first_launch->status.provider_id));
  EXPECT_TRUE(InstanceLive(second_launch->status.provider_id));

  // Past it, the earlier NodeClaim's instance is a leak; the launching NodeClaim's is kept.
  clock_.Advance(absl::Minutes(5));
  ASSERT_TRUE(gc_->RunOnce().ok());
  EXPECT_FALSE(InstanceLive(first_launch->status.provider_id))
      << "the earlier NodeClaim's instance was kept";
  EXPECT_TRUE(InstanceLive(second_launch->status.provider_id))
      << "the instance of a NodeClaim still launching was deleted";
  EXPECT_GE(gc_->stats().instances_deleted, 1);
}

}  // namespace
}  // namespace dovetail::providers::aws
