// `dovetail controller`: runs the autoscaler against the cluster in the kubeconfig (or in-cluster)
// until SIGINT/SIGTERM. Settings come from upstream Karpenter's environment variables
// (dovetail/operator/options.h); the flags below override them.
#include <atomic>
#include <csignal>
#include <iostream>
#include <thread>

#include "dovetail/cli/commands.h"
#include "dovetail/common/duration.h"
#include "dovetail/common/log.h"
#include "dovetail/common/thread_entry.h"
#include "dovetail/operator/operator.h"

namespace dovetail::cli {
namespace {

// Set by the signal handler (on whichever thread the signal lands) and by RunController when the
// operator fails; read by the signal-watcher thread. A lock-free atomic: safe in a signal handler
// and between threads (a volatile sig_atomic_t is only the former; ThreadSanitizer reported the
// handler's write racing with the watcher's read, see docs/reliability.md).
std::atomic<bool> g_signalled{false};
static_assert(std::atomic<bool>::is_always_lock_free);
void OnSignal(int) { g_signalled.store(true); }

struct ControllerFlags {
  std::string kubeconfig;
  std::string cloud_provider;
  std::string kwok_catalog;
  std::string cluster_name;
  std::string cluster_endpoint;
  std::string interruption_queue;
  std::string aws_region;
  std::string batch_idle;
  std::string batch_max;
  std::string feature_gates;
  std::string log_level;
  bool disable_leader_election = false;
  int metrics_port = -2;  // -2: not given
  int health_probe_port = -2;
  std::string metrics_bind_address;
  bool disruption_explanations = false;
};

int RunController(const ControllerFlags& flags) {
  auto options = op::OptionsFromEnvironment();
  if (!options.ok()) {
    std::cerr << "error: " << options.status().message() << "\n";
    return 2;
  }
  if (!flags.kubeconfig.empty()) options->kubeconfig = flags.kubeconfig;
  if (!flags.cloud_provider.empty()) options->cloud_provider = flags.cloud_provider;
  if (!flags.kwok_catalog.empty()) options->kwok_catalog = flags.kwok_catalog;
  if (!flags.cluster_name.empty()) options->cluster_name = flags.cluster_name;
  if (!flags.cluster_endpoint.empty()) options->cluster_endpoint = flags.cluster_endpoint;
  if (!flags.interruption_queue.empty()) options->interruption_queue = flags.interruption_queue;
  if (!flags.aws_region.empty()) options->aws_region = flags.aws_region;
  if (!flags.log_level.empty()) options->log_level = flags.log_level;
  if (flags.disable_leader_election) options->disable_leader_election = true;
  if (flags.metrics_port != -2) options->metrics_port = flags.metrics_port;
  if (flags.health_probe_port != -2) options->health_probe_port = flags.health_probe_port;
  if (!flags.metrics_bind_address.empty()) {
    options->metrics_bind_address = flags.metrics_bind_address;
  }
  if (flags.disruption_explanations) options->disruption_explanations = true;
  for (auto [text, out, name] :
       {std::tuple{&flags.batch_idle, &options->batch_idle_duration, "--batch-idle-duration"},
        std::tuple{&flags.batch_max, &options->batch_max_duration, "--batch-max-duration"}}) {
    if (text->empty()) continue;
    auto d = ParseGoDuration(*text);
    if (!d.ok()) {
      std::cerr << "error: " << name << " \"" << *text << "\": " << d.status().message() << "\n";
      return 2;
    }
    *out = *d;
  }
  if (!flags.feature_gates.empty()) {
    if (auto s = op::ParseFeatureGates(flags.feature_gates, options->feature_gates); !s.ok()) {
      std::cerr << "error: --feature-gates: " << s.message() << "\n";
      return 2;
    }
  }
  if (!log::SetLevel(options->log_level)) {
    std::cerr << "error: LOG_LEVEL \"" << options->log_level
              << "\": must be debug, info or error\n";
    return 2;
  }
  if (absl::Status s = op::Validate(*options); !s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return 2;
  }
  if (absl::Status s = log::SetOutputs(options->log_output_paths, options->log_error_output_paths);
      !s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return 2;
  }
  auto operator_ = op::Operator::Create(*options);
  if (!operator_.ok()) {
    std::cerr << "error: " << operator_.status().message() << "\n";
    return 1;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  op::Operator* o = operator_->get();
  std::thread watcher = StartThread("signal-watcher", [o] {
    while (!g_signalled.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    o->RequestStop();
  });
  absl::Status status = o->Run();
  if (!status.ok()) {
    g_signalled.store(true);
    watcher.join();
    log::Error("operator", std::string(status.message()));
    return 1;
  }
  watcher.join();
  return 0;
}

}  // namespace

void RegisterControllerCommand(CLI::App& app, ExitCode& exit_code) {
  auto flags = std::make_shared<ControllerFlags>();
  CLI::App* cmd = app.add_subcommand(
      "controller",
      "Run the autoscaler against a cluster (settings from upstream Karpenter's environment "
      "variables; flags override)");
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig file (default: $KUBECONFIG, "
                  "in-cluster, ~/.kube/config)");
  cmd->add_option("--cloud-provider", flags->cloud_provider,
                  "DOVETAIL_CLOUD_PROVIDER: aws (default) or kwok (fake Nodes through the API "
                  "server, for tests and the demo)");
  cmd->add_option("--cluster-name", flags->cluster_name, "CLUSTER_NAME (required for aws)");
  cmd->add_option("--cluster-endpoint", flags->cluster_endpoint, "CLUSTER_ENDPOINT (aws)");
  cmd->add_option("--interruption-queue", flags->interruption_queue,
                  "INTERRUPTION_QUEUE: SQS queue name (aws; default: no interruption handling)");
  cmd->add_option("--aws-region", flags->aws_region,
                  "AWS region (default: AWS_REGION, AWS_DEFAULT_REGION, then IMDS)");
  cmd->add_option("--kwok-catalog", flags->kwok_catalog,
                  "instance-type catalog directory for the kwok provider (default: synthetic)");
  cmd->add_option("--batch-idle-duration", flags->batch_idle, "BATCH_IDLE_DURATION (default 1s)");
  cmd->add_option("--batch-max-duration", flags->batch_max, "BATCH_MAX_DURATION (default 10s)");
  cmd->add_option("--feature-gates", flags->feature_gates, "FEATURE_GATES, e.g. NodeRepair=true");
  cmd->add_option("--log-level", flags->log_level, "LOG_LEVEL: debug, info or error");
  cmd->add_option("--metrics-port", flags->metrics_port,
                  "METRICS_PORT (default 8080; 0: any free port; -1: off)")
      ->check(CLI::Range(-1, 65535));
  cmd->add_option("--health-probe-port", flags->health_probe_port,
                  "HEALTH_PROBE_PORT (default 8081; 0: any free port; -1: off)")
      ->check(CLI::Range(-1, 65535));
  cmd->add_option("--metrics-bind-address", flags->metrics_bind_address,
                  "DOVETAIL_METRICS_BIND_ADDRESS: IPv4 or IPv6 address of the metrics port "
                  "(default 0.0.0.0: every IPv4 interface)");
  cmd->add_flag("--disruption-explanations", flags->disruption_explanations,
                "DOVETAIL_DISRUPTION_EXPLANATIONS: serve /disruption/explanations (node, pod and "
                "PDB names) on the metrics port, for `dovetail explain node`");
  cmd->add_flag("--disable-leader-election", flags->disable_leader_election,
                "DISABLE_LEADER_ELECTION");
  cmd->callback([flags, &exit_code] { exit_code.value = RunController(*flags); });
}

}  // namespace dovetail::cli
