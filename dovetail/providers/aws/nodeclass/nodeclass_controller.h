// NodeClassController ("nodeclass"): resolves every EC2NodeClass into its status, as upstream's
// EC2NodeClass controller does (docs/aws-provider.md). Keyed by class name;
// triggered by its own EC2NodeClass informer (creation, spec (generation), annotation, finalizer
// and deletion changes; status writes alone do not trigger it), by NodeClaim deletions (a class
// being deleted waits for its NodeClaims), and every `resolve_interval` (the controller sets the
// shortest of AMI_REFRESH_INTERVAL, SUBNET_REFRESH_INTERVAL and SECURITY_GROUP_REFRESH_INTERVAL,
// 1 min by default: new AMIs behind an
// alias are what AMI drift later acts on).
//
// Each reconcile reads the class from the API server (never the cache) and:
//   1. re-stamps the class's NodeClaims that carry another hash version (an older upstream, or
//      Dovetail before it computed upstream's hash: version dovetail-v1) with version v5 and the
//      class's hash (the hash only without a Drifted condition), as upstream's nodeclass.hash
//      controller; then adds the karpenter.k8s.aws/termination finalizer and stamps the
//      karpenter.k8s.aws/ec2nodeclass-hash(-version) annotations: upstream's drift hash, version
//      v5 (apis::aws::v1::DriftHash with NodeClassOptions::hash_ca_bundle);
//   2. resolves subnets, security groups and AMIs (resolvers.h) into status.subnets,
//      status.securityGroups and status.amis, and the instance profile (instance_profile.h) into
//      status.instanceProfile, each with its condition: SubnetsReady (False SubnetsNotFound),
//      SecurityGroupsReady (False SecurityGroupsNotFound), AMIsReady (False AMINotFound or
//      InvalidAMISelector), InstanceProfileReady (False InstanceProfileNotFound, RoleNotFound or
//      InstanceProfileCreationFailed); an AWS API error leaves that part of status as it was and
//      makes its condition Unknown (ResolutionFailed, the error as the message), and the
//      reconcile is retried with backoff;
//   3. ValidationSucceeded: False (TagValidationFailed) for restricted or empty spec.tags keys,
//      Unknown (DependenciesNotReady) while another dependent is not True, else True. (Upstream's
//      dry-run CreateFleet/RunInstances/CreateLaunchTemplate checks are not made.)
//   4. Ready follows the dependents (conditions.h);
//   5. collects superseded managed instance profiles (not in an isolated VPC) and deletes the
//      class's launch templates that its resolved status can no longer produce
//      (launch_templates.h; only once subnets, security groups, AMIs and the instance profile
//      all resolved);
// and writes metadata and status with merge patches carrying the resourceVersion it read (a
// conflict retries the reconcile).
// Deletion: while NodeClaims reference the class, an event WaitingOnNodeClaimTermination and a
// requeue; then every launch template Dovetail created for the class (found by its cluster and
// class tags) and (except in an isolated VPC) every managed instance profile of the class are
// deleted and the finalizer removed. A failed deletion is an event (LaunchTemplateDeletionFailed or
// InstanceProfileDeletionFailed), a log line and an error (the reconcile is retried with backoff,
// the finalizer stays).
// Thread-safety: see controllers/controller.h; informer handlers only enqueue.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/reconcile_queue.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/workqueue.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/iam_client.h"
#include "dovetail/providers/aws/nodeclass/instance_profile.h"
#include "dovetail/providers/aws/nodeclass/resolvers.h"
#include "dovetail/providers/aws/ssm_client.h"

