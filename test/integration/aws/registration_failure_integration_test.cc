// Fault test 5 of docs/reliability.md with the AWS provider against moto (a server of its own) and
// the shared kube-apiserver fixture: a NodePool's NodeClaims launch real instances whose kubelets
// are refused by admission (kube/testing::NodeRegistrationBlock, a ValidatingAdmissionPolicy on
// Node creation), with the real nodeclaim.lifecycle, node.termination and nodepool.status
// controllers and informers. Time is a fake clock set to the wall clock, advanced past upstream's
// 15-minute registration timeout (counted from the Registered condition's transition).
//
// Asserted:
//   - the machine launches once (Launched=True, its instance running in moto) and its Node's
//     creation is refused; the NodeClaim waits (Registered=Unknown, NodeNotFound) and is not
//     deleted before the timeout;
//   - past the timeout the NodeClaim is deleted (a RegistrationTimeout event), the termination
//     controller terminates its instance and the NodeClaim is gone: no instance left behind;
//   - after one such failure the NodePool's NodeRegistrationHealthy is still Unknown; after the
//     second (half of the last four), False with reason RegistrationFailed.
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cloudprovider/cloud_provider.h"
#include "dovetail/common/clock.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/controllers/nodeclaim/lifecycle_controller.h"
#include "dovetail/controllers/nodepool/status_controller.h"
#include "dovetail/controllers/termination/termination_controller.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/controller_util.h"
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
#include "test/integration/kube/block_node_registration.h"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::providers::aws {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
using kube::testing::NodeRegistrationBlock;
using kube::testing::UniqueName;
using kube::testing::WaitFor;

constexpr char kCluster[] = "moto-registration";
constexpr absl::Duration kTimeout = absl::Seconds(90);
constexpr absl::Duration kPoll = absl::Milliseconds(200);

class RegistrationFailureIntegrationTest : public testing::MotoClusterTest {
 protected:
  void SetUp() override {
    SetUpMotoCluster("10.61", kCluster, "dovetail-registration-test");
    if (HasFatalFailure()) return;
    // Upstream's timeouts; the fake clock crosses them. Real-time polls keep the test short.
    lifecycle_ = std::make_unique<controllers::nodeclaim::LifecycleController>(
        *deps_,
        controllers::nodeclaim::LifecycleOptions{.workers = 2, .poll_interval = absl::Seconds(1)});
    termination_ = std::make_unique<controllers::termination::TerminationController>(
        *deps_, controllers::termination::TerminationOptions{
                    .workers = 2, .instance_interval = absl::Seconds(1)});
    status_ = std::make_unique<controllers::nodepool::StatusController>(
        *deps_, controllers::nodepool::StatusOptions{.period = absl::Seconds(1)});
    StartInformers();
  }

