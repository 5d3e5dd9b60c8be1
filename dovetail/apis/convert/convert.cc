#include "dovetail/apis/convert/convert.h"

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dovetail::apis::convert {
namespace {

using Json = nlohmann::json;

constexpr char kNodeClassGroup[] = "karpenter.k8s.aws";

struct Context {
  std::string object;  // "Kind/name"
  ConvertResult* result;
  size_t input = 0;  // index of the input object
  void Change(const std::string& line) { result->changes.push_back(object + ": " + line); }
  void Error(const std::string& path, const std::string& message) {
    result->errors.push_back(object + ": " + path + ": " + message);
    result->error_inputs.push_back(input);
  }
};

std::string Name(const Json& obj) {
  if (obj.contains("metadata") && obj["metadata"].is_object() && obj["metadata"].contains("name") &&
      obj["metadata"]["name"].is_string()) {
    return obj["metadata"]["name"].get<std::string>();
  }
  return "";
}

// obj[key] when obj is an object and the value a string; "" otherwise (malformed input never
// throws).
std::string Field(const Json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string Str(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Renames the old well-known label and annotation keys in `map` (at `path`).
void RenameKeys(Json& map, const std::string& path, Context& ctx) {
  if (!map.is_object()) return;
  static const std::vector<std::pair<std::string, std::string>> kRenames = {
      {"karpenter.sh/provisioner-name", "karpenter.sh/nodepool"},
      {"karpenter.sh/provisioner-hash", "karpenter.sh/nodepool-hash"},
      {"karpenter.k8s.aws/nodetemplate-hash", "karpenter.k8s.aws/ec2nodeclass-hash"},
      {"karpenter.sh/do-not-evict", "karpenter.sh/do-not-disrupt"},
      {"karpenter.sh/do-not-consolidate", "karpenter.sh/do-not-disrupt"},
  };
  for (const auto& [from, to] : kRenames) {
    if (!map.contains(from)) continue;
    Json value = map[from];
    map.erase(from);
    map[to] = value;
    ctx.Change(path + "[\"" + from + "\"] -> " + path + "[\"" + to + "\"]");
  }
  if (map.contains("karpenter.k8s.aws/instance-pods")) {
    map.erase("karpenter.k8s.aws/instance-pods");
    ctx.Change(path + "[\"karpenter.k8s.aws/instance-pods\"] -> removed (no longer a label)");
  }
}

void RenameMetadata(Json& obj, const std::string& prefix, Context& ctx) {
  if (!obj.contains("metadata") || !obj["metadata"].is_object()) return;
  Json& meta = obj["metadata"];
  if (meta.contains("labels")) RenameKeys(meta["labels"], prefix + "metadata.labels", ctx);
  if (meta.contains("annotations")) {
    RenameKeys(meta["annotations"], prefix + "metadata.annotations", ctx);
  }
}

// "30" seconds -> "30s"; negative or non-integer is an error.
bool SecondsToDuration(const Json& value, const std::string& path, Context& ctx, std::string* out) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0) {
    ctx.Error(path, "must be a non-negative integer number of seconds, got " + value.dump());
    return false;
  }
  *out = std::to_string(value.get<int64_t>()) + "s";
  return true;
}

bool HasRequirement(const Json& requirements, const std::vector<std::string>& keys) {
  if (!requirements.is_array()) return false;
  for (const Json& r : requirements) {
    if (!r.is_object() || !r.contains("key")) continue;
    for (const std::string& k : keys) {
      if (r["key"] == k) return true;
    }
  }
  return false;
}

// A v1 nodeClassRef from an old providerRef / nodeClassRef / machineTemplateRef.
bool ConvertRef(const Json& ref, const std::string& path, Context& ctx, Json* out) {
  if (!ref.is_object() || !ref.contains("name") || !ref["name"].is_string()) {
    ctx.Error(path, "must be an object with a name");
    return false;
  }
  std::string kind = ref.contains("kind") ? Field(ref, "kind") : "EC2NodeClass";
  if (kind == "AWSNodeTemplate") kind = "EC2NodeClass";
  std::string group = kNodeClassGroup;
  if (ref.contains("group") && ref["group"].is_string()) group = ref["group"].get<std::string>();
  if (ref.contains("apiVersion") && ref["apiVersion"].is_string()) {
    const std::string api = ref["apiVersion"].get<std::string>();
    group = api.substr(0, api.find('/'));
  }
  if (kind != "EC2NodeClass" || group != kNodeClassGroup) {
    ctx.Error(path, "refers to " + group + " " + kind +
                        "; only karpenter.k8s.aws EC2NodeClass (or AWSNodeTemplate) is converted");
    return false;
  }
  *out = Json{{"group", group}, {"kind", "EC2NodeClass"}, {"name", ref["name"]}};
  return true;
}

struct PoolKubelet {
  size_t index;  // into the output objects
  std::string node_class;
  Json kubelet;  // null when the pool has none
};

// What a karpenter-global-settings ConfigMap says about nodes (the rest becomes Helm values).
struct GlobalSettings {
  std::string default_instance_profile;  // aws.defaultInstanceProfile
  Json tags = Json::object();            // aws.tags
  bool eni_limited_pod_density = true;   // aws.enableENILimitedPodDensity
  bool drift_enabled = true;             // featureGates.driftEnabled
};

struct State {
  ConvertResult* result;
  std::vector<PoolKubelet> pool_kubelets;
  GlobalSettings globals;
};

// ---- karpenter-global-settings -----------------------------------------------------------------

bool IsGlobalSettings(const Json& obj) {
  return Field(obj, "apiVersion") == "v1" && Field(obj, "kind") == "ConfigMap" &&
         Name(obj) == "karpenter-global-settings";
}

// A ConfigMap value ("true"/"false"); anything else is an error at `path`.
bool ParseBool(const Json& v, const std::string& path, Context& ctx, bool* out) {
  if (v.is_boolean()) {
    *out = v.get<bool>();
    return true;
  }
  if (v.is_string() && (v == "true" || v == "false")) {
    *out = v == "true";
    return true;
  }
  ctx.Error(path, "must be \"true\" or \"false\", got " + v.dump());
  return false;
}

// The settings of the ConfigMap as Helm values of charts/dovetail (upstream's `settings.*`
// names); what concerns nodes goes into `globals`, to be written into the pools and classes.
Json ConvertGlobalSettings(const Json& in, Context& ctx, GlobalSettings& globals) {
  Json settings = Json::object();
  const Json data = in.value("data", Json::object());
  if (!data.is_object()) {
    ctx.Error("data", "must be a map of strings");
    return Json{{"settings", settings}};
  }
  // Keys that carry over to a Helm value unchanged (strings) or as a boolean / number.
  static const std::map<std::string, std::string> kStrings = {
      {"batchMaxDuration", "batchMaxDuration"},
      {"batchIdleDuration", "batchIdleDuration"},
      {"aws.clusterName", "clusterName"},
      {"aws.clusterEndpoint", "clusterEndpoint"},
      {"aws.clusterCABundle", "clusterCABundle"},
      {"aws.interruptionQueueName", "interruptionQueue"},
      {"aws.reservedENIs", "reservedENIs"},
  };
  for (auto it = data.begin(); it != data.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    const std::string path = "data[\"" + key + "\"]";
    if (auto s = kStrings.find(key); s != kStrings.end()) {
      settings[s->second] = v.is_string() ? v.get<std::string>() : v.dump();
      ctx.Change(path + " -> Helm value settings." + s->second + ": " + Str(v));
    } else if (key == "aws.isolatedVPC") {
      bool b = false;
      if (ParseBool(v, path, ctx, &b)) {
        settings["isolatedVPC"] = b;
        ctx.Change(path + " -> Helm value settings.isolatedVPC: " + (b ? "true" : "false"));
      }
    } else if (key == "aws.vmMemoryOverheadPercent") {
      try {
        size_t used = 0;
        const std::string text = Str(v);
        const double d = std::stod(text, &used);
        if (used != text.size() || d < 0) throw std::invalid_argument(text);
        settings["vmMemoryOverheadPercent"] = d;
        ctx.Change(path + " -> Helm value settings.vmMemoryOverheadPercent: " + text);
      } catch (const std::exception&) {
        ctx.Error(path, "must be a non-negative number, got " + v.dump());
      }
    } else if (key == "featureGates.driftEnabled") {
      bool b = true;
      if (ParseBool(v, path, ctx, &b)) {
        globals.drift_enabled = b;
        ctx.Change(path + (b ? " -> removed (drift is always on in v1)"
                             : " -> a budget {nodes: \"0\", reasons: [Drifted]} on every "
                               "converted NodePool (drift is always on in v1)"));
      }
    } else if (key == "aws.defaultInstanceProfile") {
      globals.default_instance_profile = Str(v);
      ctx.Change(path +
                 " -> spec.instanceProfile of converted AWSNodeTemplates that set neither "
                 "instanceProfile nor role");
    } else if (key == "aws.enablePodENI") {
      ctx.Change(path + " -> removed (v1 always counts vpc.amazonaws.com/pod-eni)");
    } else if (key == "aws.enableENILimitedPodDensity") {
      bool b = true;
      if (ParseBool(v, path, ctx, &b)) {
        globals.eni_limited_pod_density = b;
        ctx.Change(path + (b ? " -> removed (ENI-limited max pods is the v1 default)"
                             : " -> spec.kubelet.maxPods: 110 on converted EC2NodeClasses"));
      }
    } else if (key == "aws.tags") {
      Json tags = v.is_string() ? Json::parse(v.get<std::string>(), nullptr, false) : v;
      bool ok = tags.is_object();
      for (auto t = ok ? tags.begin() : tags.end(); ok && t != tags.end(); ++t) {
        ok = t.value().is_string();
      }
      if (!ok) {
        ctx.Error(path, "must be a JSON object of string tags, got " + v.dump());
      } else {
        globals.tags = tags;
        ctx.Change(path + " -> spec.tags of converted EC2NodeClasses (their own tags win)");
      }
    } else {
      ctx.Error(path,
                "unknown or removed global setting; cannot convert (remove it, or set its "
                "v1 equivalent by hand)");
    }
  }
  if (!settings.empty()) {
    ctx.Change("ConfigMap -> removed (v1 reads settings from the environment: Helm settings.*)");
  }
  return Json{{"settings", settings}};
}

// Drift off in the global settings -> a budget that blocks drift on the pool.
void ApplyGlobalsToPool(Json& pool, Context& ctx, const GlobalSettings& globals) {
  if (globals.drift_enabled) return;
  Json& budgets = pool["spec"]["disruption"]["budgets"];
  if (!budgets.is_array()) {
    budgets = Json::array({Json{{"nodes", "10%"}}});
    ctx.Change("(default) -> spec.disruption.budgets[0]: {nodes: \"10%\"}");
  }
  budgets.push_back(Json{{"nodes", "0"}, {"reasons", {"Drifted"}}});
  ctx.Change("(global featureGates.driftEnabled: false) -> spec.disruption.budgets[" +
             std::to_string(budgets.size() - 1) + "]: {nodes: \"0\", reasons: [Drifted]}");
}

// The global aws.tags under the class's own tags.
void ApplyGlobalTags(Json& node_class, Context& ctx, const GlobalSettings& globals) {
  if (globals.tags.empty()) return;
  Json& tags = node_class["spec"]["tags"];
  if (!tags.is_object()) tags = Json::object();
  for (auto t = globals.tags.begin(); t != globals.tags.end(); ++t) {
    if (tags.contains(t.key())) continue;
    tags[t.key()] = t.value();
    ctx.Change("(global aws.tags) -> spec.tags[\"" + t.key() + "\"]: " + Str(t.value()));
  }
}

// ---- NodePool ---------------------------------------------------------------------------------

// A v1 NodePool as it is assembled from a v1alpha5 Provisioner's fields.
struct PoolParts {
  Json out;
  Json tmpl_meta = Json::object();
  Json tmpl_spec = Json::object();
  Json disruption = Json::object();
  Json kubelet;            // the kubeletConfiguration, for the EC2NodeClass
  std::string node_class;  // the providerRef's name
};

// spec.kubeletConfiguration without its containerRuntime (containerd only).
Json ConvertKubeletConfiguration(const Json& v, const std::string& path, Context& ctx) {
  Json kubelet = v;
  if (kubelet.is_object() && kubelet.contains("containerRuntime")) {
    if (kubelet["containerRuntime"] != "containerd") {
      ctx.Error(path + ".containerRuntime",
                "only containerd is supported in v1, got " + Str(kubelet["containerRuntime"]));
    }
    kubelet.erase("containerRuntime");
    ctx.Change(path + ".containerRuntime -> removed (containerd is the only runtime)");
  }
  ctx.Change(path + " -> EC2NodeClass.spec.kubelet");
  return kubelet;
}

// spec.limits.resources -> spec.limits; any other limits field is an error.
void ConvertLimits(const Json& v, const std::string& path, Context& ctx, Json& out) {
  if (v.is_object() && v.contains("resources")) {
    out["spec"]["limits"] = v["resources"];
    ctx.Change("spec.limits.resources -> spec.limits");
  }
  if (v.is_object()) {
    for (auto l = v.begin(); l != v.end(); ++l) {
      if (l.key() != "resources") ctx.Error(path + "." + l.key(), "unknown field");
    }
  }
}

// One field of a Provisioner's spec into `parts` (consolidation is read by
// ConvertConsolidation).
void ConvertProvisionerField(const std::string& key, const Json& v, Context& ctx,
                             PoolParts& parts) {
  const std::string path = "spec." + key;
  if (key == "labels" || key == "annotations") {
    parts.tmpl_meta[key] = v;
    RenameKeys(parts.tmpl_meta[key], "spec.template.metadata." + key, ctx);
    ctx.Change(path + " -> spec.template.metadata." + key);
  } else if (key == "requirements" || key == "taints" || key == "startupTaints") {
    parts.tmpl_spec[key] = v;
    ctx.Change(path + " -> spec.template.spec." + key);
  } else if (key == "kubeletConfiguration") {
    parts.kubelet = ConvertKubeletConfiguration(v, path, ctx);
  } else if (key == "providerRef") {
    Json ref;
    if (ConvertRef(v, path, ctx, &ref)) {
      parts.tmpl_spec["nodeClassRef"] = ref;
      parts.node_class = ref["name"].get<std::string>();
      ctx.Change(path + " -> spec.template.spec.nodeClassRef: " + ref.dump());
    }
  } else if (key == "provider") {
    ctx.Error(path, "inline provider is not supported; move it to an AWSNodeTemplate");
  } else if (key == "ttlSecondsAfterEmpty") {
    std::string d;
    if (SecondsToDuration(v, path, ctx, &d)) parts.disruption["consolidateAfter"] = d;
  } else if (key == "consolidation") {
    // handled by ConvertConsolidation
  } else if (key == "ttlSecondsUntilExpired") {
    std::string d;
    if (SecondsToDuration(v, path, ctx, &d)) {
      parts.tmpl_spec["expireAfter"] = d;
      ctx.Change(path + " -> spec.template.spec.expireAfter: " + d);
    }
  } else if (key == "limits") {
    ConvertLimits(v, path, ctx, parts.out);
  } else if (key == "weight") {
    parts.out["spec"]["weight"] = v;
  } else {
    ctx.Error(path, "unknown v1alpha5 Provisioner field; cannot convert");
  }
}

// spec.disruption from spec.consolidation and the consolidateAfter of ttlSecondsAfterEmpty
// already in `disruption`: WhenEmptyOrUnderutilized after 0s, WhenEmpty after the TTL, or
// WhenEmpty never.
void ConvertConsolidation(const Json& spec, Context& ctx, Json& disruption) {
  const bool consolidation = spec.contains("consolidation") && spec["consolidation"].is_object() &&
                             spec["consolidation"].value("enabled", false) == true;
  if (consolidation && spec.contains("ttlSecondsAfterEmpty")) {
    ctx.Error("spec.consolidation", "cannot be combined with spec.ttlSecondsAfterEmpty");
  }
  if (consolidation) {
    disruption["consolidationPolicy"] = "WhenEmptyOrUnderutilized";
    disruption["consolidateAfter"] = "0s";
    ctx.Change(
        "spec.consolidation.enabled: true -> spec.disruption.consolidationPolicy: "
        "WhenEmptyOrUnderutilized, consolidateAfter: 0s");
  } else if (disruption.contains("consolidateAfter")) {
    disruption["consolidationPolicy"] = "WhenEmpty";
    ctx.Change(
        "spec.ttlSecondsAfterEmpty -> spec.disruption.consolidationPolicy: WhenEmpty, "
        "consolidateAfter: " +
        disruption["consolidateAfter"].get<std::string>());
  } else {
    disruption["consolidationPolicy"] = "WhenEmpty";
    disruption["consolidateAfter"] = "Never";
    ctx.Change(
        "(no ttlSecondsAfterEmpty, no consolidation) -> spec.disruption.consolidationPolicy: "
        "WhenEmpty, consolidateAfter: Never");
  }
}

// The implicit v1alpha5 default requirements (AWS provider), written out where the template's
// requirements do not already constrain their keys.
void AddImplicitRequirements(Json& tmpl_spec, Context& ctx) {
  Json& reqs = tmpl_spec["requirements"];
  if (reqs.is_null()) reqs = Json::array();
  auto add = [&](const std::vector<std::string>& keys, Json req) {
    if (HasRequirement(reqs, keys)) return;
    ctx.Change("(implicit default) -> spec.template.spec.requirements: " + req.dump());
    reqs.push_back(std::move(req));
  };
  add({"karpenter.sh/capacity-type"},
      {{"key", "karpenter.sh/capacity-type"}, {"operator", "In"}, {"values", {"on-demand"}}});
  add({"kubernetes.io/os"},
      {{"key", "kubernetes.io/os"}, {"operator", "In"}, {"values", {"linux"}}});
  add({"kubernetes.io/arch"},
      {{"key", "kubernetes.io/arch"}, {"operator", "In"}, {"values", {"amd64"}}});
  add({"node.kubernetes.io/instance-type", "karpenter.k8s.aws/instance-family",
       "karpenter.k8s.aws/instance-category"},
      {{"key", "karpenter.k8s.aws/instance-category"},
       {"operator", "In"},
       {"values", {"c", "m", "r"}}});
  add({"node.kubernetes.io/instance-type", "karpenter.k8s.aws/instance-family",
       "karpenter.k8s.aws/instance-generation"},
      {{"key", "karpenter.k8s.aws/instance-generation"}, {"operator", "Gt"}, {"values", {"2"}}});
}

Json ConvertProvisioner(const Json& in, Context& ctx, State& state, size_t index) {
  PoolParts parts;
  parts.out = Json{{"apiVersion", "karpenter.sh/v1"}, {"kind", "NodePool"}};
  parts.out["metadata"] = in.value("metadata", Json::object());
  ctx.Change("apiVersion karpenter.sh/v1alpha5 Provisioner -> karpenter.sh/v1 NodePool");
  RenameMetadata(parts.out, "", ctx);
  const Json spec = in.value("spec", Json::object());
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    ConvertProvisionerField(it.key(), it.value(), ctx, parts);
  }
  ConvertConsolidation(spec, ctx, parts.disruption);
  if (!parts.tmpl_spec.contains("expireAfter")) {
    parts.tmpl_spec["expireAfter"] = "Never";
    ctx.Change("(no ttlSecondsUntilExpired) -> spec.template.spec.expireAfter: Never");
  }
  if (!parts.tmpl_spec.contains("nodeClassRef")) {
    if (!spec.contains("providerRef")) {
      ctx.Error("spec.providerRef", "required: a v1 NodePool needs a nodeClassRef");
    }
  }
  AddImplicitRequirements(parts.tmpl_spec, ctx);
  Json& out = parts.out;
  if (!parts.tmpl_meta.empty()) out["spec"]["template"]["metadata"] = parts.tmpl_meta;
  out["spec"]["template"]["spec"] = parts.tmpl_spec;
  out["spec"]["disruption"] = parts.disruption;
  if (!parts.node_class.empty()) {
    state.pool_kubelets.push_back({index, parts.node_class, parts.kubelet});
  }
  return parts.out;
}

Json ConvertNodePoolV1beta1(const Json& in, Context& ctx, State& state, size_t index) {
  Json out = in;
  out["apiVersion"] = "karpenter.sh/v1";
  ctx.Change("apiVersion karpenter.sh/v1beta1 -> karpenter.sh/v1");
  RenameMetadata(out, "", ctx);
  Json& spec = out["spec"];
  if (!spec.is_object()) spec = Json::object();
  Json& tmpl = spec["template"];
  if (!tmpl.is_object()) tmpl = Json::object();
  RenameMetadata(tmpl, "spec.template.", ctx);
  Json& tspec = tmpl["spec"];
  if (!tspec.is_object()) tspec = Json::object();
  Json& disruption = spec["disruption"];
  if (!disruption.is_object()) disruption = Json::object();
  if (disruption.contains("expireAfter")) {
    tspec["expireAfter"] = disruption["expireAfter"];
    disruption.erase("expireAfter");
    ctx.Change("spec.disruption.expireAfter -> spec.template.spec.expireAfter: " +
               Str(tspec["expireAfter"]));
  } else {
    tspec["expireAfter"] = "720h";
    ctx.Change("(default) -> spec.template.spec.expireAfter: 720h");
  }
  std::string policy = disruption.value("consolidationPolicy", std::string("WhenUnderutilized"));
  if (policy == "WhenUnderutilized") {
    disruption["consolidationPolicy"] = "WhenEmptyOrUnderutilized";
    ctx.Change(
        "spec.disruption.consolidationPolicy: WhenUnderutilized -> WhenEmptyOrUnderutilized");
  }
  if (!disruption.contains("consolidateAfter")) {
    disruption["consolidateAfter"] = "0s";
    ctx.Change("(default) -> spec.disruption.consolidateAfter: 0s");
  }
  Json kubelet;
  if (tspec.contains("kubelet")) {
    kubelet = tspec["kubelet"];
    tspec.erase("kubelet");
    ctx.Change("spec.template.spec.kubelet -> EC2NodeClass.spec.kubelet");
  }
  if (tspec.contains("nodeClassRef")) {
    Json ref;
    if (ConvertRef(tspec["nodeClassRef"], "spec.template.spec.nodeClassRef", ctx, &ref)) {
      if (ref != tspec["nodeClassRef"]) {
        ctx.Change("spec.template.spec.nodeClassRef -> " + ref.dump());
      }
      tspec["nodeClassRef"] = ref;
      state.pool_kubelets.push_back({index, ref["name"].get<std::string>(), kubelet});
    }
  } else {
    ctx.Error("spec.template.spec.nodeClassRef", "required in v1");
  }
  return out;
}

// ---- EC2NodeClass -----------------------------------------------------------------------------

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string part = s.substr(start, end - start);
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    while (!part.empty() && part.back() == ' ') part.pop_back();
    if (!part.empty()) out.push_back(part);
    start = end + 1;
  }
  return out;
}

