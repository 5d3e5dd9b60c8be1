// The controller's settings: upstream Karpenter's environment variables and flags
// (docs/settings.md), so that a Helm values file or Deployment written for upstream configures
// Dovetail the same way. Built from the environment first; command-line flags
// (dovetail/cli/controller.cc) override. Value type; thread-compatible.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

// Namespace `op`: `operator` is a C++ keyword.
namespace dovetail::op {

struct Options {
  std::string kubeconfig;              // KUBECONFIG; "" = in-cluster, then ~/.kube/config
  std::string cluster_name;            // CLUSTER_NAME
  std::string cloud_provider = "aws";  // DOVETAIL_CLOUD_PROVIDER: aws | kwok (fake Nodes)
  std::string kwok_catalog;            // DOVETAIL_KWOK_CATALOG: catalog directory; "" = synthetic
  // aws only (docs/aws.md, "Settings"; the AWS clients read AWS_REGION, AWS_ENDPOINT_URL*,
  // credentials and IMDS settings from the environment themselves).
  std::string cluster_endpoint;    // CLUSTER_ENDPOINT: the API endpoint nodes join
  std::string cluster_ca_bundle;   // CLUSTER_CA_BUNDLE: base64 CA for nodes
  std::string cluster_cidr;        // DOVETAIL_CLUSTER_CIDR: service CIDR (AL2023 user data)
  std::string interruption_queue;  // INTERRUPTION_QUEUE: SQS queue name; "" = no interruption
  std::string aws_region;          // --aws-region; "" = AWS_REGION, AWS_DEFAULT_REGION, IMDS
  std::string aws_catalog;         // DOVETAIL_AWS_CATALOG: static price/type files; "" = none
  // DOVETAIL_INSTANCE_TYPE_METRICS: export upstream's per-offering gauges
  // (karpenter_cloudprovider_instance_type_offering_{available,price_estimate}); off by default:
  // one series per instance type x capacity type x zone.
  bool instance_type_metrics = false;
  // Upstream's AWS settings that change what Dovetail computes or calls (docs/settings.md).
  int reserved_enis = 0;                      // RESERVED_ENIS: ENIs kept out of max pods
  double vm_memory_overhead_percent = 0.075;  // VM_MEMORY_OVERHEAD_PERCENT: of memory, per type
  bool isolated_vpc = false;       // ISOLATED_VPC: no Pricing API, no IAM instance-profile cleanup
  bool eks_control_plane = false;  // EKS_CONTROL_PLANE: Kubernetes version from EKS
  // AMI_REFRESH_INTERVAL, SUBNET_REFRESH_INTERVAL, SECURITY_GROUP_REFRESH_INTERVAL: how often an
  // EC2NodeClass's AMIs, subnets and security groups are resolved again (at least 1m each).
  absl::Duration ami_refresh_interval = absl::Minutes(1);
  absl::Duration subnet_refresh_interval = absl::Minutes(1);
  absl::Duration security_group_refresh_interval = absl::Minutes(1);
  bool disable_dry_run = false;  // DISABLE_DRY_RUN (Dovetail makes no dry-run calls either way)
  std::map<std::string, bool> aws_feature_gates = {{"NodeClassCEL", false}};  // AWS_FEATURE_GATES
  absl::Duration batch_idle_duration = absl::Seconds(1);                      // BATCH_IDLE_DURATION
  absl::Duration batch_max_duration = absl::Seconds(10);                      // BATCH_MAX_DURATION
  std::string preference_policy = "Respect";     // PREFERENCE_POLICY: Respect | Ignore
  std::string min_values_policy = "Strict";      // MIN_VALUES_POLICY: Strict | BestEffort
  std::map<std::string, bool> feature_gates = {  // FEATURE_GATES: Name=bool,...
      {"NodeRepair", false},  {"ReservedCapacity", true}, {"SpotToSpotConsolidation", false},
      {"NodeOverlay", false}, {"StaticCapacity", false},  {"CapacityBuffer", false}};
  double kube_client_qps = 200;                                    // KUBE_CLIENT_QPS
  int kube_client_burst = 300;                                     // KUBE_CLIENT_BURST
  bool disable_leader_election = false;                            // DISABLE_LEADER_ELECTION
  std::string leader_election_name = "karpenter-leader-election";  // LEADER_ELECTION_NAME
  std::string leader_election_namespace;  // LEADER_ELECTION_NAMESPACE; "" = SYSTEM_NAMESPACE or
                                          // kube-system
  std::string log_level = "info";         // LOG_LEVEL: debug | info | error
  // LOG_OUTPUT_PATHS: where log lines go ("stdout", "stderr" or files; comma-separated).
  std::vector<std::string> log_output_paths = {"stdout"};
  // LOG_ERROR_OUTPUT_PATHS: where the logger reports its own failures (a path it cannot write).
  std::vector<std::string> log_error_output_paths = {"stderr"};
  // IGNORE_DRA_REQUESTS: pods with Dynamic Resource Allocation claims get no nodes (false, which
  // would allocate devices, is refused).
  bool ignore_dra_requests = true;
  // DISABLE_CLUSTER_STATE_OBSERVABILITY: no karpenter_pods_state and no cost gauges.
  bool disable_cluster_state_observability = false;
  // Accepted and checked, but change nothing in Dovetail; InertSettingNotes() says so at start.
  bool disable_controller_warmup = true;  // DISABLE_CONTROLLER_WARMUP (informers always sync first)
  int64_t memory_limit = -1;              // MEMORY_LIMIT (bytes; sizes Go's GC upstream)
  int64_t cpu_requests = 1000;            // CPU_REQUESTS (millicores; goroutine counts upstream)
  // Refused when true (Dovetail has neither).
  bool enable_profiling = false;    // ENABLE_PROFILING
  bool enable_zonal_shift = false;  // ENABLE_ZONAL_SHIFT
  int metrics_port = 8080;          // METRICS_PORT: /metrics; -1 disables it
  int health_probe_port = 8081;     // HEALTH_PROBE_PORT: /healthz, /readyz; -1 disables it
  // DOVETAIL_METRICS_BIND_ADDRESS: the IPv4 or IPv6 address the metrics port listens on;
  // "0.0.0.0" is every IPv4 interface (the probes always listen there: the kubelet calls them).
  std::string metrics_bind_address = "0.0.0.0";
  // DOVETAIL_DISRUPTION_EXPLANATIONS: serve /disruption/explanations on the metrics port (node,
  // pod and PodDisruptionBudget names, for `dovetail explain node`); off by default.
  bool disruption_explanations = false;
};

// Reads the environment through `getenv` (tests pass their own). Errors: InvalidArgument naming
// the variable and the bad value (an unparseable duration, number, boolean or feature gate).
absl::StatusOr<Options> OptionsFromEnvironment(
    const std::function<std::optional<std::string>(const std::string&)>& getenv);
absl::StatusOr<Options> OptionsFromEnvironment();

// Parses "Name=true,Other=false" into `gates` (unknown names are kept: a newer chart may set
// gates this build does not know). Errors: InvalidArgument for a malformed entry.
absl::Status ParseFeatureGates(const std::string& text, std::map<std::string, bool>& gates,
                               const std::string& variable = "FEATURE_GATES");

// Checks values that have a fixed set (policies, cloud provider, log level), durations and
// ranges (as upstream validates them), and that DOVETAIL_METRICS_BIND_ADDRESS is an IP address;
// CLUSTER_NAME is required for aws. Refuses, naming the
// variable, upstream settings that ask for what Dovetail does not do: ENABLE_ZONAL_SHIFT=true,
// ENABLE_PROFILING=true, IGNORE_DRA_REQUESTS=false, the feature gates NodeRepair, NodeOverlay,
// StaticCapacity, CapacityBuffer and PodDeletionCostManagement and the AWS feature gate
// NodeClassCEL set to true.
absl::Status Validate(const Options& options);

// Start-up notes on upstream settings that are accepted but change nothing in Dovetail (set to a
// value other than upstream's default): one line each, for the log.
std::vector<std::string> InertSettingNotes(const Options& options);

}  // namespace dovetail::op
