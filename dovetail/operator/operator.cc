#include "dovetail/operator/operator.h"

#include <unistd.h>

#include <map>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "dovetail/cloudprovider/kwok/kwok_cloud_provider.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/common/log.h"
#include "dovetail/common/version.h"
#include "dovetail/controllers/disruption/disruption_controller.h"
#include "dovetail/kube/config.h"
#include "dovetail/metrics/process.h"
#include "dovetail/operator/aws.h"

namespace dovetail::op {

namespace {

std::string BuildCompiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "c++";
#endif
}

std::string BuildArch() {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#else
  return "unknown";
#endif
}

}  // namespace
namespace {

constexpr std::string_view kLogger = "operator";

constexpr std::string_view kExplanationsOff =
    "/disruption/explanations is off: it names nodes, pods and PodDisruptionBudgets. Turn it on "
    "with DOVETAIL_DISRUPTION_EXPLANATIONS=true (flag --disruption-explanations; Helm value "
    "dovetail.disruptionExplanations=true). `dovetail explain node NAME` works without it.\n";

std::string Identity() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  absl::BitGen gen;
  return absl::StrCat(host[0] != '\0' ? host : "dovetail", "_",
                      absl::Hex(absl::Uniform<uint32_t>(gen), absl::kZeroPad8));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Operator>> Operator::Create(const Options& options) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  for (const std::string& note : InertSettingNotes(options)) {
    log::Info(kLogger, "setting has no effect", {{"setting", note}});
  }
  std::unique_ptr<Operator> op(new Operator(options));
  absl::StatusOr<kube::RestConfig> config = options.kubeconfig.empty()
                                                ? kube::LoadDefaultConfig()
                                                : kube::LoadKubeconfigFile(options.kubeconfig);
  if (!config.ok()) return config.status();
  config->qps = options.kube_client_qps;
  config->burst = options.kube_client_burst;
  metrics::ExportProcessMetrics(op->metrics_);
  auto rest = kube::RestClient::Create(*config, {.metrics = &op->metrics_});
  if (!rest.ok()) return rest.status();
  op->rest_ = std::move(*rest);
  // Writes are refused until this process leads (or at once, without leader election).
  if (options.disable_leader_election) {
    op->gate_.Open();
  } else {
    op->gate_.Close();
  }
  op->client_ = std::make_unique<kube::Client>(*op->rest_, &op->gate_);
  op->events_ =
      std::make_unique<kube::EventRecorder>(*op->client_, op->clock_, kube::EventRecorderOptions{});
  op->cluster_ = std::make_unique<state::Cluster>(op->clock_);
  op->informers_ = std::make_unique<state::ClusterInformers>(
      *op->client_, *op->cluster_,
      kube::InformerOptions{.metrics = &op->metrics_, .undecodable = &op->undecodable_});

