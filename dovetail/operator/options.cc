#include "dovetail/operator/options.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "dovetail/common/duration.h"

namespace dovetail::op {
namespace {

absl::Status Bad(const std::string& name, const std::string& value, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(name, "=\"", value, "\": ", why));
}

absl::StatusOr<bool> ParseBool(const std::string& name, const std::string& value) {
  const std::string v = absl::AsciiStrToLower(value);
  if (v == "true" || v == "1" || v == "t") return true;
  if (v == "false" || v == "0" || v == "f") return false;
  return Bad(name, value, "not a boolean");
}

}  // namespace

absl::Status ParseFeatureGates(const std::string& text, std::map<std::string, bool>& gates,
                               const std::string& variable) {
  for (absl::string_view piece : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::string entry(piece);
    absl::StripAsciiWhitespace(&entry);
    std::vector<std::string> kv = absl::StrSplit(absl::string_view(entry), absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty()) {
      return Bad(variable, text, absl::StrCat("entry \"", entry, "\" is not Name=bool"));
    }
    auto value = ParseBool(variable, kv[1]);
    if (!value.ok()) {
      return Bad(variable, text, absl::StrCat("entry \"", entry, "\" is not Name=bool"));
    }
    gates[kv[0]] = *value;
  }
  return absl::OkStatus();
}

