#include "dovetail/simulate/simulation.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/apis/convert/convert.h"
#include "dovetail/apis/core/namespace.h"
#include "dovetail/apis/core/node.h"
#include "dovetail/apis/core/persistent_volume.h"
#include "dovetail/apis/core/persistent_volume_claim.h"
#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/apis/core/storage_class.h"
#include "dovetail/apis/core/workloads.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/apis/validation/validation.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/cloudprovider/aws_node_class_capacity.h"
#include "dovetail/cloudprovider/aws_static_data.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/common/input_limits.h"
#include "dovetail/scenario/volume_topology.h"
#include "dovetail/scheduling/requirements.h"

namespace dovetail::simulate {

namespace core = apis::core;
namespace v1 = apis::v1;
namespace awsv1 = apis::aws::v1;
using scheduling::Requirements;

absl::StatusOr<cloudprovider::Catalog> LoadCatalog(const CatalogSpec& spec,
                                                   const cloudprovider::CapacityOptions& capacity) {
  if (spec.catalog.empty() || spec.catalog == "kwok") {
    cloudprovider::kwok::KwokCatalogOptions o;
    if (!spec.region.empty()) o.region = spec.region;
    o.zones = spec.zones;
    return cloudprovider::kwok::SyntheticCatalog(o);
  }
  cloudprovider::CatalogOptions options;
  options.region = spec.region.empty() ? "us-east-1" : spec.region;
  options.zones = spec.zones;
  options.capacity = capacity;
  absl::StatusOr<cloudprovider::CatalogFiles> files;
  if (spec.catalog == "aws") {
    files = cloudprovider::BuiltInAwsCatalogFiles();
    if (files.ok() && !spec.spot_prices.empty()) {
      absl::StatusOr<std::string> text =
          ReadFileAtMost(spec.spot_prices, kMaxCatalogFileBytes, "spot price file");
      if (!text.ok()) return text.status();
      auto spot = cloudprovider::ParseSpotPricesCsv(*text, spec.spot_prices);
      if (!spot.ok()) return spot.status();
      files->spot_prices = *std::move(spot);
    }
  } else if (std::filesystem::is_directory(spec.catalog)) {
    files = cloudprovider::ReadCatalogDirectory(spec.catalog);
    if (files.ok() && !spec.spot_prices.empty()) {
      auto spot =
          cloudprovider::ReadCatalogFiles(spec.catalog + "/instance-types.csv",
                                          spec.catalog + "/on-demand-prices.csv", spec.spot_prices);
      if (!spot.ok()) return spot.status();
      files->spot_prices = spot->spot_prices;
    }
  } else {
    if (spec.prices.empty()) {
      return absl::InvalidArgumentError(
          "--catalog PATH needs --prices PATH (the on-demand prices CSV)");
    }
    files = cloudprovider::ReadCatalogFiles(spec.catalog, spec.prices, spec.spot_prices);
  }
  if (!files.ok()) return files.status();
  // An exported catalog (offerings.csv) is of one region: the default.
  if (spec.region.empty()) {
    std::string region = cloudprovider::OfferingsRegion(*files);
    if (!region.empty()) options.region = std::move(region);
  }
  return cloudprovider::BuildCatalog(*files, options);
}

struct Scenario::Impl {
  std::vector<v1::NodePool> node_pools;
  std::vector<awsv1::EC2NodeClass> node_classes;
  // The catalogs of EC2NodeClasses that shape their types (built by BuildInput, kept for the
  // input's lifetime, which the scenario outlives).
  std::map<std::string, cloudprovider::Catalog> class_catalogs;
  std::vector<core::Node> nodes;
  std::vector<core::DaemonSet> daemon_sets;
  std::vector<std::unique_ptr<core::Pod>> daemon_pods;
  scenario::Volumes volumes;
  std::vector<core::Namespace> namespaces;
};

Scenario::Scenario() : impl_(std::make_unique<Impl>()) {}
Scenario::~Scenario() = default;
size_t Scenario::node_pool_count() const { return impl_->node_pools.size(); }

namespace {

std::string Where(const core::Manifest& m) {
  return absl::StrCat(m.position.file, ":", m.position.line, ": ", m.Describe());
}

template <typename T>
absl::Status DecodeInto(const core::Manifest& m, T& out) {
  absl::Status s = core::DecodeJson(m.json, out);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(Where(m), ": ", s.message()));
  return absl::OkStatus();
}

std::unique_ptr<core::Pod> PodFromTemplate(const core::PodTemplateSpec& t, const std::string& ns,
                                           const std::string& name, const std::string& owner_kind,
                                           const std::string& owner_name) {
  auto p = std::make_unique<core::Pod>();
  p->api_version = "v1";
  p->kind = "Pod";
  p->metadata = t.metadata;
  p->metadata.name = name;
  p->metadata.namespace_ = ns.empty() ? "default" : ns;
  p->metadata.uid = absl::StrCat("sim-", p->metadata.namespace_, "-", name);
  if (!owner_kind.empty()) {
    core::OwnerReference ref;
    ref.api_version = owner_kind == "Job" ? "batch/v1" : "apps/v1";
    ref.kind = owner_kind;
    ref.name = owner_name;
    ref.controller = true;
    p->metadata.owner_references.push_back(ref);
  }
  p->spec = t.spec;
  return p;
}

bool IsKnownIgnoredKind(const std::string& api_version, const std::string& kind) {
  // Kinds that may sit in the same files but do not affect node provisioning.
  static const char* kIgnored[] = {"Service",
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
  for (const char* k : kIgnored) {
    if (kind == k) return true;
  }
  (void)api_version;
  return false;
}

// object[key] when it is a string, else "".
std::string StringAt(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// Older Karpenter objects (v1alpha5, v1alpha1, v1beta1, the karpenter-global-settings ConfigMap)
// converted to v1 together, as `dovetail convert` does; every other manifest unchanged. A
// converted object keeps the position of the one it came from. Errors: InvalidArgument listing
// every object that cannot be converted, with its position.
absl::StatusOr<std::vector<core::Manifest>> ConvertOlderApis(
    const std::vector<core::Manifest>& manifests) {
  std::vector<nlohmann::json> objects;
  objects.reserve(manifests.size());
  for (const core::Manifest& m : manifests) objects.push_back(m.json);
  apis::convert::ConvertResult converted = apis::convert::Convert(objects);
  if (!converted.errors.empty()) {
    std::vector<std::string> lines;
    for (size_t e = 0; e < converted.errors.size(); ++e) {
      lines.push_back(
          absl::StrCat(Where(manifests[converted.error_inputs[e]]), ": ", converted.errors[e]));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("cannot convert to v1 (dovetail convert):\n  ", absl::StrJoin(lines, "\n  ")));
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

// `np` as the solver's pool, without instance types: requirements (with its template labels and
// its own name), labels, annotations, taints and the limits left after `pool_usage`.
absl::StatusOr<solver::PoolTemplate> PoolTemplateOf(
    const v1::NodePool& np, const absl::flat_hash_map<std::string, ResourceList>& pool_usage) {
  solver::PoolTemplate t;
  t.name = np.metadata.name;
  t.weight = np.spec.weight.value_or(0);
  auto reqs = Requirements::FromNodeSelectorRequirements(np.spec.template_.spec.requirements);
  if (!reqs.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("NodePool/", np.metadata.name, ": ", reqs.status().message()));
  }
  t.requirements = std::move(*reqs);
  t.requirements.Intersect(Requirements::FromLabels(np.spec.template_.metadata.labels));
  t.requirements.Add(
      scheduling::Requirement::In(std::string(v1::kNodePoolLabelKey), {np.metadata.name}));
  t.labels = np.spec.template_.metadata.labels;
  t.annotations = np.spec.template_.metadata.annotations;
  t.taints = np.spec.template_.spec.taints;
  t.startup_taints = np.spec.template_.spec.startup_taints;
  if (!np.spec.limits.empty()) {
    ResourceList remaining = np.spec.limits;
    auto usage = pool_usage.find(np.metadata.name);
    if (usage != pool_usage.end()) {
      for (auto& [r, q] : remaining) {
        auto u = usage->second.find(r);
        if (u != usage->second.end()) q -= u->second;
      }
    }
    t.remaining_limits = std::move(remaining);
  }
  return t;
}

// Every NodePool and EC2NodeClass must be valid, as the API server would insist.
absl::Status ValidateKarpenterObjects(const std::vector<core::Manifest>& karpenter) {
  std::vector<apis::validation::ObjectErrors> errors =
      apis::validation::ValidateManifests(karpenter);
  std::vector<std::string> lines;
  for (const auto& obj : errors) {
    for (const auto& e : obj.errors) {
      lines.push_back(absl::StrCat(obj.source, ": ", obj.object, ": ", e.field, ": ", e.message));
    }
  }
  if (!lines.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid objects:\n  ", absl::StrJoin(lines, "\n  ")));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Scenario>> Scenario::FromManifests(
    const std::vector<core::Manifest>& input) {
  std::vector<core::Manifest> upgraded;
  const std::vector<core::Manifest>* manifests_ptr = &input;
  if (std::any_of(input.begin(), input.end(),
                  [](const core::Manifest& m) { return apis::convert::NeedsConversion(m.json); })) {
    absl::StatusOr<std::vector<core::Manifest>> converted = ConvertOlderApis(input);
    if (!converted.ok()) return converted.status();
    upgraded = *std::move(converted);
    manifests_ptr = &upgraded;
  }
  const std::vector<core::Manifest>& manifests = *manifests_ptr;
  std::unique_ptr<Scenario> s(new Scenario());
  std::vector<core::Manifest> karpenter;
  for (const auto& m : manifests) {
    if (absl::Status st = s->Add(m, &karpenter); !st.ok()) return st;
  }
  if (absl::Status st = ValidateKarpenterObjects(karpenter); !st.ok()) return st;
  Impl& impl = *s->impl_;
  for (const auto& ds : impl.daemon_sets) {
    impl.daemon_pods.push_back(PodFromTemplate(ds.spec.template_, ds.metadata.namespace_,
                                               absl::StrCat(ds.metadata.name, "-template"),
                                               "DaemonSet", ds.metadata.name));
  }
  return s;
}

void Scenario::AddPod(std::unique_ptr<core::Pod> p) {
  if (!p->spec.node_name.empty()) {
    bound_.push_back(std::move(p));
  } else {
    pending_.push_back(std::move(p));
  }
}

absl::Status Scenario::Add(const core::Manifest& m, std::vector<core::Manifest>* karpenter) {
  Impl& impl = *impl_;
  const std::string& k = m.kind;
  const std::string group = m.api_version.substr(0, m.api_version.find('/'));
  if (k == "NodePool" || k == "NodeClaim" || k == "EC2NodeClass") {
    if (m.api_version != "karpenter.sh/v1" && m.api_version != "karpenter.k8s.aws/v1") {
      return absl::InvalidArgumentError(absl::StrCat(
          Where(m), ": apiVersion ", m.api_version, " ", k,
          " is not supported (Karpenter v1 reads karpenter.sh/v1 and karpenter.k8s.aws/v1)"));
    }
    karpenter->push_back(m);
    if (k == "NodePool") {
      v1::NodePool np;
      if (absl::Status st = DecodeInto(m, np); !st.ok()) return st;
      v1::ApplyDefaults(np);
      impl.node_pools.push_back(std::move(np));
    } else if (k == "EC2NodeClass") {
      awsv1::EC2NodeClass nc;
      if (absl::Status st = DecodeInto(m, nc); !st.ok()) return st;
      impl.node_classes.push_back(std::move(nc));
    }
  } else if (k == "Pod" && m.api_version == "v1") {
    auto p = std::make_unique<core::Pod>();
    if (absl::Status st = DecodeInto(m, *p); !st.ok()) return st;
    if (p->metadata.namespace_.empty()) p->metadata.namespace_ = "default";
    if (p->metadata.uid.empty()) {
      p->metadata.uid = absl::StrCat("sim-", p->metadata.namespace_, "-", p->metadata.name);
    }
    if (core::IsTerminal(*p)) return absl::OkStatus();
    AddPod(std::move(p));
  } else if ((k == "Deployment" || k == "ReplicaSet") && m.api_version == "apps/v1") {
    core::Deployment d;  // ReplicaSet has the same shape
    if (k == "Deployment") {
      if (absl::Status st = DecodeInto(m, d); !st.ok()) return st;
    } else {
      core::ReplicaSet rs;
      if (absl::Status st = DecodeInto(m, rs); !st.ok()) return st;
      d.metadata = rs.metadata;
      d.spec = rs.spec;
    }
    int32_t replicas = d.spec.replicas.value_or(1);
    for (int32_t i = 0; i < replicas; ++i) {
      AddPod(PodFromTemplate(d.spec.template_, d.metadata.namespace_,
                             absl::StrCat(d.metadata.name, "-", i), k, d.metadata.name));
    }
  } else if (k == "StatefulSet" && m.api_version == "apps/v1") {
    core::StatefulSet ss;
    if (absl::Status st = DecodeInto(m, ss); !st.ok()) return st;
    int32_t replicas = ss.spec.replicas.value_or(1);
    for (int32_t i = 0; i < replicas; ++i) {
      auto p = PodFromTemplate(ss.spec.template_, ss.metadata.namespace_,
                               absl::StrCat(ss.metadata.name, "-", i), k, ss.metadata.name);
      p->metadata.labels["statefulset.kubernetes.io/pod-name"] = p->metadata.name;
      for (const auto& tmpl : ss.spec.volume_claim_templates) {
        core::PersistentVolumeClaim pvc = tmpl;
        pvc.metadata.name = absl::StrCat(tmpl.metadata.name, "-", ss.metadata.name, "-", i);
        pvc.metadata.namespace_ = p->metadata.namespace_;
        core::Volume v;
        v.name = tmpl.metadata.name;
        v.persistent_volume_claim = core::PersistentVolumeClaimVolumeSource{pvc.metadata.name};
        p->spec.volumes.push_back(std::move(v));
        impl.volumes.claims.push_back(std::move(pvc));
      }
      AddPod(std::move(p));
    }
  } else if (k == "Job" && m.api_version == "batch/v1") {
    core::Job j;
    if (absl::Status st = DecodeInto(m, j); !st.ok()) return st;
    int32_t n = j.spec.parallelism.value_or(1);
    if (j.spec.completions) n = std::min(n, *j.spec.completions);
    for (int32_t i = 0; i < n; ++i) {
      AddPod(PodFromTemplate(j.spec.template_, j.metadata.namespace_,
                             absl::StrCat(j.metadata.name, "-", i), k, j.metadata.name));
    }
  } else if (k == "DaemonSet" && m.api_version == "apps/v1") {
    core::DaemonSet ds;
    if (absl::Status st = DecodeInto(m, ds); !st.ok()) return st;
    impl.daemon_sets.push_back(std::move(ds));
  } else if (k == "Node" && m.api_version == "v1") {
    core::Node n;
    if (absl::Status st = DecodeInto(m, n); !st.ok()) return st;
    impl.nodes.push_back(std::move(n));
  } else if (k == "PersistentVolumeClaim" && m.api_version == "v1") {
    core::PersistentVolumeClaim pvc;
    if (absl::Status st = DecodeInto(m, pvc); !st.ok()) return st;
    if (pvc.metadata.namespace_.empty()) pvc.metadata.namespace_ = "default";
    impl.volumes.claims.push_back(std::move(pvc));
  } else if (k == "PersistentVolume" && m.api_version == "v1") {
    core::PersistentVolume pv;
    if (absl::Status st = DecodeInto(m, pv); !st.ok()) return st;
    impl.volumes.volumes.push_back(std::move(pv));
  } else if (k == "StorageClass" && group == "storage.k8s.io") {
    core::StorageClass sc;
    if (absl::Status st = DecodeInto(m, sc); !st.ok()) return st;
    impl.volumes.storage_classes.push_back(std::move(sc));
  } else if (k == "Namespace" && m.api_version == "v1") {
    core::Namespace ns;
    if (absl::Status st = DecodeInto(m, ns); !st.ok()) return st;
    impl.namespaces.push_back(std::move(ns));
  } else if (IsKnownIgnoredKind(m.api_version, k)) {
    return absl::OkStatus();
  } else if (k.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(Where(m), ": object has no kind"));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(m), ": unknown kind ", m.api_version, "/", k,
                     " (dovetail simulate reads NodePools, EC2NodeClasses, Pods, workloads, "
                     "DaemonSets, Nodes and volumes)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Scenario>> Scenario::FromFiles(
    const std::vector<std::string>& paths) {
  std::vector<core::Manifest> all;
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::error_code ec;
    if (path != "-" && std::filesystem::is_directory(path, ec)) {
      // Like kubectl -f DIR: every YAML/JSON file below it, in name order.
      std::vector<std::string> found;
      for (const auto& e : std::filesystem::recursive_directory_iterator(path, ec)) {
        const std::string ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
          found.push_back(e.path().string());
        }
      }
      if (ec) return absl::NotFoundError(absl::StrCat(path, ": ", ec.message()));
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(path);
    }
  }
  for (const auto& path : files) {
    auto ms = core::ReadManifests(path);
    if (!ms.ok()) return ms.status();
    for (auto& m : *ms) all.push_back(std::move(m));
  }
  return FromManifests(all);
}

absl::StatusOr<const cloudprovider::Catalog*> Scenario::ClassCatalog(
    const v1::NodePool& pool, const CatalogSpec* spec) const {
  Impl& impl = *impl_;
  const auto& ref = pool.spec.template_.spec.node_class_ref;
  if (spec == nullptr || spec->catalog.empty() || spec->catalog == "kwok" || !ref.has_value() ||
      ref->kind != "EC2NodeClass") {
    return nullptr;
  }
  auto nc =
      std::find_if(impl.node_classes.begin(), impl.node_classes.end(),
                   [&](const awsv1::EC2NodeClass& c) { return c.metadata.name == ref->name; });
  if (nc == impl.node_classes.end()) return nullptr;
  if (auto it = impl.class_catalogs.find(nc->metadata.name); it != impl.class_catalogs.end()) {
    return &it->second;
  }
  absl::StatusOr<cloudprovider::CapacityOptions> shape = cloudprovider::NodeClassCapacity(nc->spec);
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("EC2NodeClass/", nc->metadata.name, ": ", shape.status().message()));
  }
  if (*shape == cloudprovider::CapacityOptions{}) return nullptr;
  absl::StatusOr<cloudprovider::Catalog> catalog = LoadCatalog(*spec, *shape);
  if (!catalog.ok()) return catalog.status();
  return &impl.class_catalogs.emplace(nc->metadata.name, *std::move(catalog)).first->second;
}

absl::StatusOr<solver::Input> Scenario::BuildInput(const cloudprovider::Catalog& catalog,
                                                   const solver::Options& options,
                                                   const CatalogSpec* spec) const {
  Impl& impl = *impl_;
  solver::Input in;
  in.options = options;
  absl::flat_hash_map<std::string, ResourceList> pool_usage;
  for (const auto& n : impl.nodes) {
    solver::ExistingNode e;
    e.name = n.metadata.name;
    e.labels = n.metadata.labels;
    e.taints = n.spec.taints;
    e.allocatable = n.status.allocatable.empty() ? n.status.capacity : n.status.allocatable;
    auto pool = n.metadata.labels.find(std::string(v1::kNodePoolLabelKey));
    if (pool != n.metadata.labels.end()) {
      e.node_pool = pool->second;
      ResourceList& usage = pool_usage[pool->second];
      for (const auto& [r, q] : n.status.capacity) usage[r] += q;
      usage["nodes"] += Quantity::FromUnits(1);
    }
    in.nodes.push_back(std::move(e));
  }
  for (const auto& np : impl.node_pools) {
    if (v1::IsStatic(np)) continue;  // static pools are not used for dynamic provisioning
    absl::StatusOr<solver::PoolTemplate> pool_template = PoolTemplateOf(np, pool_usage);
    if (!pool_template.ok()) return pool_template.status();
    solver::PoolTemplate& t = *pool_template;
    t.instance_types = catalog.instance_types();
    absl::StatusOr<const cloudprovider::Catalog*> shaped = ClassCatalog(np, spec);
    if (!shaped.ok()) return shaped.status();
    if (*shaped != nullptr) t.instance_types = (*shaped)->instance_types();
    in.pools.push_back(std::move(t));
  }
  for (const auto& p : pending_) in.pods.push_back(p.get());
  for (const auto& p : bound_) in.bound_pods.push_back(p.get());
  for (size_t i = 0; i < impl.daemon_sets.size(); ++i) {
    const auto& ds = impl.daemon_sets[i];
    in.daemon_sets.push_back(
        {absl::StrCat(ds.metadata.namespace_.empty() ? "default" : ds.metadata.namespace_, "/",
                      ds.metadata.name),
         impl.daemon_pods[i].get()});
  }
  for (const auto& ns : impl.namespaces) in.namespace_labels[ns.metadata.name] = ns.metadata.labels;
  // Volume topology.
  const scenario::VolumeTopology volumes(impl.volumes);
  for (const auto& p : pending_) {
    if (auto alternatives = volumes.Alternatives(*p)) {
      in.volume_requirements[p.get()] = *std::move(alternatives);
    }
  }
  return in;
}

absl::StatusOr<Result> Run(const Scenario& scenario, const cloudprovider::Catalog& catalog,
                           const solver::Options& options, const CatalogSpec* spec) {
  auto input = scenario.BuildInput(catalog, options, spec);
  if (!input.ok()) return input.status();
  Result result;
  // The plan, then its bound, each timed (the bound's time is part of solve_seconds).
  const bool bound = input->options.lower_bound;
  input->options.lower_bound = false;
  auto start = std::chrono::steady_clock::now();
  auto plan = solver::Solve(*input);
  if (!plan.ok()) return plan.status();
  result.plan = std::move(*plan);
  auto bound_start = std::chrono::steady_clock::now();
  if (bound) {
    absl::StatusOr<double> lower_bound = solver::LowerBound(*input, result.plan);
    if (lower_bound.ok()) {
      result.plan.lower_bound = *lower_bound;
    } else {
      result.plan.lower_bound_error = std::string(lower_bound.status().message());
    }
  }
  const auto end = std::chrono::steady_clock::now();
  result.solve_seconds = std::chrono::duration<double>(end - start).count();
  result.lower_bound_seconds = std::chrono::duration<double>(end - bound_start).count();
  std::map<std::string, std::vector<const core::Pod*>> by_node;
  for (const auto& n : input->nodes) by_node[n.name];
  for (const auto& p : scenario.bound_pods()) by_node[p->spec.node_name].push_back(p.get());
  for (auto& [name, pods] : by_node) result.bound_by_node.emplace_back(name, std::move(pods));
  return result;
}

namespace {
std::string PodName(const core::Pod* p) {
  return absl::StrCat(p->metadata.namespace_, "/", p->metadata.name);
}
double Round6(double v) { return std::round(v * 1e6) / 1e6; }
}  // namespace

nlohmann::json ToJson(const Result& r) {
  nlohmann::json out;
  out["nodeClaims"] = nlohmann::json::array();
  absl::flat_hash_map<std::string, int> per_pool;
  for (const auto& c : r.plan.node_claims) {
    nlohmann::json j;
    j["name"] = absl::StrFormat("%s-%05d", c.pool, ++per_pool[c.pool]);
    j["nodePool"] = c.pool;
    j["instanceType"] = c.instance_type;
    j["capacityType"] = c.capacity_type;
    j["zone"] = c.zone;
    j["pricePerHour"] = Round6(c.price);
    j["instanceTypeOptions"] = nlohmann::json::array();
    for (const auto& it : c.instance_types) j["instanceTypeOptions"].push_back(it->name());
    j["labels"] = nlohmann::json::object();
    for (const auto& [k, v] : c.labels) j["labels"][k] = v;
    j["taints"] = nlohmann::json::array();
    for (const auto& t : c.taints) {
      nlohmann::json tj = core::EncodeJson(t);
      j["taints"].push_back(tj);
    }
    j["requests"] = nlohmann::json::object();
    for (const auto& [k, q] : c.requests) j["requests"][k] = q.ToString();
    j["pods"] = nlohmann::json::array();
    for (const auto* p : c.pods) j["pods"].push_back(PodName(p));
    out["nodeClaims"].push_back(std::move(j));
  }
  out["existingNodes"] = nlohmann::json::array();
  absl::flat_hash_map<std::string, const solver::ExistingPlacement*> placed;
  for (const auto& e : r.plan.existing) placed[e.node] = &e;
  for (const auto& [name, bound] : r.bound_by_node) {
    nlohmann::json j;
    j["name"] = name;
    j["pods"] = nlohmann::json::array();
    for (const auto* p : bound) j["pods"].push_back(PodName(p));
    auto it = placed.find(name);
    if (it != placed.end()) {
      for (const auto* p : it->second->pods) j["pods"].push_back(PodName(p));
    }
    out["existingNodes"].push_back(std::move(j));
  }
  out["unschedulable"] = nlohmann::json::array();
  for (const auto& u : r.plan.unschedulable) {
    out["unschedulable"].push_back({{"pod", PodName(u.pod)}, {"reason", u.reason}});
  }
  out["totalPricePerHour"] = Round6(r.plan.total_price);
  if (r.plan.lower_bound) {
    out["lowerBoundPricePerHour"] = Round6(*r.plan.lower_bound);
  } else {
    out["lowerBoundPricePerHour"] = nullptr;
  }
  out["solveSeconds"] = r.solve_seconds;
  out["lowerBoundSeconds"] = r.lower_bound_seconds;  // included in solveSeconds
  return out;
}

std::string ToTable(const Result& r) {
  std::string out = absl::StrFormat("%-28s %-14s %-16s %-10s %-14s %10s %10s %5s %6s %6s\n", "NODE",
                                    "NODEPOOL", "INSTANCE-TYPE", "CAPACITY", "ZONE", "$/HOUR",
                                    "$/MONTH", "PODS", "CPU%", "MEM%");
  absl::flat_hash_map<std::string, int> per_pool;
  auto util = [](const ResourceList& req, const cloudprovider::InstanceTypePtr& it, const char* r) {
    if (it == nullptr) return 0.0;
    auto a = it->Allocatable().find(r);
    auto q = req.find(r);
    if (a == it->Allocatable().end() || q == req.end() || a->second.MilliValue() == 0) return 0.0;
    return 100.0 * static_cast<double>(q->second.MilliValue()) /
           static_cast<double>(a->second.MilliValue());
  };
  for (const auto& c : r.plan.node_claims) {
    cloudprovider::InstanceTypePtr chosen;
    for (const auto& it : c.instance_types) {
      if (it->name() == c.instance_type) chosen = it;
    }
    absl::StrAppendFormat(&out, "%-28s %-14s %-16s %-10s %-14s %10.4f %10.2f %5d %5.0f%% %5.0f%%\n",
                          absl::StrFormat("%s-%05d", c.pool, ++per_pool[c.pool]), c.pool,
                          c.instance_type, c.capacity_type, c.zone, c.price, c.price * 730,
                          static_cast<int>(c.pods.size()), util(c.requests, chosen, "cpu"),
                          util(c.requests, chosen, "memory"));
  }
  size_t existing_pods = 0;
  for (const auto& e : r.plan.existing) existing_pods += e.pods.size();
  size_t new_pods = 0;
  for (const auto& c : r.plan.node_claims) new_pods += c.pods.size();
  absl::StrAppendFormat(&out,
                        "\n%d new node(s) for %d pod(s), %d pod(s) on existing nodes, %d "
                        "unschedulable\n",
                        static_cast<int>(r.plan.node_claims.size()), static_cast<int>(new_pods),
                        static_cast<int>(existing_pods),
                        static_cast<int>(r.plan.unschedulable.size()));
  absl::StrAppendFormat(&out, "cost: $%.4f/hour ($%.2f/month)", r.plan.total_price,
                        r.plan.total_price * 730);
  if (r.plan.lower_bound) {
    absl::StrAppendFormat(&out, ", lower bound $%.4f/hour", *r.plan.lower_bound);
    if (*r.plan.lower_bound > 0) {
      absl::StrAppendFormat(&out, " (plan/bound %.3f)", r.plan.total_price / *r.plan.lower_bound);
    }
  }
  absl::StrAppendFormat(&out, ", solved in %.1f ms", r.solve_seconds * 1000);
  if (r.lower_bound_seconds > 0) {
    absl::StrAppendFormat(&out, " (lower bound %.1f ms)", r.lower_bound_seconds * 1000);
  }
  out += "\n";
  for (const auto& u : r.plan.unschedulable) {
    absl::StrAppendFormat(&out, "unschedulable %s: %s\n", PodName(u.pod), u.reason);
  }
  return out;
}

}  // namespace dovetail::simulate
