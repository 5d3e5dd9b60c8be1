// The controller's settings: upstream Karpenter's environment variables and flags (reference
// section 3.1), so that a Helm values file or Deployment written for upstream configures Dovetail
// the same way. Built from the environment first; command-line flags (dovetail/cli/controller.cc)
// override. Value type; thread-compatible.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

// Namespace `op`: `operator` is a C++ keyword.
namespace dovetail::op {

struct Options {
  std::string kubeconfig;              // KUBECONFIG; "" = in-cluster, then ~/.kube/config
  std::string cluster_name;            // CLUSTER_NAME
  std::string cloud_provider = "aws";  // DOVETAIL_CLOUD_PROVIDER: aws | kwok (fake Nodes)
  std::string kwok_catalog;            // DOVETAIL_KWOK_CATALOG: catalog directory; "" = synthetic
  // aws only (reference §3.1; the AWS clients read AWS_REGION, AWS_ENDPOINT_URL*, credentials
  // and IMDS settings from the environment themselves).
  std::string cluster_endpoint;    // CLUSTER_ENDPOINT: the API endpoint nodes join
  std::string cluster_ca_bundle;   // CLUSTER_CA_BUNDLE: base64 CA for nodes
  std::string cluster_cidr;        // DOVETAIL_CLUSTER_CIDR: service CIDR (AL2023 user data)
  std::string interruption_queue;  // INTERRUPTION_QUEUE: SQS queue name; "" = no interruption
  std::string aws_region;          // --aws-region; "" = AWS_REGION, AWS_DEFAULT_REGION, IMDS
  std::string aws_catalog;         // DOVETAIL_AWS_CATALOG: static price/type files; "" = none
  absl::Duration batch_idle_duration = absl::Seconds(1);  // BATCH_IDLE_DURATION
  absl::Duration batch_max_duration = absl::Seconds(10);  // BATCH_MAX_DURATION
  std::string preference_policy = "Respect";              // PREFERENCE_POLICY: Respect | Ignore
  std::string min_values_policy = "Strict";               // MIN_VALUES_POLICY: Strict | BestEffort
  std::map<std::string, bool> feature_gates = {           // FEATURE_GATES: Name=bool,...
      {"NodeRepair", false},  {"ReservedCapacity", true}, {"SpotToSpotConsolidation", false},
      {"NodeOverlay", false}, {"StaticCapacity", false},  {"CapacityBuffer", false}};
  double kube_client_qps = 200;                                    // KUBE_CLIENT_QPS
  int kube_client_burst = 300;                                     // KUBE_CLIENT_BURST
  bool disable_leader_election = false;                            // DISABLE_LEADER_ELECTION
  std::string leader_election_name = "karpenter-leader-election";  // LEADER_ELECTION_NAME
  std::string leader_election_namespace;  // LEADER_ELECTION_NAMESPACE; "" = SYSTEM_NAMESPACE or
                                          // kube-system
  std::string log_level = "info";         // LOG_LEVEL: debug | info | error
  int metrics_port = 8080;                // METRICS_PORT: /metrics; -1 disables it
  int health_probe_port = 8081;           // HEALTH_PROBE_PORT: /healthz, /readyz; -1 disables it
};

// Reads the environment through `getenv` (tests pass their own). Errors: InvalidArgument naming
// the variable and the bad value (an unparseable duration, number, boolean or feature gate).
absl::StatusOr<Options> OptionsFromEnvironment(
    const std::function<std::optional<std::string>(const std::string&)>& getenv);
absl::StatusOr<Options> OptionsFromEnvironment();

// Parses "Name=true,Other=false" into `gates` (unknown names are kept: a newer chart may set
// gates this build does not know). Errors: InvalidArgument for a malformed entry.
absl::Status ParseFeatureGates(const std::string& text, std::map<std::string, bool>& gates);

// Checks values that have a fixed set (policies, cloud provider, log level), and durations;
// CLUSTER_NAME is required for aws.
absl::Status Validate(const Options& options);

}  // namespace dovetail::op