// A v1alpha1 selector map -> selector terms. `name_key`/`owner_key` are the AMI-only specials.
Json SelectorToTerms(const Json& selector, const std::string& path, bool ami, Context& ctx) {
  Json terms = Json::array();
  Json tags = Json::object();
  std::vector<std::string> names, owners;
  if (!selector.is_object()) {
    ctx.Error(path, "must be a map");
    return terms;
  }
  for (auto it = selector.begin(); it != selector.end(); ++it) {
    if (!it.value().is_string()) {
      ctx.Error(path + "[\"" + it.key() + "\"]", "must be a string");
      continue;
    }
    const std::string v = it.value().get<std::string>();
    if (it.key() == "aws-ids" || it.key() == "aws::ids") {
      for (const std::string& id : SplitComma(v)) terms.push_back({{"id", id}});
    } else if (ami && it.key() == "aws::name") {
      names.push_back(v);
    } else if (ami && it.key() == "aws::owners") {
      owners = SplitComma(v);
    } else if (ami && it.key().rfind("aws::", 0) == 0) {
      ctx.Error(path + "[\"" + it.key() + "\"]", "unknown selector key");
    } else {
      tags[it.key()] = v;
    }
  }
  if (!terms.empty() && (!tags.empty() || !names.empty() || !owners.empty())) {
    ctx.Error(path, "ids cannot be combined with other selectors in one v1 term");
    return terms;
  }
  if (!names.empty() || !owners.empty()) {
    if (owners.empty()) owners.push_back("");
    for (const std::string& owner : owners) {
      Json term = Json::object();
      if (!names.empty()) term["name"] = names.front();
      if (!owner.empty()) term["owner"] = owner;
      if (!tags.empty()) term["tags"] = tags;
      terms.push_back(term);
    }
  } else if (!tags.empty()) {
    terms.push_back({{"tags", tags}});
  }
  return terms;
}