  // Cloud provider.
  cloudprovider::CloudProvider* cloud = nullptr;
  if (options.cloud_provider == "aws") {
    auto stack = BuildAwsStack(options, *op->client_, config->ca_pem, op->clock_, &op->gate_);
    if (!stack.ok()) return stack.status();
    op->aws_ = *std::move(stack);
    cloud = &op->aws_->cloud();
  } else {
    auto catalog = options.kwok_catalog.empty()
                       ? cloudprovider::kwok::SyntheticCatalog()
                       : cloudprovider::kwok::LoadCatalog(options.kwok_catalog);
    if (!catalog.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("kwok instance-type catalog: ", catalog.status().message()));
    }
    op->cloud_ =
        std::make_unique<cloudprovider::kwok::KwokCloudProvider>(*op->client_, std::move(*catalog));
    cloud = op->cloud_.get();
  }

  op->deps_ = std::make_unique<controllers::Dependencies>(
      controllers::Dependencies{*op->client_, *op->cluster_, *op->informers_, *cloud, op->clock_,
                                *op->events_, &op->metrics_, &op->undecodable_, &op->pod_cache_});
  op->controllers_ = BuildControllers(*op->deps_, options, op->metered_clouds_);
  if (op->aws_ != nullptr) {
    // The interruption controller replaces interrupted nodes first through the disruption
    // controller (started before it, stopped after it).
    controllers::disruption::Replacer* replacer = nullptr;
    for (const auto& c : op->controllers_) {
      if (auto* d = dynamic_cast<controllers::disruption::DisruptionController*>(c.get())) {
        replacer = d;
      }
    }
    for (auto& c : op->aws_->Controllers(*op->deps_, replacer)) {
      op->controllers_.push_back(std::move(c));
    }
  }
  // Upstream's labels; goversion is the C++ compiler that built Dovetail (it has no Go), goarch
  // the architecture under Go's name (amd64, arm64).
  op->metrics_
      .NewGauge("karpenter_build_info",
                "A metric with a constant '1' value labeled by version from which karpenter was "
                "built.",
                {"version", "goversion", "goarch", "commit"})
      .Set({std::string(GetBuildInfo().version), BuildCompiler(), BuildArch(),
            std::string(GetBuildInfo().commit)},
           1);

  if (!options.disable_leader_election) {
    auto elector_rest = kube::RestClient::Create(*config, {.metrics = &op->metrics_});
    if (!elector_rest.ok()) return elector_rest.status();
    kube::LeaderElectionConfig lec;
    lec.lease_name = options.leader_election_name;
    lec.lease_namespace = options.leader_election_namespace.empty()
                              ? "kube-system"
                              : options.leader_election_namespace;
    lec.identity = Identity();
    lec.metrics = &op->metrics_;
    Operator* self = op.get();
    kube::LeaderCallbacks callbacks;
    callbacks.on_started_leading = [self, identity = lec.identity] {
      self->leading_ = true;
      log::Info(kLogger, "started leading", {{"identity", identity}});
      self->StartControllers();
    };
    callbacks.on_stopped_leading = [self] {
      self->leading_ = false;
      log::Info(kLogger, "stopped leading");
      self->StopControllers();
    };
    callbacks.on_new_leader = [](const std::string& holder) {
      log::Info(kLogger, "observed leader", {{"holder", holder}});
    };
    op->elector_ = std::make_unique<kube::LeaderElector>(std::move(*elector_rest), lec, op->clock_,
                                                         &op->gate_, std::move(callbacks));
  }
  return op;
}

Operator::~Operator() {
  if (elector_ != nullptr) elector_->Stop();
  StopControllers();
  if (informers_ != nullptr) informers_->Stop();
  metrics_endpoint_.Stop();
  health_endpoint_.Stop();
}

void Operator::StartControllers() {
  WorkInProgress::Scope scope(controller_lifecycle_);
  absl::MutexLock lock(&mu_);
  if (running_) return;
  for (auto& c : controllers_) {
    log::Info(kLogger, "starting controller", {{"controller", std::string(c->Name())}});
    c->Start();
  }
  running_ = true;
}

void Operator::StopControllers() {
  WorkInProgress::Scope scope(controller_lifecycle_);
  absl::MutexLock lock(&mu_);
  if (!running_) return;
  for (auto it = controllers_.rbegin(); it != controllers_.rend(); ++it) {
    log::Info(kLogger, "stopping controller", {{"controller", std::string((*it)->Name())}});
    (*it)->Stop();
  }
  running_ = false;
}