  void TearDown() override {
    if (status_ != nullptr) status_->Stop();
    if (termination_ != nullptr) termination_->Stop();
    if (lifecycle_ != nullptr) lifecycle_->Stop();
    StopInformers();
    if (client_ == nullptr) return;
    for (const std::string& name : claims_) {
      (void)kube::RemoveFinalizer(*client_, kube::resources::kNodeClaims, "", name,
                                  v1::kTerminationFinalizer);
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    if (!pool_.empty()) (void)client_->Delete(kube::resources::kNodePools, "", pool_);
  }

  void StartControllers() {
    status_->Start();
    lifecycle_->Start();
    termination_->Start();
  }

  void CreatePool() {
    pool_ = UniqueName("registration-it");
    const nlohmann::json body = {{"apiVersion", "karpenter.sh/v1"},
                                 {"kind", "NodePool"},
                                 {"metadata", {{"name", pool_}}},
                                 {"spec",
                                  {{"template",
                                    {{"metadata", {{"labels", {{"registration", "fail"}}}}},
                                     {"spec",
                                      {{"requirements", nlohmann::json::array()},
                                       {"nodeClassRef",
                                        {{"group", "karpenter.k8s.aws"},
                                         {"kind", "EC2NodeClass"},
                                         {"name", "default"}}}}}}}}}};
    auto created = client_->Create(kube::resources::kNodePools, "", body.dump());
    ASSERT_TRUE(created.ok()) << created.status();
    pool_uid_ = nlohmann::json::parse(*created)["metadata"]["uid"].get<std::string>();
  }

  // A NodeClaim of the pool as provisioning creates it: its label, the template's, and an owner
  // reference to the pool.
  std::string CreateClaim() {
    const std::string name = UniqueName(pool_);
    nlohmann::json body = M5NodeClaim(name, pool_);
    body["metadata"]["labels"]["registration"] = "fail";
    body["metadata"]["ownerReferences"] = {{{"apiVersion", "karpenter.sh/v1"},
                                            {"kind", "NodePool"},
                                            {"name", pool_},
                                            {"uid", pool_uid_},
                                            {"blockOwnerDeletion", true}}};
    auto created = client_->Create(kube::resources::kNodeClaims, "", body.dump());
    EXPECT_TRUE(created.ok()) << created.status();
    claims_.push_back(name);
    return name;
  }

  absl::StatusOr<v1::NodeClaim> GetClaim(const std::string& name) {
    return kube::TypedClient<v1::NodeClaim>(*client_, kube::resources::kNodeClaims).Get("", name);
  }
  std::optional<core::Condition> PoolHealth() {
    auto pool =
        kube::TypedClient<v1::NodePool>(*client_, kube::resources::kNodePools).Get("", pool_);
    if (!pool.ok()) return std::nullopt;
    const core::Condition* c =
        v1::FindCondition(pool->status.conditions, "NodeRegistrationHealthy");
    if (c == nullptr) return std::nullopt;
    return *c;
  }
  bool PoolHealthIs(core::ConditionStatus status) {
    auto c = PoolHealth();
    return c.has_value() && c->status == status;
  }

  // One NodeClaim whose machine launches and never registers, to its end. Returns its provider
  // id (empty on failure).
  std::string FailOneRegistration() {
    const std::string name = CreateClaim();
    std::string provider_id;
    EXPECT_TRUE(WaitFor(
        [&] {
          auto claim = GetClaim(name);
          if (!claim.ok()) return false;
          const core::Condition* registered =
              v1::FindCondition(claim->status.conditions, "Registered");
          provider_id = claim->status.provider_id;
          return !provider_id.empty() && registered != nullptr &&
                 registered->status == core::ConditionStatus::kUnknown &&
                 registered->reason == controllers::nodeclaim::kReasonNodeNotFound;
        },
        kTimeout, kPoll))
        << name << " did not launch and wait for its Node";
    if (provider_id.empty()) return "";
    EXPECT_TRUE(cloud_->Get(provider_id).ok()) << provider_id << " is not running";

    // Its kubelet: refused by admission.
    const nlohmann::json node = {
        {"apiVersion", "v1"},
        {"kind", "Node"},
        {"metadata", {{"name", UniqueName("ip-10-61-1")}, {"labels", {{"registration", "fail"}}}}},
        {"spec", {{"providerID", provider_id}}}};
    absl::StatusOr<std::string> joined = client_->Create(kube::resources::kNodes, "", node.dump());
    EXPECT_TRUE(NodeRegistrationBlock::Refused(joined.status())) << joined.status();

    // Ten minutes on, the NodeClaim waits.
    clock_.Advance(absl::Minutes(10));
    absl::SleepFor(absl::Seconds(2));  // two lifecycle polls
    auto claim = GetClaim(name);
    EXPECT_TRUE(claim.ok() && !claim->metadata.deletion_timestamp.has_value())
        << name << " was deleted before the registration timeout";

    // Past fifteen: deleted, its instance terminated, and gone.
    clock_.Advance(absl::Minutes(6));
    EXPECT_TRUE(WaitFor([&] { return kube::IsNotFound(GetClaim(name).status()); }, kTimeout, kPoll))
        << name << " was not deleted and finalized after the registration timeout";
    absl::StatusOr<v1::NodeClaim> instance = cloud_->Get(provider_id);
    EXPECT_TRUE(cloudprovider::IsNodeClaimNotFound(instance.status()))
        << provider_id << " outlived its NodeClaim: " << instance.status();
    return provider_id;
  }

  std::unique_ptr<controllers::nodeclaim::LifecycleController> lifecycle_;
  std::unique_ptr<controllers::termination::TerminationController> termination_;
  std::unique_ptr<controllers::nodepool::StatusController> status_;
  std::string pool_, pool_uid_;
  std::vector<std::string> claims_;
};

TEST_F(RegistrationFailureIntegrationTest, NodesThatNeverRegisterAreReclaimedAndMarkThePool) {
  NodeRegistrationBlock block(*client_);
  ASSERT_TRUE(block.enforced());
  CreatePool();
  StartControllers();
  ASSERT_TRUE(
      WaitFor([&] { return PoolHealthIs(core::ConditionStatus::kUnknown); }, kTimeout, kPoll))
      << "NodeRegistrationHealthy was not initialized";

  const std::string first = FailOneRegistration();
  ASSERT_FALSE(first.empty());
  // One failure of a window of four: not yet unhealthy.
  absl::SleepFor(absl::Seconds(2));  // two status periods
  EXPECT_TRUE(PoolHealthIs(core::ConditionStatus::kUnknown));

  const std::string second = FailOneRegistration();
  ASSERT_FALSE(second.empty());
  EXPECT_NE(first, second);
  ASSERT_TRUE(WaitFor([&] { return PoolHealthIs(core::ConditionStatus::kFalse); }, kTimeout, kPoll))
      << "NodeRegistrationHealthy is not False after two registration failures";
  const std::optional<core::Condition> health = PoolHealth();
  ASSERT_TRUE(health.has_value());
  EXPECT_EQ(health->reason, "RegistrationFailed");
  EXPECT_EQ(health->message, "Failed to register node");
  // The pool stays Ready: registration health is no dependent of it.
  auto pool = kube::TypedClient<v1::NodePool>(*client_, kube::resources::kNodePools).Get("", pool_);
  ASSERT_TRUE(pool.ok());
  const core::Condition* ready = v1::FindCondition(pool->status.conditions, "Ready");
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status, core::ConditionStatus::kTrue);
  // Every instance launched for the pool was terminated: one launch per NodeClaim.
  EXPECT_EQ(lifecycle_->launches(), 2);
  auto listed = cloud_->List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  for (const v1::NodeClaim& machine : *listed) {
    EXPECT_NE(machine.status.provider_id, first);
    EXPECT_NE(machine.status.provider_id, second);
  }
}

}  // namespace
}  // namespace dovetail::providers::aws