bool AliasFor(const std::string& family, std::string* alias) {
  static const std::map<std::string, std::string> kAliases = {
      {"AL2", "al2"},
      {"AL2023", "al2023"},
      {"Bottlerocket", "bottlerocket"},
      {"Windows2019", "windows2019"},
      {"Windows2022", "windows2022"},
  };
  auto it = kAliases.find(family);
  if (it == kAliases.end()) return false;
  *alias = it->second + "@latest";
  return true;
}

// amiSelectorTerms from amiFamily when there are none; the old hop limit default written out.
void CommonNodeClassDefaults(Json& spec, Context& ctx) {
  const std::string family = spec.value("amiFamily", std::string("AL2"));
  if (!spec.contains("amiFamily")) {
    spec["amiFamily"] = family;
    ctx.Change("(default) -> spec.amiFamily: AL2");
  }
  if (family == "Ubuntu") {
    ctx.Error("spec.amiFamily",
              "Ubuntu was removed in v1; use AL2023 or a Custom family with "
              "amiSelectorTerms");
  }
  if (!spec.contains("amiSelectorTerms") || spec["amiSelectorTerms"].empty()) {
    std::string alias;
    if (AliasFor(family, &alias)) {
      spec["amiSelectorTerms"] = Json::array({{{"alias", alias}}});
      spec.erase("amiFamily");
      ctx.Change("spec.amiFamily: " + family + " -> spec.amiSelectorTerms: [{alias: " + alias +
                 "}]");
    } else if (family != "Ubuntu") {
      ctx.Error("spec.amiSelectorTerms", "required for amiFamily " + family);
    }
  }
  Json& md = spec["metadataOptions"];
  if (!md.is_object()) md = Json::object();
  const std::vector<std::pair<std::string, Json>> kOld = {{"httpEndpoint", "enabled"},
                                                          {"httpProtocolIPv6", "disabled"},
                                                          {"httpPutResponseHopLimit", 2},
                                                          {"httpTokens", "required"}};
  for (const auto& [k, v] : kOld) {
    if (md.contains(k)) continue;
    md[k] = v;
    ctx.Change("(old default) -> spec.metadataOptions." + k + ": " + Str(v));
  }
}