absl::StatusOr<Options> OptionsFromEnvironment(
    const std::function<std::optional<std::string>(const std::string&)>& getenv) {
  Options o;
  auto str = [&](const char* name, std::string& out) {
    if (auto v = getenv(name); v && !v->empty()) out = *v;
  };
  auto duration = [&](const char* name, absl::Duration& out) -> absl::Status {
    auto v = getenv(name);
    if (!v || v->empty()) return absl::OkStatus();
    auto d = ParseGoDuration(*v);
    if (!d.ok()) return Bad(name, *v, std::string(d.status().message()));
    out = *d;
    return absl::OkStatus();
  };
  auto boolean = [&](const char* name, bool& out) -> absl::Status {
    auto v = getenv(name);
    if (!v || v->empty()) return absl::OkStatus();
    auto b = ParseBool(name, *v);
    if (!b.ok()) return b.status();
    out = *b;
    return absl::OkStatus();
  };
  str("KUBECONFIG", o.kubeconfig);
  str("CLUSTER_NAME", o.cluster_name);
  str("DOVETAIL_CLOUD_PROVIDER", o.cloud_provider);
  str("DOVETAIL_KWOK_CATALOG", o.kwok_catalog);
  str("CLUSTER_ENDPOINT", o.cluster_endpoint);
  str("CLUSTER_CA_BUNDLE", o.cluster_ca_bundle);
  str("DOVETAIL_CLUSTER_CIDR", o.cluster_cidr);
  str("INTERRUPTION_QUEUE", o.interruption_queue);
  str("DOVETAIL_AWS_CATALOG", o.aws_catalog);
  str("PREFERENCE_POLICY", o.preference_policy);
  str("MIN_VALUES_POLICY", o.min_values_policy);
  str("LEADER_ELECTION_NAME", o.leader_election_name);
  str("SYSTEM_NAMESPACE", o.leader_election_namespace);
  str("LEADER_ELECTION_NAMESPACE", o.leader_election_namespace);
  str("LOG_LEVEL", o.log_level);
  str("DOVETAIL_METRICS_BIND_ADDRESS", o.metrics_bind_address);
  if (auto s = duration("BATCH_IDLE_DURATION", o.batch_idle_duration); !s.ok()) return s;
  if (auto s = duration("BATCH_MAX_DURATION", o.batch_max_duration); !s.ok()) return s;
  if (auto s = boolean("DISABLE_LEADER_ELECTION", o.disable_leader_election); !s.ok()) return s;
  if (auto v = getenv("KUBE_CLIENT_QPS"); v && !v->empty()) {
    if (!absl::SimpleAtod(*v, &o.kube_client_qps))
      return Bad("KUBE_CLIENT_QPS", *v, "not a number");
  }
  if (auto v = getenv("KUBE_CLIENT_BURST"); v && !v->empty()) {
    if (!absl::SimpleAtoi(*v, &o.kube_client_burst)) {
      return Bad("KUBE_CLIENT_BURST", *v, "not an integer");
    }
  }
  for (auto [name, out] : {std::pair{"METRICS_PORT", &o.metrics_port},
                           std::pair{"HEALTH_PROBE_PORT", &o.health_probe_port}}) {
    if (auto v = getenv(name); v && !v->empty()) {
      if (!absl::SimpleAtoi(*v, out) || *out < -1 || *out > 65535) {
        return Bad(name, *v, "not a port number (-1 disables the endpoint)");
      }
    }
  }
  if (auto v = getenv("FEATURE_GATES"); v && !v->empty()) {
    if (auto s = ParseFeatureGates(*v, o.feature_gates); !s.ok()) return s;
  }
  if (auto v = getenv("AWS_FEATURE_GATES"); v && !v->empty()) {
    if (auto s = ParseFeatureGates(*v, o.aws_feature_gates, "AWS_FEATURE_GATES"); !s.ok()) {
      return s;
    }
  }
  auto integer = [&](const char* name, auto& out) -> absl::Status {
    auto v = getenv(name);
    if (!v || v->empty()) return absl::OkStatus();
    if (!absl::SimpleAtoi(*v, &out)) return Bad(name, *v, "not an integer");
    return absl::OkStatus();
  };
  if (auto s = integer("RESERVED_ENIS", o.reserved_enis); !s.ok()) return s;
  if (auto s = integer("MEMORY_LIMIT", o.memory_limit); !s.ok()) return s;
  if (auto s = integer("CPU_REQUESTS", o.cpu_requests); !s.ok()) return s;
  if (auto v = getenv("VM_MEMORY_OVERHEAD_PERCENT"); v && !v->empty()) {
    if (!absl::SimpleAtod(*v, &o.vm_memory_overhead_percent) ||
        !std::isfinite(o.vm_memory_overhead_percent)) {
      return Bad("VM_MEMORY_OVERHEAD_PERCENT", *v, "not a number (a fraction: 0.075 is 7.5%)");
    }
  }
  for (auto [name, out] :
       {std::pair{"ISOLATED_VPC", &o.isolated_vpc},
        std::pair{"EKS_CONTROL_PLANE", &o.eks_control_plane},
        std::pair{"DOVETAIL_INSTANCE_TYPE_METRICS", &o.instance_type_metrics},
        std::pair{"DOVETAIL_DISRUPTION_EXPLANATIONS", &o.disruption_explanations},
        std::pair{"DISABLE_DRY_RUN", &o.disable_dry_run},
        std::pair{"IGNORE_DRA_REQUESTS", &o.ignore_dra_requests},
        std::pair{"DISABLE_CLUSTER_STATE_OBSERVABILITY", &o.disable_cluster_state_observability},
        std::pair{"DISABLE_CONTROLLER_WARMUP", &o.disable_controller_warmup},
        std::pair{"ENABLE_PROFILING", &o.enable_profiling},
        std::pair{"ENABLE_ZONAL_SHIFT", &o.enable_zonal_shift}}) {
    if (auto s = boolean(name, *out); !s.ok()) return s;
  }
  for (auto [name, out] :
       {std::pair{"AMI_REFRESH_INTERVAL", &o.ami_refresh_interval},
        std::pair{"SUBNET_REFRESH_INTERVAL", &o.subnet_refresh_interval},
        std::pair{"SECURITY_GROUP_REFRESH_INTERVAL", &o.security_group_refresh_interval}}) {
    if (auto s = duration(name, *out); !s.ok()) return s;
  }
  for (auto [name, out] : {std::pair{"LOG_OUTPUT_PATHS", &o.log_output_paths},
                           std::pair{"LOG_ERROR_OUTPUT_PATHS", &o.log_error_output_paths}}) {
    auto v = getenv(name);
    if (!v || v->empty()) continue;
    out->clear();
    for (absl::string_view path : absl::StrSplit(*v, ',', absl::SkipWhitespace())) {
      out->emplace_back(absl::StripAsciiWhitespace(path));
    }
    if (out->empty()) return Bad(name, *v, "no path");
  }
  return o;
}

