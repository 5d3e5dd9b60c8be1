#include "dovetail/scenario/from_manifests.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/convert/convert.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/namespace.h"
#include "dovetail/apis/core/persistent_volume.h"
#include "dovetail/apis/core/persistent_volume_claim.h"
#include "dovetail/apis/core/storage_class.h"
#include "dovetail/apis/core/workloads.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/validation/validation.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/clock.h"
#include "dovetail/common/input_limits.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/kube/objects.h"
#include "dovetail/scenario/pod_filter.h"
#include "dovetail/state/cluster.h"
#include "simdjson.h"

namespace dovetail::scenario {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
namespace awsv1 = apis::aws::v1;
using nlohmann::json;

// The label the API server gives every namespace (its name).
constexpr char kNamespaceNameLabel[] = "kubernetes.io/metadata.name";

std::string Where(const core::Manifest& m) {
  return Cat(m.position.file, ":", m.position.line, ": ", m.Describe());
}

// object[key] when it is a string, else "".
std::string StringAt(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// object[key] when it is an object, else an empty object.
json ObjectAt(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_object() ? *it : json::object();
}

// Kinds that may sit in the same files but do not affect node provisioning.
bool IsSkippedKind(const std::string& kind) {
  static const char* const kSkipped[] = {"Service",
                                         "ConfigMap",
                                         "Secret",
                                         "ServiceAccount",
                                         "Role",
                                         "RoleBinding",
                                         "ClusterRole",
                                         "ClusterRoleBinding",
                                         "Ingress",
                                         "PodDisruptionBudget",
                                         "HorizontalPodAutoscaler",
                                         "NetworkPolicy",
                                         "PriorityClass",
                                         "CustomResourceDefinition",
                                         "LimitRange",
                                         "ResourceQuota",
                                         "CSINode"};
  return std::any_of(std::begin(kSkipped), std::end(kSkipped),
                     [&kind](const char* k) { return kind == k; });
}

// Older Karpenter objects (v1alpha5, v1alpha1, v1beta1, the karpenter-global-settings ConfigMap)
// converted to v1 together, as `dovetail convert` does; every other manifest unchanged. A
// converted object keeps the position of the one it came from. Errors: InvalidArgument listing
// every object that cannot be converted, with its position.
absl::StatusOr<std::vector<core::Manifest>> ConvertOlderApis(
    const std::vector<core::Manifest>& manifests) {
  std::vector<json> objects;
  objects.reserve(manifests.size());
  for (const core::Manifest& m : manifests) objects.push_back(m.json);
  apis::convert::ConvertResult converted = apis::convert::Convert(objects);
  if (!converted.errors.empty()) {
    std::vector<std::string> lines;
    for (size_t e = 0; e < converted.errors.size(); ++e) {
      lines.push_back(Cat(Where(manifests[converted.error_inputs[e]]), ": ", converted.errors[e]));
    }
    return absl::InvalidArgumentError(
        Cat("cannot convert to v1 (dovetail convert):\n  ", absl::StrJoin(lines, "\n  ")));
  }
  std::vector<core::Manifest> out;
  out.reserve(converted.objects.size());
  for (size_t k = 0; k < converted.objects.size(); ++k) {
    const core::Manifest& origin = manifests[converted.origins[k]];
    if (converted.objects[k] == origin.json) {
      out.push_back(origin);
      continue;
    }
    core::Manifest m;
    m.json = std::move(converted.objects[k]);
    m.api_version = StringAt(m.json, "apiVersion");
    m.kind = StringAt(m.json, "kind");
    if (auto meta = m.json.find("metadata"); meta != m.json.end()) {
      m.name = StringAt(*meta, "name");
      m.namespace_ = StringAt(*meta, "namespace");
    }
    m.position = origin.position;
    out.push_back(std::move(m));
  }
  return out;
}

// Every NodePool, NodeClaim and EC2NodeClass must be valid, as the API server would insist.
absl::Status ValidateKarpenterObjects(const std::vector<core::Manifest>& karpenter) {
  std::vector<std::string> lines;
  for (const auto& obj : apis::validation::ValidateManifests(karpenter)) {
    for (const auto& e : obj.errors) {
      lines.push_back(Cat(obj.source, ": ", obj.object, ": ", e.field, ": ", e.message));
    }
  }
  if (!lines.empty()) {
    return absl::InvalidArgumentError(Cat("invalid objects:\n  ", absl::StrJoin(lines, "\n  ")));
  }
  return absl::OkStatus();
}

// An object as the cluster would hold it, with where it was written.
struct Object {
  json object;
  std::string where;
  std::string kind;
};

// Step 1: the manifests as the objects a cluster would hold (see the header).
class Expander {
 public:
  absl::Status Add(const core::Manifest& m) {
    const std::string& k = m.kind;
    const std::string group = m.api_version.substr(0, m.api_version.find('/'));
    if (k == "NodePool" || k == "NodeClaim" || k == "EC2NodeClass") {
      if (m.api_version != "karpenter.sh/v1" && m.api_version != "karpenter.k8s.aws/v1") {
        return absl::InvalidArgumentError(
            Cat(Where(m), ": apiVersion ", m.api_version, " ", k,
                " is not supported (Karpenter v1 reads karpenter.sh/v1 and karpenter.k8s.aws/v1)"));
      }
      karpenter_.push_back(m);
      Keep(m, m.json, /*namespaced=*/false);
    } else if (m.api_version == "v1" && (k == "Pod" || k == "PersistentVolumeClaim")) {
      RETURN_IF_ERROR(CountPods(m, k == "Pod" ? 1 : 0));
      Keep(m, m.json, /*namespaced=*/true);
    } else if ((m.api_version == "v1" &&
                (k == "Node" || k == "PersistentVolume" || k == "Namespace")) ||
               (k == "StorageClass" && group == "storage.k8s.io")) {
      Keep(m, m.json, /*namespaced=*/false);
    } else if (k == "DaemonSet" && m.api_version == "apps/v1") {
      RETURN_IF_ERROR(Check<core::DaemonSet>(m));
      Keep(m, m.json, /*namespaced=*/true);
    } else if (k == "Deployment" && m.api_version == "apps/v1") {
      core::Deployment d;
      RETURN_IF_ERROR(Decode(m, d));
      RETURN_IF_ERROR(AddPods(m, d.spec.replicas.value_or(1), nullptr));
    } else if (k == "ReplicaSet" && m.api_version == "apps/v1") {
      core::ReplicaSet rs;
      RETURN_IF_ERROR(Decode(m, rs));
      RETURN_IF_ERROR(AddPods(m, rs.spec.replicas.value_or(1), nullptr));
    } else if (k == "StatefulSet" && m.api_version == "apps/v1") {
      core::StatefulSet ss;
      RETURN_IF_ERROR(Decode(m, ss));
      RETURN_IF_ERROR(AddPods(m, ss.spec.replicas.value_or(1), &ss));
    } else if (k == "Job" && m.api_version == "batch/v1") {
      core::Job j;
      RETURN_IF_ERROR(Decode(m, j));
      int32_t n = j.spec.parallelism.value_or(1);
      if (j.spec.completions) n = std::min(n, *j.spec.completions);
      RETURN_IF_ERROR(AddPods(m, n, nullptr));
    } else if (IsSkippedKind(k)) {
      return absl::OkStatus();
    } else if (k.empty()) {
      return absl::InvalidArgumentError(Cat(Where(m), ": object has no kind"));
    } else {
      return absl::InvalidArgumentError(
          Cat(Where(m), ": unknown kind ", m.api_version, "/", k,
              " (dovetail simulate reads NodePools, EC2NodeClasses, Pods, workloads, "
              "DaemonSets, Nodes and volumes)"));
    }
    return absl::OkStatus();
  }

  const std::vector<core::Manifest>& karpenter() const { return karpenter_; }
  std::vector<Object>& objects() { return objects_; }

 private:
  template <typename T>
  static absl::Status Decode(const core::Manifest& m, T& out) {
    absl::Status s = core::DecodeJson(m.json, out);
    if (!s.ok()) return absl::InvalidArgumentError(Cat(Where(m), ": ", s.message()));
    return absl::OkStatus();
  }
  template <typename T>
  static absl::Status Check(const core::Manifest& m) {
    T out;
    return Decode(m, out);
  }

  absl::Status CountPods(const core::Manifest& m, int64_t n) {
    if (n < 0) return absl::InvalidArgumentError(Cat(Where(m), ": negative replica count ", n));
    pods_ += static_cast<size_t>(n);
    if (pods_ > kMaxScenarioPods) {
      return absl::InvalidArgumentError(Cat(Where(m), ": more than ", kMaxScenarioPods,
                                            " pods in the input (common/input_limits.h)"));
    }
    return absl::OkStatus();
  }

  void Keep(const core::Manifest& m, json object, bool namespaced) {
    if (!object.contains("metadata") || !object["metadata"].is_object()) {
      object["metadata"] = json::object();
    }
    if (namespaced && StringAt(object["metadata"], "namespace").empty()) {
      object["metadata"]["namespace"] = "default";
    }
    objects_.push_back({std::move(object), Where(m), StringAt(m.json, "kind")});
  }

  // The `n` pods of workload `m` (and a StatefulSet's claims), from its pod template's JSON, so
  // that every field of the template reaches the decoders.
  absl::Status AddPods(const core::Manifest& m, int32_t n, const core::StatefulSet* ss) {
    RETURN_IF_ERROR(CountPods(m, n));
    const json spec = ObjectAt(m.json, "spec");
    const json tmpl = ObjectAt(spec, "template");
    const std::string ns = m.namespace_.empty() ? "default" : m.namespace_;
    for (int32_t i = 0; i < n; ++i) {
      const std::string name = Cat(m.name, "-", i);
      json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
      pod["metadata"] = ObjectAt(tmpl, "metadata");
      pod["metadata"]["name"] = name;
      pod["metadata"]["namespace"] = ns;
      pod["metadata"]["ownerReferences"] = json::array({{{"apiVersion", m.api_version},
                                                         {"kind", m.kind},
                                                         {"name", m.name},
                                                         {"uid", Cat("simulate-", ns, "-", m.name)},
                                                         {"controller", true}}});
      pod["spec"] = ObjectAt(tmpl, "spec");
      if (ss != nullptr) {
        pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] = name;
        const auto& templates = ss->spec.volume_claim_templates;
        const json claims =
            spec.contains("volumeClaimTemplates") ? spec["volumeClaimTemplates"] : json::array();
        for (size_t c = 0; c < templates.size() && c < claims.size(); ++c) {
          const std::string claim = templates[c].metadata.name;
          json pvc = claims[c];
          pvc["apiVersion"] = "v1";
          pvc["kind"] = "PersistentVolumeClaim";
          pvc["metadata"]["name"] = Cat(claim, "-", m.name, "-", i);
          pvc["metadata"]["namespace"] = ns;
          objects_.push_back({std::move(pvc), Where(m), "PersistentVolumeClaim"});
          pod["spec"]["volumes"].push_back(
              {{"name", claim},
               {"persistentVolumeClaim", {{"claimName", Cat(claim, "-", m.name, "-", i)}}}});
        }
      }
      objects_.push_back({std::move(pod), Where(m), "Pod"});
    }
    return absl::OkStatus();
  }

  std::vector<core::Manifest> karpenter_;
  std::vector<Object> objects_;
  size_t pods_ = 0;
};

// Decodes `text` with one of the informers' decoders (kube/objects.h).
template <typename Info, typename DecodeFn>
absl::StatusOr<std::shared_ptr<Info>> DecodeCompact(const json& object, const DecodeFn& decode,
                                                    const kube::DecodeContext& ctx) {
  simdjson::ondemand::parser parser;
  simdjson::padded_string text(object.dump());
  simdjson::ondemand::document doc;
  simdjson::ondemand::object obj;
  if (auto error = parser.iterate(text).get(doc); error) {
    return absl::InvalidArgumentError(simdjson::error_message(error));
  }
  if (auto error = doc.get_object().get(obj); error) {
    return absl::InvalidArgumentError(simdjson::error_message(error));
  }
  auto out = std::make_shared<Info>();
  RETURN_IF_ERROR(decode(obj, ctx, *out));
  return out;
}

constexpr auto DecodeNodeFn = [](simdjson::ondemand::object obj, const kube::DecodeContext& ctx,
                                 kube::NodeInfo& out) { return kube::DecodeNode(obj, ctx, out); };
constexpr auto DecodePodFn = [](simdjson::ondemand::object obj, const kube::DecodeContext& ctx,
                                kube::PodInfo& out) { return kube::DecodePod(obj, ctx, out); };

template <typename T>
absl::StatusOr<T> DecodeApi(const Object& o) {
  T out;
  absl::Status s = core::DecodeJson(o.object, out);
  if (!s.ok()) return absl::InvalidArgumentError(Cat(o.where, ": ", s.message()));
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ManifestScenario>> ManifestScenario::FromManifests(
    const std::vector<core::Manifest>& input, absl::Time now) {
  std::vector<core::Manifest> upgraded;
  const std::vector<core::Manifest>* manifests = &input;
  if (std::any_of(input.begin(), input.end(),
                  [](const core::Manifest& m) { return apis::convert::NeedsConversion(m.json); })) {
    ASSIGN_OR_RETURN(upgraded, ConvertOlderApis(input));
    manifests = &upgraded;
  }
  Expander expander;
  for (const core::Manifest& m : *manifests) RETURN_IF_ERROR(expander.Add(m));
  RETURN_IF_ERROR(ValidateKarpenterObjects(expander.karpenter()));

  // Step 2: the objects into a Scenario, pods and nodes through a cluster state.
  std::unique_ptr<ManifestScenario> out(new ManifestScenario());
  Scenario& s = out->scenario_;
  s.now = now;
  const FakeClock clock(now);
  state::Cluster cluster(clock);
  const kube::DecodeContext ctx{.pool = &out->strings_, .constraints = &out->constraints_};
  std::set<std::string> namespaces = {"default"};
  for (Object& o : expander.objects()) {
    const std::string ns = StringAt(o.object["metadata"], "namespace");
    if (!ns.empty()) namespaces.insert(ns);
    auto error = [&o](const absl::Status& status) {
      return absl::InvalidArgumentError(Cat(o.where, ": ", status.message()));
    };
    if (o.kind == "NodePool") {
      ASSIGN_OR_RETURN(v1::NodePool pool, DecodeApi<v1::NodePool>(o));
      v1::ApplyDefaults(pool);
      const std::string name = pool.metadata.name;
      s.node_pools[name] = std::move(pool);
    } else if (o.kind == "EC2NodeClass") {
      ASSIGN_OR_RETURN(awsv1::EC2NodeClass nc, DecodeApi<awsv1::EC2NodeClass>(o));
      out->node_classes_.push_back(std::move(nc));
    } else if (o.kind == "NodeClaim") {
      ASSIGN_OR_RETURN(v1::NodeClaim claim, DecodeApi<v1::NodeClaim>(o));
      cluster.UpdateNodeClaim(std::make_shared<const v1::NodeClaim>(std::move(claim)));
    } else if (o.kind == "Node") {
      auto node = DecodeCompact<kube::NodeInfo>(o.object, DecodeNodeFn, ctx);
      if (!node.ok()) return error(node.status());
      cluster.UpdateNode(*std::move(node));
    } else if (o.kind == "Pod") {
      // The full decode first: its errors name the field (the compact decoder's do not).
      RETURN_IF_ERROR(DecodeApi<core::Pod>(o).status());
      auto pod = DecodeCompact<kube::PodInfo>(o.object, DecodePodFn, ctx);
      if (!pod.ok()) return error(pod.status());
      if ((*pod)->node_name.empty()) {
        (*pod)->unschedulable = true;  // the kube-scheduler's verdict simulate assumes
        if (IsProvisionable(**pod)) s.pending_pods.push_back(*std::move(pod));
      } else {
        cluster.UpdatePod(*std::move(pod));
      }
    } else if (o.kind == "DaemonSet") {
      ASSIGN_OR_RETURN(core::DaemonSet ds, DecodeApi<core::DaemonSet>(o));
      s.daemon_sets.push_back(std::move(ds));
    } else if (o.kind == "PersistentVolumeClaim") {
      ASSIGN_OR_RETURN(core::PersistentVolumeClaim pvc, DecodeApi<core::PersistentVolumeClaim>(o));
      s.volumes.claims.push_back(std::move(pvc));
    } else if (o.kind == "PersistentVolume") {
      ASSIGN_OR_RETURN(core::PersistentVolume pv, DecodeApi<core::PersistentVolume>(o));
      s.volumes.volumes.push_back(std::move(pv));
    } else if (o.kind == "StorageClass") {
      ASSIGN_OR_RETURN(core::StorageClass sc, DecodeApi<core::StorageClass>(o));
      s.volumes.storage_classes.push_back(std::move(sc));
    } else if (o.kind == "Namespace") {
      ASSIGN_OR_RETURN(core::Namespace n, DecodeApi<core::Namespace>(o));
      namespaces.insert(n.metadata.name);
      s.namespace_labels[n.metadata.name] = n.metadata.labels;
    }
  }
  for (const std::string& ns : namespaces) s.namespace_labels[ns][kNamespaceNameLabel] = ns;
  s.snapshot = cluster.TakeSnapshot();
  for (Object& o : expander.objects()) out->objects_.push_back(std::move(o.object));
  return out;
}

absl::StatusOr<std::unique_ptr<ManifestScenario>> ManifestScenario::FromFiles(
    const std::vector<std::string>& paths, absl::Time now) {
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::error_code ec;
    if (path == "-" || !std::filesystem::is_directory(path, ec)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::recursive_directory_iterator(path, ec)) {
      const std::string ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
        found.push_back(e.path().string());
      }
    }
    if (ec) return absl::NotFoundError(Cat(path, ": ", ec.message()));
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  std::vector<core::Manifest> all;
  for (const auto& path : files) {
    ASSIGN_OR_RETURN(std::vector<core::Manifest> manifests, core::ReadManifests(path));
    for (auto& m : manifests) all.push_back(std::move(m));
  }
  return FromManifests(all, now);
}

}  // namespace dovetail::scenario