Json ConvertAWSNodeTemplate(const Json& in, Context& ctx, const GlobalSettings& globals) {
  Json out = {{"apiVersion", "karpenter.k8s.aws/v1"}, {"kind", "EC2NodeClass"}};
  out["metadata"] = in.value("metadata", Json::object());
  ctx.Change(
      "apiVersion karpenter.k8s.aws/v1alpha1 AWSNodeTemplate -> karpenter.k8s.aws/v1 "
      "EC2NodeClass");
  RenameMetadata(out, "", ctx);
  const Json spec = in.value("spec", Json::object());
  Json o = Json::object();
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    const std::string& key = it.key();
    const std::string path = "spec." + key;
    if (key == "subnetSelector" || key == "securityGroupSelector" || key == "amiSelector") {
      const std::string to = key + "Terms";
      o[to] = SelectorToTerms(it.value(), path, key == "amiSelector", ctx);
      ctx.Change(path + " -> spec." + to + ": " + o[to].dump());
    } else if (key == "instanceProfile" || key == "role" || key == "amiFamily" ||
               key == "userData" || key == "tags" || key == "metadataOptions" ||
               key == "blockDeviceMappings" || key == "detailedMonitoring" || key == "context" ||
               key == "instanceStorePolicy" || key == "associatePublicIPAddress") {
      o[key] = it.value();
    } else if (key == "launchTemplate" || key == "launchTemplateName") {
      ctx.Error(path,
                "unmanaged launch templates are not supported in v1; express the template "
                "with EC2NodeClass fields");
    } else {
      ctx.Error(path, "unknown v1alpha1 AWSNodeTemplate field; cannot convert");
    }
  }
  for (const char* required : {"subnetSelector", "securityGroupSelector"}) {
    if (!spec.contains(required)) ctx.Error(std::string("spec.") + required, "required");
  }
  if (!o.contains("instanceProfile") && !o.contains("role") &&
      !globals.default_instance_profile.empty()) {
    o["instanceProfile"] = globals.default_instance_profile;
    ctx.Change("(global aws.defaultInstanceProfile) -> spec.instanceProfile: " +
               globals.default_instance_profile);
  }
  if (!o.contains("instanceProfile") && !o.contains("role")) {
    ctx.Error("spec.instanceProfile",
              "absent: v1alpha1 fell back to the global aws.defaultInstanceProfile setting, which "
              "v1 does not have; set spec.instanceProfile or spec.role");
  }
  CommonNodeClassDefaults(o, ctx);
  out["spec"] = o;
  return out;
}

