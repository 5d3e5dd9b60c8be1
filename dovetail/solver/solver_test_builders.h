// Builders for solver and plan-validator tests: instance types with offerings, NodePool templates,
// pods with the usual constraints, existing nodes, and a Scene that owns the pods an Input points
// to. Test-only; header-only so each test binary stays self-contained. Declared in
// dovetail::solver::test_builders and, for the solver's own tests, also in dovetail::solver.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/solver/solver.h"

namespace dovetail::solver::test_builders {

namespace v1 = apis::v1;

inline constexpr std::string_view kZone = v1::kLabelTopologyZone;
inline constexpr std::string_view kHost = v1::kLabelHostname;

inline Quantity Q(const char* s) { return *Quantity::Parse(s); }

struct TypeSpec {
  std::string name;
  int64_t cpu = 2;     // vCPUs
  int64_t mem_gi = 4;  // GiB
  double price = 0.1;  // on-demand per hour
  std::vector<std::string> zones = {"zone-a", "zone-b", "zone-c"};
  std::string arch = "amd64";
  double spot_factor = 0.5;  // spot price = price * factor; <= 0: no spot
  std::vector<std::string>
      unavailable;  // "spot/zone-a": offerings that exist but are not available
  int64_t pods = 110;
  int64_t reserved_milli_cpu = 0;                         // kube-reserved: allocatable < capacity
  int64_t reserved_memory_mi = 0;                         // kube-reserved memory, MiB
  std::vector<std::pair<std::string, int64_t>> extended;  // e.g. {"example.com/gpu", 1}
  double node_price = 0;                                  // every offering's Offering::node_price
};

inline InstanceTypePtr MakeType(const TypeSpec& s) {
  using cloudprovider::Offering;
  std::vector<Offering> offerings;
  std::vector<std::string> cts = {"on-demand"};
  if (s.spot_factor > 0) cts.push_back("spot");
  auto unavailable = [&](const std::string& ct, const std::string& z) {
    for (const auto& u : s.unavailable) {
      if (u == absl::StrCat(ct, "/", z)) return true;
    }
    return false;
  };
  for (const auto& z : s.zones) {
    offerings.push_back(Offering::Make("on-demand", z, "", s.price, !unavailable("on-demand", z)));
    if (s.spot_factor > 0) {
      offerings.push_back(
          Offering::Make("spot", z, "", s.price * s.spot_factor, !unavailable("spot", z)));
    }
  }
  for (Offering& o : offerings) o.node_price = s.node_price;
  scheduling::Requirements reqs;
  reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelInstanceType), {s.name}));
  reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelArch), {s.arch}));
  reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelOS), {"linux"}));
  reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelTopologyZone), s.zones));
  reqs.Add(scheduling::Requirement::In(std::string(v1::kCapacityTypeLabelKey), cts));
  ResourceList capacity{{"cpu", Quantity::FromUnits(s.cpu)},
                        {"memory", Quantity::FromUnits(s.mem_gi << 30, QuantityFormat::kBinarySI)},
                        {"pods", Quantity::FromUnits(s.pods)}};
  for (const auto& [name, n] : s.extended) capacity[name] = Quantity::FromUnits(n);
  cloudprovider::InstanceTypeOverhead overhead;
  if (s.reserved_milli_cpu > 0) {
    overhead.kube_reserved["cpu"] = Quantity::FromMilli(s.reserved_milli_cpu);
  }
  if (s.reserved_memory_mi > 0) {
    overhead.kube_reserved["memory"] =
        Quantity::FromUnits(s.reserved_memory_mi << 20, QuantityFormat::kBinarySI);
  }
  return std::make_shared<cloudprovider::InstanceType>(
      s.name, std::move(reqs), cloudprovider::Offerings(std::move(offerings)), std::move(capacity),
      std::move(overhead));
}