absl::StatusOr<Options> OptionsFromEnvironment() {
  return OptionsFromEnvironment([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

absl::Status Validate(const Options& o) {
  if (o.cloud_provider != "kwok" && o.cloud_provider != "aws") {
    return Bad("DOVETAIL_CLOUD_PROVIDER", o.cloud_provider,
               "unknown cloud provider (this build supports: kwok, aws)");
  }
  if (o.cloud_provider == "aws" && o.cluster_name.empty()) {
    return absl::InvalidArgumentError("CLUSTER_NAME is required for the aws cloud provider");
  }
  if (o.preference_policy != "Respect" && o.preference_policy != "Ignore") {
    return Bad("PREFERENCE_POLICY", o.preference_policy, "must be Respect or Ignore");
  }
  if (o.min_values_policy != "Strict" && o.min_values_policy != "BestEffort") {
    return Bad("MIN_VALUES_POLICY", o.min_values_policy, "must be Strict or BestEffort");
  }
  if (o.log_level != "debug" && o.log_level != "info" && o.log_level != "error") {
    return Bad("LOG_LEVEL", o.log_level, "must be debug, info or error");
  }
  if (o.batch_idle_duration <= absl::ZeroDuration() ||
      o.batch_max_duration < o.batch_idle_duration) {
    return absl::InvalidArgumentError(
        absl::StrCat("BATCH_IDLE_DURATION (", absl::FormatDuration(o.batch_idle_duration),
                     ") must be positive and at most BATCH_MAX_DURATION (",
                     absl::FormatDuration(o.batch_max_duration), ")"));
  }
  if (in6_addr address; inet_pton(AF_INET, o.metrics_bind_address.c_str(), &address) != 1 &&
                        inet_pton(AF_INET6, o.metrics_bind_address.c_str(), &address) != 1) {
    return Bad("DOVETAIL_METRICS_BIND_ADDRESS", o.metrics_bind_address,
               "not an IPv4 or IPv6 address (0.0.0.0: every IPv4 interface)");
  }
  if (o.kube_client_burst < 1) {
    return Bad("KUBE_CLIENT_BURST", absl::StrCat(o.kube_client_burst), "must be at least 1");
  }
  // Upstream's ranges.
  if (o.reserved_enis < 0) {
    return Bad("RESERVED_ENIS", absl::StrCat(o.reserved_enis), "cannot be negative");
  }
  if (o.vm_memory_overhead_percent < 0 || o.vm_memory_overhead_percent >= 1) {
    return Bad("VM_MEMORY_OVERHEAD_PERCENT", absl::StrCat(o.vm_memory_overhead_percent),
               "must be a fraction in [0, 1) (0.075 is 7.5%)");
  }
  for (auto [name, d] :
       {std::pair{"AMI_REFRESH_INTERVAL", o.ami_refresh_interval},
        std::pair{"SUBNET_REFRESH_INTERVAL", o.subnet_refresh_interval},
        std::pair{"SECURITY_GROUP_REFRESH_INTERVAL", o.security_group_refresh_interval}}) {
    if (d < absl::Minutes(1)) return Bad(name, absl::FormatDuration(d), "must be at least 1m");
  }
  // What Dovetail does not do is refused, not silently ignored.
  if (o.enable_zonal_shift) {
    return Bad("ENABLE_ZONAL_SHIFT", "true",
               "Dovetail does not act on ARC zonal shifts; unset it or set false");
  }
  if (o.enable_profiling) {
    return Bad("ENABLE_PROFILING", "true",
               "Dovetail serves no Go profiler (pprof); unset it or set false");
  }
  if (!o.ignore_dra_requests) {
    return Bad("IGNORE_DRA_REQUESTS", "false",
               "Dovetail does not allocate Dynamic Resource Allocation devices; pods with "
               "resource claims get no nodes. Unset it or set true");
  }
  for (const char* gate : {"NodeRepair", "NodeOverlay", "StaticCapacity", "CapacityBuffer",
                           "PodDeletionCostManagement"}) {
    if (auto it = o.feature_gates.find(gate); it != o.feature_gates.end() && it->second) {
      return Bad("FEATURE_GATES", absl::StrCat(gate, "=true"),
                 "not implemented by Dovetail (docs/parity.md); set it to false");
    }
  }
  if (auto it = o.aws_feature_gates.find("NodeClassCEL");
      it != o.aws_feature_gates.end() && it->second) {
    return Bad("AWS_FEATURE_GATES", "NodeClassCEL=true",
               "not implemented by Dovetail; set it to false");
  }
  return absl::OkStatus();
}

std::vector<std::string> InertSettingNotes(const Options& o) {
  std::vector<std::string> notes;
  if (!o.disable_controller_warmup) {
    notes.push_back(
        "DISABLE_CONTROLLER_WARMUP=false: Dovetail always syncs its informers before it leads");
  }
  if (o.memory_limit > 0) {
    notes.push_back(absl::StrCat("MEMORY_LIMIT=", o.memory_limit,
                                 ": no effect (it sizes Go's garbage collector upstream; Dovetail "
                                 "has no garbage-collected heap)"));
  }
  if (o.cpu_requests != 1000) {
    notes.push_back(absl::StrCat("CPU_REQUESTS=", o.cpu_requests,
                                 ": no effect (it scales goroutine counts upstream; Dovetail's "
                                 "worker threads are fixed)"));
  }
  if (o.disable_dry_run) {
    notes.push_back("DISABLE_DRY_RUN=true: Dovetail makes no dry-run calls either way");
  }
  return notes;
}

}  // namespace dovetail::op
