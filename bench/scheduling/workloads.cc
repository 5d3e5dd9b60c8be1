#include "bench/scheduling/workloads.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/generated_cluster.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/cloudprovider/aws_static_data.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/common/quantity.h"

namespace dovetail::bench {
namespace {

using apis::core::LabelSelector;
using apis::core::Pod;
using cloudprovider::InstanceType;
using cloudprovider::InstanceTypeOverhead;
using cloudprovider::Offering;
using cloudprovider::Offerings;
using scheduling::Requirement;
using scheduling::Requirements;
namespace v1 = apis::v1;

std::unique_ptr<Pod> BasePod(const std::string& prefix, int index, Rng& rng) {
  auto p = std::make_unique<Pod>();
  p->metadata.name = absl::StrCat(prefix, "-", index);
  p->metadata.namespace_ = "default";
  p->metadata.uid = absl::StrFormat("%s-%08d", prefix, index);
  apis::core::Container c;
  c.name = "app";
  c.resources.requests = {
      {"cpu", Quantity::FromMilli(rng.Pick(kCpuChoices))},
      {"memory", Quantity::FromUnits(rng.Pick(kMemoryChoices) << 20, QuantityFormat::kBinarySI)}};
  p->spec.containers.push_back(std::move(c));
  return p;
}

LabelSelector Selects(const std::string& key, const std::string& value) {
  return LabelSelector{{{key, value}}, {}};
}

apis::core::PodAffinityTerm Term(std::string_view topology_key, LabelSelector selector) {
  apis::core::PodAffinityTerm t;
  t.topology_key = std::string(topology_key);
  t.label_selector = std::move(selector);
  return t;
}

apis::core::TopologySpreadConstraint Spread(std::string_view topology_key, LabelSelector selector,
                                            apis::core::UnsatisfiableConstraintAction action) {
  apis::core::TopologySpreadConstraint c;
  c.max_skew = 1;
  c.topology_key = std::string(topology_key);
  c.when_unsatisfiable = action;
  c.label_selector = std::move(selector);
  return c;
}

// Block of `n` items split into `parts` equal contiguous blocks: which block `i` is in.
int Part(int i, int n, int parts) { return static_cast<int>(static_cast<int64_t>(i) * parts / n); }

}  // namespace

std::vector<const Pod*> PodSet::Pointers() const {
  std::vector<const Pod*> out;
  out.reserve(pods.size());
  for (const auto& p : pods) out.push_back(p.get());
  return out;
}

void PodSet::Append(PodSet other) {
  for (auto& p : other.pods) pods.push_back(std::move(p));
}

std::vector<cloudprovider::InstanceTypePtr> LinearCatalog(int count) {
  std::vector<std::string> zones(std::begin(kLinearZones), std::end(kLinearZones));
  std::vector<cloudprovider::InstanceTypePtr> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) {
    const int64_t vcpu = i + 1;
    const std::string name = absl::StrFormat("linear-%04d", i + 1);
    const double on_demand = kLinearOnDemandPerVcpu * static_cast<double>(vcpu);
    std::vector<Offering> offerings;
    for (size_t z = 0; z < zones.size(); ++z) {
      offerings.push_back(Offering::Make(v1::kCapacityTypeOnDemand, zones[z], "", on_demand, true));
      if (static_cast<int>(z) < kLinearSpotZones) {
        offerings.push_back(Offering::Make(v1::kCapacityTypeSpot, zones[z], "",
                                           on_demand * kLinearSpotFactor, true));
      }
    }
    Requirements reqs;
    reqs.Add(Requirement::In(std::string(v1::kLabelInstanceType), {name}));
    reqs.Add(Requirement::In(std::string(v1::kLabelArch), {v1::kArchitectureAmd64}));
    reqs.Add(Requirement::In(std::string(v1::kLabelOS), {v1::kOSLinux}));
    reqs.Add(Requirement::In(std::string(v1::kLabelTopologyZone), zones));
    reqs.Add(Requirement::In(std::string(v1::kCapacityTypeLabelKey),
                             {v1::kCapacityTypeOnDemand, v1::kCapacityTypeSpot}));
    ResourceList capacity{
        {"cpu", Quantity::FromUnits(vcpu)},
        {"memory", Quantity::FromUnits((2 * vcpu) << 30, QuantityFormat::kBinarySI)},
        {"pods", Quantity::FromUnits(10 * vcpu)}};
    out.push_back(std::make_shared<InstanceType>(name, std::move(reqs),
                                                 Offerings(std::move(offerings)),
                                                 std::move(capacity), InstanceTypeOverhead{}));
  }
  return out;
}

solver::PoolTemplate UnconstrainedPool(const std::string& name,
                                       std::vector<cloudprovider::InstanceTypePtr> types) {
  solver::PoolTemplate p;
  p.name = name;
  p.requirements.Add(Requirement::In(std::string(v1::kNodePoolLabelKey), {name}));
  p.instance_types = std::move(types);
  return p;
}