inline InstanceTypePtr Type(const std::string& name, int64_t cpu, int64_t mem_gi, double price,
                            std::vector<std::string> zones = {"zone-a", "zone-b", "zone-c"},
                            const std::string& arch = "amd64") {
  TypeSpec s;
  s.name = name;
  s.cpu = cpu;
  s.mem_gi = mem_gi;
  s.price = price;
  s.zones = std::move(zones);
  s.arch = arch;
  return MakeType(s);
}

inline std::vector<InstanceTypePtr> SmallCatalog() {
  return {Type("small", 2, 4, 0.10), Type("medium", 4, 8, 0.20), Type("large", 8, 16, 0.40),
          Type("xlarge", 16, 32, 0.80)};
}

inline PoolTemplate Pool(const std::string& name, std::vector<InstanceTypePtr> types,
                         int32_t weight = 0) {
  PoolTemplate p;
  p.name = name;
  p.weight = weight;
  p.instance_types = std::move(types);
  return p;
}

// A pool over `types` with `limits` left under its spec.limits ("nodes" counts nodes).
inline PoolTemplate LimitedPool(const std::string& name, std::vector<InstanceTypePtr> types,
                                ResourceList limits, int32_t weight = 0) {
  PoolTemplate p = Pool(name, std::move(types), weight);
  p.remaining_limits = std::move(limits);
  return p;
}

// Adds `key Exists` with minValues `min_values` to the pool's requirements.
inline absl::Status AddMinValues(PoolTemplate& p, std::string_view key, int32_t min_values) {
  return p.requirements.Add(apis::core::NodeSelectorRequirement{
      std::string(key), apis::core::SelectorOperator::kExists, {}, min_values});
}

// Adds a template label to a pool (as label and as In requirement, as the solver expects).
inline void PoolLabel(PoolTemplate& p, const std::string& key, const std::string& value) {
  p.labels[key] = value;
  p.requirements.Add(scheduling::Requirement::In(key, {value}));
}

inline std::unique_ptr<Pod> MakePod(const std::string& name, const char* cpu, const char* mem,
                                    StringMap labels = {}, const std::string& ns = "default") {
  auto p = std::make_unique<Pod>();
  p->metadata.name = name;
  p->metadata.namespace_ = ns;
  p->metadata.uid = "uid-" + name;
  p->metadata.labels = std::move(labels);
  apis::core::Container c;
  c.name = "app";
  c.resources.requests = {{"cpu", Q(cpu)}, {"memory", Q(mem)}};
  p->spec.containers.push_back(std::move(c));
  return p;
}

inline apis::core::LabelSelector Selector(StringMap labels) {
  apis::core::LabelSelector s;
  s.match_labels = std::move(labels);
  return s;
}

inline apis::core::PodAffinityTerm AffinityTerm(std::string_view key, StringMap selects) {
  apis::core::PodAffinityTerm t;
  t.topology_key = std::string(key);
  t.label_selector = Selector(std::move(selects));
  return t;
}

inline void AddAffinity(Pod& p, std::string_view key, StringMap selects) {
  auto& a = p.spec.affinity ? *p.spec.affinity : p.spec.affinity.emplace();
  auto& pa = a.pod_affinity ? *a.pod_affinity : a.pod_affinity.emplace();
  pa.required.push_back(AffinityTerm(key, std::move(selects)));
}

inline void AddAntiAffinity(Pod& p, std::string_view key, StringMap selects) {
  auto& a = p.spec.affinity ? *p.spec.affinity : p.spec.affinity.emplace();
  auto& pa = a.pod_anti_affinity ? *a.pod_anti_affinity : a.pod_anti_affinity.emplace();
  pa.required.push_back(AffinityTerm(key, std::move(selects)));
}

inline apis::core::TopologySpreadConstraint& AddSpread(Pod& p, std::string_view key, int32_t skew,
                                                       StringMap selects) {
  apis::core::TopologySpreadConstraint c;
  c.topology_key = std::string(key);
  c.max_skew = skew;
  c.label_selector = Selector(std::move(selects));
  p.spec.topology_spread_constraints.push_back(std::move(c));
  return p.spec.topology_spread_constraints.back();
}

