#include "dovetail/operator/options.h"

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

absl::Status ParseFeatureGates(const std::string& text, std::map<std::string, bool>& gates) {
  for (absl::string_view piece : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::string entry(piece);
    absl::StripAsciiWhitespace(&entry);
    std::vector<std::string> kv = absl::StrSplit(absl::string_view(entry), absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty()) {
      return Bad("FEATURE_GATES", text, absl::StrCat("entry \"", entry, "\" is not Name=bool"));
    }
    auto value = ParseBool("FEATURE_GATES", kv[1]);
    if (!value.ok()) {
      return Bad("FEATURE_GATES", text, absl::StrCat("entry \"", entry, "\" is not Name=bool"));
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
  if (o.kube_client_burst < 1) {
    return Bad("KUBE_CLIENT_BURST", absl::StrCat(o.kube_client_burst), "must be at least 1");
  }
  return absl::OkStatus();
}

}  // namespace dovetail::op