Json ConvertEC2NodeClassV1beta1(const Json& in, Context& ctx) {
  Json out = in;
  out["apiVersion"] = "karpenter.k8s.aws/v1";
  ctx.Change("apiVersion karpenter.k8s.aws/v1beta1 -> karpenter.k8s.aws/v1");
  RenameMetadata(out, "", ctx);
  if (!out["spec"].is_object()) out["spec"] = Json::object();
  CommonNodeClassDefaults(out["spec"], ctx);
  return out;
}

// ---- NodeClaim --------------------------------------------------------------------------------

Json ConvertMachine(const Json& in, Context& ctx) {
  Json out = in;
  out["apiVersion"] = "karpenter.sh/v1";
  out["kind"] = "NodeClaim";
  ctx.Change("apiVersion karpenter.sh/v1alpha5 Machine -> karpenter.sh/v1 NodeClaim");
  RenameMetadata(out, "", ctx);
  Json& spec = out["spec"];
  if (!spec.is_object()) spec = Json::object();
  if (spec.contains("machineTemplateRef")) {
    Json ref;
    if (ConvertRef(spec["machineTemplateRef"], "spec.machineTemplateRef", ctx, &ref)) {
      spec["nodeClassRef"] = ref;
      ctx.Change("spec.machineTemplateRef -> spec.nodeClassRef: " + ref.dump());
    }
    spec.erase("machineTemplateRef");
  } else {
    ctx.Error("spec.machineTemplateRef", "required: a v1 NodeClaim needs a nodeClassRef");
  }
  if (spec.contains("kubelet")) {
    ctx.Error("spec.kubelet", "a v1 NodeClaim has no kubelet; set it on the EC2NodeClass");
  }
  if (!spec.contains("expireAfter")) {
    spec["expireAfter"] = "Never";
    ctx.Change("(Machines did not expire on their own) -> spec.expireAfter: Never");
  }
  if (out.contains("status")) {
    out.erase("status");
    ctx.Change("status -> removed (the controller recomputes it)");
  }
  return out;
}