absl::StatusOr<cloudprovider::Catalog> AwsCatalog() {
  const absl::StatusOr<cloudprovider::CatalogFiles>& files =
      cloudprovider::BuiltInAwsCatalogFiles();
  if (!files.ok()) return files.status();
  return cloudprovider::BuildCatalog(*files, cloudprovider::CatalogOptions{});
}

PodSet DiversePods(int n, uint64_t seed) {
  static constexpr const char* kFifths[] = {"generic", "zonal-spread", "hostname-spread",
                                            "zonal-affinity", "hostname-anti-affinity"};
  Rng rng(seed);
  PodSet set;
  set.pods.reserve(n);
  for (int i = 0; i < n; ++i) {
    const int fifth = Part(i, n, 5);
    const std::string app = kFifths[fifth];
    auto p = BasePod("diverse", i, rng);
    p->metadata.labels["app"] = app;
    switch (fifth) {
      case 0:
        break;
      case 1:
        p->spec.topology_spread_constraints.push_back(
            Spread(v1::kLabelTopologyZone, Selects("app", app),
                   apis::core::UnsatisfiableConstraintAction::kDoNotSchedule));
        break;
      case 2:
        p->spec.topology_spread_constraints.push_back(
            Spread(v1::kLabelHostname, Selects("app", app),
                   apis::core::UnsatisfiableConstraintAction::kDoNotSchedule));
        break;
      case 3: {
        const std::string group = absl::StrCat("group-", rng.Next() % kAffinityLabelValues);
        p->metadata.labels["affinity-group"] = group;
        p->spec.affinity.emplace().pod_affinity.emplace().required.push_back(
            Term(v1::kLabelTopologyZone, Selects("affinity-group", group)));
        break;
      }
      case 4:
        p->spec.affinity.emplace().pod_anti_affinity.emplace().required.push_back(
            Term(v1::kLabelHostname, Selects("app", app)));
        break;
    }
    set.pods.push_back(std::move(p));
  }
  return set;
}

PodSet PreferencePods(int n, uint64_t seed) {
  static constexpr const char* kThirds[] = {"preferred-node-affinity", "preferred-anti-affinity",
                                            "schedule-anyway-spread"};
  Rng rng(seed);
  PodSet set;
  set.pods.reserve(n);
  for (int i = 0; i < n; ++i) {
    const int third = Part(i, n, 3);
    const std::string app = kThirds[third];
    auto p = BasePod("preference", i, rng);
    p->metadata.labels["app"] = app;
    switch (third) {
      case 0: {
        auto& na = p->spec.affinity.emplace().node_affinity.emplace();
        apis::core::PreferredSchedulingTerm arm;
        arm.weight = 100;
        arm.preference.match_expressions.push_back({std::string(v1::kLabelArch),
                                                    apis::core::SelectorOperator::kIn,
                                                    {std::string(v1::kArchitectureArm64)},
                                                    std::nullopt});
        apis::core::PreferredSchedulingTerm zone;
        zone.weight = 50;
        zone.preference.match_expressions.push_back({std::string(v1::kLabelTopologyZone),
                                                     apis::core::SelectorOperator::kIn,
                                                     {kLinearZones[0]},
                                                     std::nullopt});
        na.preferred = {arm, zone};
        break;
      }
      case 1: {
        const std::string group = absl::StrCat("group-", rng.Next() % kPreferenceAntiGroups);
        p->metadata.labels["anti-group"] = group;
        apis::core::WeightedPodAffinityTerm w;
        w.weight = 100;
        w.term = Term(v1::kLabelHostname, Selects("anti-group", group));
        p->spec.affinity.emplace().pod_anti_affinity.emplace().preferred.push_back(w);
        break;
      }
      case 2:
        p->spec.topology_spread_constraints.push_back(
            Spread(v1::kLabelTopologyZone, Selects("app", app),
                   apis::core::UnsatisfiableConstraintAction::kScheduleAnyway));
        break;
    }
    set.pods.push_back(std::move(p));
  }
  return set;
}

PodSet AntiAffinityPods(int n, uint64_t seed) {
  Rng rng(seed);
  PodSet set;
  set.pods.reserve(n);
  for (int i = 0; i < n; ++i) {
    auto p = BasePod("anti", i, rng);
    p->metadata.labels["app"] = "anti";
    p->spec.affinity.emplace().pod_anti_affinity.emplace().required.push_back(
        Term(v1::kLabelHostname, Selects("app", "anti")));
    set.pods.push_back(std::move(p));
  }
  return set;
}

PodSet MixedPods(int n, uint64_t seed) {
  Rng rng(seed);
  PodSet set;
  set.pods.reserve(n);
  for (int i = 0; i < n; ++i) {
    auto p = BasePod("mixed", i, rng);
    p->metadata.labels["app"] = absl::StrCat("mixed-", i % 20);
    set.pods.push_back(std::move(p));
  }
  return set;
}

}  // namespace dovetail::bench