inline void AddHostPort(Pod& p, int32_t port) {
  apis::core::ContainerPort cp;
  cp.host_port = port;
  cp.container_port = port;
  p.spec.containers[0].ports.push_back(cp);
}

inline void Tolerate(Pod& p, const std::string& key) {
  p.spec.tolerations.push_back({key, apis::core::TolerationOperator::kExists, "", std::nullopt});
}

inline void RequireNodeAffinity(Pod& p, std::vector<apis::core::NodeSelectorTerm> terms) {
  auto& a = p.spec.affinity ? *p.spec.affinity : p.spec.affinity.emplace();
  auto& na = a.node_affinity ? *a.node_affinity : a.node_affinity.emplace();
  na.required.emplace().terms = std::move(terms);
}

inline ExistingNode Node(const std::string& name, const std::string& zone, const char* cpu,
                         const char* mem, const std::string& pool = "") {
  ExistingNode n;
  n.name = name;
  n.labels = {{std::string(v1::kLabelArch), "amd64"},
              {std::string(v1::kLabelOS), "linux"},
              {std::string(v1::kLabelTopologyZone), zone},
              {std::string(v1::kLabelHostname), name}};
  if (!pool.empty()) n.labels[std::string(v1::kNodePoolLabelKey)] = pool;
  n.allocatable = {{"cpu", Q(cpu)}, {"memory", Q(mem)}, {"pods", Q("110")}};
  n.node_pool = pool;
  return n;
}

// Owns the pods an Input points to.
class Scene {
 public:
  Pod* AddPod(std::unique_ptr<Pod> p) {
    pods_.push_back(std::move(p));
    input.pods.push_back(pods_.back().get());
    return pods_.back().get();
  }
  Pod* AddBound(std::unique_ptr<Pod> p, const std::string& node) {
    p->spec.node_name = node;
    p->status.phase = apis::core::PodPhase::kRunning;
    pods_.push_back(std::move(p));
    input.bound_pods.push_back(pods_.back().get());
    return pods_.back().get();
  }
  Pod* AddDaemonSet(std::unique_ptr<Pod> p, const std::string& name) {
    pods_.push_back(std::move(p));
    input.daemon_sets.push_back({name, pods_.back().get()});
    return pods_.back().get();
  }
  // Adds `n` pods named prefix-i; `edit` customises each.
  template <typename Edit>
  std::vector<Pod*> AddPods(int n, const std::string& prefix, const char* cpu, const char* mem,
                            const StringMap& labels, Edit edit) {
    std::vector<Pod*> out;
    for (int i = 0; i < n; ++i) {
      Pod* p = AddPod(MakePod(absl::StrCat(prefix, "-", i), cpu, mem, labels));
      edit(*p);
      out.push_back(p);
    }
    return out;
  }
  std::vector<Pod*> AddPods(int n, const std::string& prefix, const char* cpu, const char* mem,
                            const StringMap& labels = {}) {
    return AddPods(n, prefix, cpu, mem, labels, [](Pod&) {});
  }

  Input input;

 private:
  std::vector<std::unique_ptr<Pod>> pods_;
};

}  // namespace dovetail::solver::test_builders

namespace dovetail::solver {

// The solver's own tests live in dovetail::solver and use the builders unqualified.
using test_builders::AddAffinity;
using test_builders::AddAntiAffinity;
using test_builders::AddHostPort;
using test_builders::AddMinValues;
using test_builders::AddSpread;
using test_builders::AffinityTerm;
using test_builders::kHost;
using test_builders::kZone;
using test_builders::LimitedPool;
using test_builders::MakePod;
using test_builders::MakeType;
using test_builders::Node;
using test_builders::Pool;
using test_builders::PoolLabel;
using test_builders::Q;
using test_builders::RequireNodeAffinity;
using test_builders::Scene;
using test_builders::Selector;
using test_builders::SmallCatalog;
using test_builders::Tolerate;
using test_builders::Type;
using test_builders::TypeSpec;

}  // namespace dovetail::solver