uint32_t Fnv32(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

// Moves pool kubelets onto their node classes, splitting classes where pools disagree.
// `objects[i]` came from input i; `origins` receives the input index of each object after the
// split copies are inserted.
void PlaceKubelets(State& state, std::vector<Json>& objects, std::vector<std::string>& objs,
                   std::vector<size_t>* origins) {
  std::map<std::string, size_t> classes;  // name -> index of the v1 EC2NodeClass
  for (size_t i = 0; i < objects.size(); ++i) {
    if (Field(objects[i], "kind") == "EC2NodeClass" &&
        Field(objects[i], "apiVersion") == "karpenter.k8s.aws/v1") {
      classes[Name(objects[i])] = i;
    }
  }
  std::map<std::string, std::vector<const PoolKubelet*>> by_class;
  for (const PoolKubelet& p : state.pool_kubelets) by_class[p.node_class].push_back(&p);
  std::vector<std::pair<size_t, Json>> inserts;  // after index
  for (const auto& [name, pools] : by_class) {
    std::set<std::string> distinct;
    bool any_kubelet = false;
    for (const PoolKubelet* p : pools) {
      distinct.insert(p->kubelet.dump());
      any_kubelet |= !p->kubelet.is_null();
    }
    if (!any_kubelet) continue;
    auto cls = classes.find(name);
    if (cls == classes.end()) {
      for (const PoolKubelet* p : pools) {
        if (p->kubelet.is_null()) continue;
        state.result->errors.push_back(
            objs[p->index] + ": kubelet: EC2NodeClass/" + name +
            " is not in the input; the kubelet block moves to it in v1, so convert them together");
        state.result->error_inputs.push_back(p->index);
      }
      continue;
    }
    Json& node_class = objects[cls->second];
    if (node_class["spec"].contains("kubelet")) {
      state.result->errors.push_back("EC2NodeClass/" + name +
                                     ": spec.kubelet: already set; cannot also take a pool's "
                                     "kubelet block");
      state.result->error_inputs.push_back(cls->second);
      continue;
    }
    if (distinct.size() == 1) {
      node_class["spec"]["kubelet"] = pools.front()->kubelet;
      state.result->changes.push_back("EC2NodeClass/" + name + ": (from " +
                                      objs[pools.front()->index] + ") -> spec.kubelet");
      continue;
    }
    for (const PoolKubelet* p : pools) {
      if (p->kubelet.is_null()) continue;  // keeps the original class, without kubelet
      char suffix[16];
      std::snprintf(suffix, sizeof(suffix), "%08x", Fnv32(p->kubelet.dump()));
      const std::string copy_name = name + "-kubelet-" + suffix;
      bool exists = false;
      for (const auto& [at, obj] : inserts) exists |= Name(obj) == copy_name;
      if (!exists) {
        Json copy = node_class;
        copy["metadata"]["name"] = copy_name;
        copy["spec"]["kubelet"] = p->kubelet;
        inserts.emplace_back(cls->second, copy);
        state.result->changes.push_back("EC2NodeClass/" + name + ": split -> EC2NodeClass/" +
                                        copy_name + " with the kubelet of " + objs[p->index]);
      }
      objects[p->index]["spec"]["template"]["spec"]["nodeClassRef"]["name"] = copy_name;
      state.result->changes.push_back(objs[p->index] +
                                      ": spec.template.spec.nodeClassRef.name -> " + copy_name);
    }
  }
  // Insert copies right after their origin, keeping a stable order.
  std::vector<Json> merged;
  origins->clear();
  for (size_t i = 0; i < objects.size(); ++i) {
    merged.push_back(objects[i]);
    origins->push_back(i);
    for (const auto& [at, obj] : inserts) {
      if (at == i) {
        merged.push_back(obj);
        origins->push_back(i);
      }
    }
  }
  objects = std::move(merged);
}

void EmitYaml(const Json& v, int indent, std::string& out);

// A string that YAML reads back as the same string without quotes (no type-looking words, no
// leading digit or indicator, no characters with meaning in plain scalars).
bool IsPlain(const std::string& s) {
  if (s.empty()) return false;
  const char c0 = s.front();
  if (!(std::isalpha(static_cast<unsigned char>(c0)) || c0 == '_' || c0 == '/')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
          c == '-' || c == '@' || c == '*')) {
      return false;
    }
  }
  std::string lower = s;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::set<std::string> kReserved = {"y",   "n",    "yes",   "no",  "on",
                                                  "off", "true", "false", "null"};
  return !kReserved.contains(lower);
}