namespace dovetail::providers::aws::nodeclass {

struct NodeClassOptions {
  std::string cluster_name;
  // The CA bundle upstream's EC2NodeClass drift hash mixes in (base64): CLUSTER_CA_BUNDLE, else
  // the Kubernetes client's CA, as upstream's controller; "" when neither is known.
  std::string hash_ca_bundle;
  std::string region;
  // The service CIDR nodes get (providers/aws/bootstrap.h); empty: unknown, so an AL2023 class
  // is not Ready (ValidationSucceeded False, ClusterCIDRUnknown): nodeadm cannot join without it.
  std::string cluster_cidr;
  // "1.34"; empty: asked from `kubernetes_version_source` when set (upstream's EKS_CONTROL_PLANE:
  // eks:DescribeCluster), else from the API server's /version, again every resolve_interval.
  std::string kubernetes_version;
  std::function<absl::StatusOr<std::string>()> kubernetes_version_source;
  // See NodeClassResolver::Options (tests against moto only).
  std::string ssm_path_prefix;
  absl::Duration resolve_interval = absl::Minutes(5);
  // How long a superseded managed instance profile is kept (upstream: 1 h).
  absl::Duration instance_profile_grace = absl::Hours(1);
  // False in an isolated VPC (upstream's ISOLATED_VPC): superseded managed instance profiles are
  // not collected and a deleted class's are left in place (IAM has no VPC endpoint).
  bool delete_instance_profiles = true;
  // How often a class being deleted looks again at its NodeClaims (NodeClaim deletions also
  // trigger it).
  absl::Duration deletion_poll = absl::Seconds(10);
  int workers = 2;
  kube::InformerOptions informer_options;
  kube::WorkQueueOptions queue = {.base_delay = absl::Seconds(1), .max_delay = absl::Minutes(1)};
};

class NodeClassController final : public controllers::Controller {
 public:
  using NodeClassInformer = kube::Informer<kube::ApiObjectCodec<apis::aws::v1::EC2NodeClass>>;

  // Registers the NodeClaim handler; `deps` and the clients must outlive this object.
  NodeClassController(const controllers::Dependencies& deps, Ec2Client& ec2, SsmClient& ssm,
                      IamClient& iam, NodeClassOptions options);
  ~NodeClassController() override;

  std::string_view Name() const override { return "nodeclass"; }
  // Starts the EC2NodeClass informer and the workers (every class is enqueued by the informer).
  void Start() override;
  void Stop() override;
  // When the oldest reconcile in progress began (the work queue's); nullopt when stopped.
  std::optional<absl::Time> OldestWorkStart() const override {
    return queue_.OldestProcessingStart();
  }

  // One reconcile of the named class (what a worker runs; public for tests).
  absl::StatusOr<kube::ReconcileResult> Reconcile(const std::string& name);
  NodeClassInformer& node_classes() { return node_classes_; }

 private:
  void Enqueue(const std::string& name) { queue_.Add(name); }
  absl::StatusOr<kube::ReconcileResult> Finalize(const apis::aws::v1::EC2NodeClass& node_class);
  // Fills status and conditions of `desired`; returns the first API error (after filling).
  absl::Status Resolve(apis::aws::v1::EC2NodeClass& desired);
  absl::StatusOr<std::string> KubernetesVersion();
  // Stamps the class's NodeClaims carrying another hash version with version v5 and (unless they
  // have a Drifted condition) `hash`. Returns the first API error other than NotFound.
  absl::Status RestampNodeClaims(const apis::aws::v1::EC2NodeClass& node_class,
                                 const std::string& hash);
  void RecordEvent(const apis::aws::v1::EC2NodeClass& node_class, std::string_view type,
                   std::string_view reason, std::string_view message);

  const controllers::Dependencies deps_;
  const NodeClassOptions options_;
  Ec2Client& ec2_;
  NodeClassResolver resolver_;
  InstanceProfiles profiles_;
  NodeClassInformer node_classes_;

  absl::Mutex version_mu_;
  std::string k8s_version_ ABSL_GUARDED_BY(version_mu_);
  absl::Time k8s_version_at_ ABSL_GUARDED_BY(version_mu_) = absl::InfinitePast();

  // Last: destroyed (stopped) before the members its reconciles use.
  controllers::ReconcileQueue queue_;
  // After everything its handlers touch, so removed (each waiting for its handler's call in
  // progress) before any of it is destroyed.
  std::vector<kube::HandlerRegistration> registrations_;
};

}  // namespace dovetail::providers::aws::nodeclass
