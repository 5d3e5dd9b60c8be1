// `--cloud-provider aws`: the AWS clients (endpoints from the environment, region from the
// setting / environment / IMDS, the SDKs' default credentials chain), the AwsCloudProvider, the
// EC2NodeClass controller and, when INTERRUPTION_QUEUE is set, the interruption controller.
// Internal to the operator.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/cloudprovider/cloud_provider.h"
#include "dovetail/common/clock.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/disruption/replacer.h"
#include "dovetail/kube/client.h"
#include "dovetail/operator/options.h"

namespace dovetail::op {

// Owns the AWS clients; must outlive the cloud provider and the controllers built from it.
class AwsStack {
 public:
  virtual ~AwsStack() = default;
  virtual cloudprovider::CloudProvider& cloud() = 0;
  // The AWS controllers (node class, interruption when a queue is set) on `deps`. `replacer`
  // (may be null: interrupted NodeClaims are then deleted at once) launches replacements before
  // an interrupted node is drained; it must outlive the controllers.
  virtual std::vector<std::unique_ptr<controllers::Controller>> Controllers(
      const controllers::Dependencies& deps, controllers::disruption::Replacer* replacer) = 0;
};

// `kube_ca_pem` is the CA the controller's Kubernetes client trusts (the nodes' CA bundle when
// CLUSTER_CA_BUNDLE is not set; empty when none). Errors: NotFound when no region is found;
// InvalidArgument for a bad endpoint override or unreadable static catalog files;
// FailedPrecondition when the cluster endpoint or CA cannot be found (bootstrap.h).
// `gate` (may be null) fences every AWS write (aws_client.h): while it is closed (this process
// is not the leader) no CreateFleet, TerminateInstances, launch template, instance profile or
// SQS DeleteMessage call, nor a retry of one, is sent.
absl::StatusOr<std::unique_ptr<AwsStack>> BuildAwsStack(const Options& options,
                                                        kube::Client& client,
                                                        std::string_view kube_ca_pem,
                                                        const Clock& clock,
                                                        const kube::WriteGate* gate = nullptr);

}  // namespace dovetail::op