absl::Status Operator::StartEndpoints() {
  if (options_.metrics_port >= 0) {
    metrics_endpoint_.Handle("/metrics", [this] {
      CollectClusterStateMetrics();
      return metrics::Response{200, metrics_.Expose(), "text/plain; version=0.0.4; charset=utf-8"};
    });
    // The disruption controller's latest Explanation per node: node, pod and PodDisruptionBudget
    // names, so only when DOVETAIL_DISRUPTION_EXPLANATIONS asks for it; otherwise a 404 that
    // says how to turn it on.
    if (options_.disruption_explanations) {
      for (const auto& controller : controllers_) {
        auto* disruption =
            dynamic_cast<const controllers::disruption::DisruptionController*>(controller.get());
        if (disruption == nullptr) continue;
        metrics_endpoint_.Handle("/disruption/explanations", [disruption] {
          return metrics::Response{200, disruption->ExplanationsJson(), "application/json"};
        });
      }
    } else {
      metrics_endpoint_.Handle("/disruption/explanations", [] {
        return metrics::Response{404, std::string(kExplanationsOff)};
      });
    }
    auto port = metrics_endpoint_.Start(options_.metrics_bind_address, options_.metrics_port);
    if (!port.ok()) return port.status();
    metrics_port_ = *port;
  }
  if (options_.health_probe_port >= 0) {
    // Unhealthy (503 and the reason) when the leader's Lease went unrenewed or a controller's
    // unit of work is stuck: operator/health.h.
    health_endpoint_.Handle("/healthz", [this] {
      HealthVerdict verdict = DecideHealth(GatherHealth());
      return verdict.healthy ? metrics::Response{200, "ok"}
                             : metrics::Response{503, std::move(verdict.reason)};
    });
    // Ready once the informers synced (the operator then campaigns and, leading, runs the
    // controllers); a standby replica is ready too.
    health_endpoint_.Handle("/readyz", [this] {
      return synced_.load() ? metrics::Response{200, "ok"}
                            : metrics::Response{503, "cluster state not synced"};
    });
    auto port = health_endpoint_.Start("0.0.0.0", options_.health_probe_port);
    if (!port.ok()) return port.status();
    health_port_ = *port;
  }
  return absl::OkStatus();
}

HealthInput Operator::GatherHealth() const {
  HealthInput input{.now = clock_.Now()};
  if (elector_ != nullptr) {
    const kube::LeaderStatus status = elector_->Status();
    input.lease = LeaseHealthInput{.lease_name = options_.leader_election_name,
                                   .leading = status.leading,
                                   .last_renewal = status.last_renewal,
                                   .lease_duration = status.lease_duration};
  }
  input.work.reserve(controllers_.size() + 1);
  for (const auto& controller : controllers_) {
    input.work.push_back({std::string(controller->Name()), controller->OldestWorkStart()});
  }
  input.work.push_back({"operator", controller_lifecycle_.OldestStart()});
  return input;
}

void Operator::CollectClusterStateMetrics() {
  metrics_
      .NewGauge("karpenter_cluster_state_synced",
                "1 when the cluster state has synced with the API server, else 0.")
      .Set({}, cluster_->Synced() ? 1 : 0);
  metrics_
      .NewGauge("karpenter_cluster_state_node_count",
                "Nodes and NodeClaims the cluster state tracks.")
      .Set({}, static_cast<double>(cluster_->size()));
}

absl::Status Operator::Run(absl::Duration sync_timeout) {
  log::Info(kLogger, "starting",
            {{"cloudProvider", options_.cloud_provider},
             {"controllers", absl::StrCat(controllers_.size())}});
  if (absl::Status s = StartEndpoints(); !s.ok()) return s;
  log::Info(kLogger, "serving",
            {{"metricsAddress", options_.metrics_bind_address},
             {"metricsPort", absl::StrCat(metrics_port_.load())},
             {"healthProbePort", absl::StrCat(health_port_.load())}});
  informers_->Start();
  if (!informers_->WaitForSync(absl::Now() + sync_timeout)) {
    informers_->Stop();
    return absl::DeadlineExceededError(
        "the informers did not sync: is the API server reachable and are the karpenter.sh CRDs "
        "installed?");
  }
  synced_ = true;
  log::Info(kLogger, "cluster state synced");
  if (elector_ != nullptr) {
    elector_->Start();
  } else {
    leading_ = true;
    StartControllers();
  }
  stop_.WaitForNotification();
  log::Info(kLogger, "stopping");
  if (elector_ != nullptr) elector_->Stop();  // stops leading (controllers stop), releases lease
  StopControllers();
  informers_->Stop();
  metrics_endpoint_.Stop();
  health_endpoint_.Stop();
  return absl::OkStatus();
}

}  // namespace dovetail::op