// A quoted scalar is a JSON string (YAML's double-quoted style reads JSON escapes). Bytes that are
// not UTF-8 (a manifest file may hold any) become U+FFFD instead of throwing out of the dump.
std::string EmitString(const std::string& s) {
  return IsPlain(s) ? s : Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

void EmitScalar(const Json& v, std::string& out) {
  out += v.is_string() ? EmitString(v.get<std::string>()) : v.dump();
}

void EmitYaml(const Json& v, int indent, std::string& out) {
  const std::string pad(indent, ' ');
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      out += pad + EmitString(it.key()) + ":";
      const Json& c = it.value();
      if ((c.is_object() || c.is_array()) && !c.empty()) {
        out += "\n";
        EmitYaml(c, indent + 2, out);
      } else {
        out += " ";
        EmitScalar(c, out);
        out += "\n";
      }
    }
  } else if (v.is_array()) {
    for (const Json& c : v) {
      if ((c.is_object() || c.is_array()) && !c.empty()) {
        std::string inner;
        EmitYaml(c, indent + 2, inner);
        // "- " replaces the first two spaces of the first line.
        out += pad + "- " + inner.substr(indent + 2);
      } else {
        out += pad + "- ";
        EmitScalar(c, out);
        out += "\n";
      }
    }
  }
}

}  // namespace

