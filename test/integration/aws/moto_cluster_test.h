// MotoClusterTest: the fixture of the integration tests that run controllers with the AWS provider
// against moto (the server of the test's fixture) and the shared kube-apiserver fixture, on a fake
// clock set to the wall clock. SetUpMotoCluster builds a network and a Ready EC2NodeClass in moto
// (SetUpMotoNodeClass), the cloud provider for the cluster `cluster`, the kube client with the
// chart's CRDs applied, the event recorder, the cluster state and its informers, and the
// controllers' Dependencies; the test then constructs its controllers (they add informer handlers)
// and calls StartInformers. StopInformers in TearDown, after the controllers stopped.
// Test-only; thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/time/clock.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/common/clock.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/providers/aws/cloudprovider/aws_cloud_provider.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/aws/moto_env.h"
#include "test/integration/aws/moto_provider.h"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::providers::aws::testing {

class MotoClusterTest : public ::testing::Test {
 protected:
  // `net`: the VPC's first two octets (each test its own, the moto server may be shared).
  void SetUpMotoCluster(std::string_view net, const std::string& cluster,
                        std::string_view field_manager) {
    ASSERT_FALSE(MotoEndpoint().empty()) << "DOVETAIL_MOTO_DIR/endpoint missing";
    clock_.Set(absl::Now());
    aws_ = MotoClient(kEc2, transport_, &credentials_, clock_);
    ec2_ = std::make_unique<Ec2Client>(*aws_);
    SetUpMotoNodeClass(*ec2_, net, kube::testing::UniqueName(cluster), node_class_);
    if (::testing::Test::HasFatalFailure()) return;
    cloud_ = MotoCloudProvider(*ec2_, ice_, clock_, &node_class_, cluster, DOVETAIL_AWS_DATA_DIR);
    ASSERT_NE(cloud_, nullptr);

    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, field_manager);
    events_ = std::make_unique<kube::EventRecorder>(*client_, clock_, kube::EventRecorderOptions{});
    informers_ = std::make_unique<state::ClusterInformers>(*client_, cluster_);
    deps_ = std::make_unique<controllers::Dependencies>(
        controllers::Dependencies{*client_, cluster_, *informers_, *cloud_, clock_, *events_});
  }

  // A NodeClaim of NodePool `pool` for one on-demand m5.large of the EC2NodeClass "default", as
  // JSON to create (the caller adds labels or owner references).
  static nlohmann::json M5NodeClaim(const std::string& name, const std::string& pool) {
    return {
        {"apiVersion", "karpenter.sh/v1"},
        {"kind", "NodeClaim"},
        {"metadata", {{"name", name}, {"labels", {{"karpenter.sh/nodepool", pool}}}}},
        {"spec",
         {{"requirements",
           {{{"key", "karpenter.sh/capacity-type"}, {"operator", "In"}, {"values", {"on-demand"}}},
            {{"key", "node.kubernetes.io/instance-type"},
             {"operator", "In"},
             {"values", {"m5.large"}}}}},
          {"nodeClassRef",
           {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "default"}}}}}};
  }

  void StartInformers() {
    informers_->Start();
    ASSERT_TRUE(informers_->WaitForSync(absl::Now() + absl::Seconds(60)));
  }
  void StopInformers() {
    if (informers_ != nullptr) informers_->Stop();
  }

  FakeClock clock_;
  HttpTransport transport_;
  StaticCredentialsProvider credentials_{
      AwsCredentials{.access_key_id = "A", .secret_access_key = "S"}};
  std::unique_ptr<AwsClient> aws_;
  std::unique_ptr<Ec2Client> ec2_;
  UnavailableOfferings ice_{clock_};
  apis::aws::v1::EC2NodeClass node_class_;
  std::unique_ptr<AwsCloudProvider> cloud_;

  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  state::Cluster cluster_{clock_};
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<state::ClusterInformers> informers_;
  std::unique_ptr<controllers::Dependencies> deps_;
};

}  // namespace dovetail::providers::aws::testing