bool NeedsConversion(const nlohmann::json& object) {
  if (!object.is_object()) return false;
  if (IsGlobalSettings(object)) return true;
  const std::string api = Field(object, "apiVersion");
  return (api.rfind("karpenter.sh/", 0) == 0 || api.rfind("karpenter.k8s.aws/", 0) == 0) &&
         api != "karpenter.sh/v1" && api != "karpenter.k8s.aws/v1";
}

namespace {

// Converts input object `in` (of `api` and `kind`), appending its v1 form to `out`.
void ConvertOne(const Json& in, const std::string& api, const std::string& kind, bool settings,
                Context& ctx, State& state, std::vector<Json>& out, std::vector<std::string>& names,
                char* old_class) {
  if (settings) {       // NOLINT(bugprone-branch-clone)
    out.push_back(in);  // dropped below, once the kubelets are placed
    names.push_back(ctx.object);
  } else if (api == "karpenter.sh/v1alpha5" && kind == "Provisioner") {
    out.push_back(ConvertProvisioner(in, ctx, state, out.size()));
    ApplyGlobalsToPool(out.back(), ctx, state.globals);
    names.push_back("NodePool/" + Name(in));
  } else if (api == "karpenter.sh/v1alpha5" && kind == "Machine") {
    out.push_back(ConvertMachine(in, ctx));
    names.push_back("NodeClaim/" + Name(in));
  } else if (api == "karpenter.k8s.aws/v1alpha1" && kind == "AWSNodeTemplate") {
    out.push_back(ConvertAWSNodeTemplate(in, ctx, state.globals));
    ApplyGlobalTags(out.back(), ctx, state.globals);
    *old_class = 1;
    names.push_back("EC2NodeClass/" + Name(in));
  } else if (api == "karpenter.sh/v1beta1" && kind == "NodePool") {
    out.push_back(ConvertNodePoolV1beta1(in, ctx, state, out.size()));
    ApplyGlobalsToPool(out.back(), ctx, state.globals);
    names.push_back(ctx.object);
  } else if (api == "karpenter.k8s.aws/v1beta1" && kind == "EC2NodeClass") {
    out.push_back(ConvertEC2NodeClassV1beta1(in, ctx));
    ApplyGlobalTags(out.back(), ctx, state.globals);
    *old_class = 1;
    names.push_back(ctx.object);
  } else if (NeedsConversion(in)) {
    ctx.Error("apiVersion", "cannot convert " + api + " " + kind);
    out.push_back(in);
    names.push_back(ctx.object);
  } else {
    out.push_back(in);  // v1 or not Karpenter's: unchanged
    names.push_back(ctx.object);
  }
}

}  // namespace

ConvertResult Convert(const std::vector<nlohmann::json>& objects) {
  ConvertResult result;
  State state{&result, {}, {}};
  // The global settings first: they fill in what the node classes and pools leave out.
  std::vector<bool> is_settings(objects.size(), false);
  for (size_t i = 0; i < objects.size(); ++i) {
    if (!IsGlobalSettings(objects[i])) continue;
    is_settings[i] = true;
    Context ctx{"ConfigMap/" + Name(objects[i]), &result, i};
    if (!result.helm_values.is_null()) {
      ctx.Error("metadata.name", "more than one karpenter-global-settings ConfigMap in the input");
      continue;
    }
    result.helm_values = ConvertGlobalSettings(objects[i], ctx, state.globals);
  }
  std::vector<Json> out;
  std::vector<std::string> names;  // "Kind/name" of each output object (new kind)
  std::vector<char> old_class(objects.size(), 0);
  for (size_t i = 0; i < objects.size(); ++i) {
    const Json& in = objects[i];
    const std::string api = Field(in, "apiVersion");
    const std::string kind = Field(in, "kind");
    Context ctx{kind + "/" + Name(in), &result, i};
    const size_t before = out.size();
    try {
      ConvertOne(in, api, kind, is_settings[i], ctx, state, out, names, &old_class[i]);
    } catch (const Json::exception& e) {
      // A value of an unexpected JSON type somewhere the converter reaches into.
      ctx.Error("(object)", std::string("malformed: ") + e.what());
      out.resize(before);
      names.resize(before);
      out.push_back(in);
      names.push_back(ctx.object);
    }
  }
  std::vector<size_t> origins;
  try {
    PlaceKubelets(state, out, names, &origins);
  } catch (const Json::exception& e) {
    result.errors.push_back(std::string("(kubelet move): malformed node class: ") + e.what());
    result.error_inputs.push_back(0);
  }
  if (!result.errors.empty()) return result;
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t i = origins[k];
    if (is_settings[i]) continue;
    if (old_class[i] && !state.globals.eni_limited_pod_density) {
      Context ctx{"EC2NodeClass/" + Name(out[k]), &result, i};
      Json& kubelet = out[k]["spec"]["kubelet"];
      if (!kubelet.is_object()) kubelet = Json::object();
      if (!kubelet.contains("maxPods")) {
        kubelet["maxPods"] = 110;
        ctx.Change("(global aws.enableENILimitedPodDensity: false) -> spec.kubelet.maxPods: 110");
      }
    }
    result.objects.push_back(std::move(out[k]));
    result.origins.push_back(i);
  }
  return result;
}

std::string ToYaml(const std::vector<nlohmann::json>& objects) {
  std::string out;
  for (size_t i = 0; i < objects.size(); ++i) {
    if (i > 0) out += "---\n";
    EmitYaml(objects[i], 0, out);
  }
  return out;
}

}  // namespace dovetail::apis::convert
