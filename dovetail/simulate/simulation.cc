#include "dovetail/simulate/simulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/cloudprovider/aws_node_class_capacity.h"
#include "dovetail/cloudprovider/aws_static_data.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/common/input_limits.h"
#include "dovetail/scenario/pool_template.h"

namespace dovetail::simulate {

namespace core = apis::core;
namespace v1 = apis::v1;
namespace awsv1 = apis::aws::v1;

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

namespace {

// The catalog `pool`'s EC2NodeClass gives when it shapes the types (see SetInstanceTypes), else
// null. `loaded` keeps each class's catalog once.
absl::StatusOr<const cloudprovider::Catalog*> ClassCatalog(
    const v1::NodePool& pool, const std::vector<awsv1::EC2NodeClass>& classes,
    const CatalogSpec* spec, std::map<std::string, cloudprovider::Catalog>& loaded) {
  const auto& ref = pool.spec.template_.spec.node_class_ref;
  if (spec == nullptr || spec->catalog.empty() || spec->catalog == "kwok" || !ref.has_value() ||
      ref->kind != "EC2NodeClass") {
    return nullptr;
  }
  auto nc = std::find_if(classes.begin(), classes.end(), [&](const awsv1::EC2NodeClass& c) {
    return c.metadata.name == ref->name;
  });
  if (nc == classes.end()) return nullptr;
  if (auto it = loaded.find(nc->metadata.name); it != loaded.end()) return &it->second;
  absl::StatusOr<cloudprovider::CapacityOptions> shape = cloudprovider::NodeClassCapacity(nc->spec);
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("EC2NodeClass/", nc->metadata.name, ": ", shape.status().message()));
  }
  if (*shape == cloudprovider::CapacityOptions{}) return nullptr;
  absl::StatusOr<cloudprovider::Catalog> catalog = LoadCatalog(*spec, *shape);
  if (!catalog.ok()) return catalog.status();
  return &loaded.emplace(nc->metadata.name, *std::move(catalog)).first->second;
}

}  // namespace

absl::Status SetInstanceTypes(scenario::ManifestScenario& manifests,
                              const cloudprovider::Catalog& catalog, const CatalogSpec* spec) {
  scenario::Scenario& s = manifests.scenario();
  std::map<std::string, cloudprovider::Catalog> loaded;
  for (const auto& [name, pool] : s.node_pools) {
    absl::StatusOr<const cloudprovider::Catalog*> shaped =
        ClassCatalog(pool, manifests.node_classes(), spec, loaded);
    if (!shaped.ok()) return shaped.status();
    const cloudprovider::Catalog& types = *shaped != nullptr ? **shaped : catalog;
    s.instance_types[name] = std::vector<cloudprovider::InstanceTypePtr>(
        types.instance_types().begin(), types.instance_types().end());
  }
  return absl::OkStatus();
}

absl::StatusOr<Result> Solve(const scenario::Scenario& scenario, const solver::Options& options) {
  auto q = std::make_shared<scenario::SolverQuestion>(
      scenario::BuildSolverInput(scenario, {.require_ready_node_pools = false, .solver = options}));
  for (const scenario::SkippedNodePool& skipped : q->skipped) {
    if (skipped.why == scenario::SkippedNodePool::Why::kInvalid) return skipped.error;
  }
  solver::Input& input = q->input;
  Result result;
  // The plan, then its bound, each timed (the bound's time is part of solve_seconds).
  const bool bound = input.options.lower_bound;
  input.options.lower_bound = false;
  auto start = std::chrono::steady_clock::now();
  auto plan = solver::Solve(input);
  if (!plan.ok()) return plan.status();
  result.plan = std::move(*plan);
  auto bound_start = std::chrono::steady_clock::now();
  if (bound) {
    absl::StatusOr<double> lower_bound = solver::LowerBound(input, result.plan);
    if (lower_bound.ok()) {
      result.plan.lower_bound = *lower_bound;
    } else {
      result.plan.lower_bound_error = std::string(lower_bound.status().message());
    }
  }
  const auto end = std::chrono::steady_clock::now();
  input.options.lower_bound = bound;
  result.solve_seconds = std::chrono::duration<double>(end - start).count();
  result.lower_bound_seconds = std::chrono::duration<double>(end - bound_start).count();
  // The pods the controller would not provision for are unschedulable here, with its reason.
  for (const scenario::IgnoredPod& ignored : q->ignored) {
    result.plan.unschedulable.push_back(
        {ignored.pod.get(), ignored.silent ? "the pod opts out of Karpenter "
                                             "(karpenter.sh/nodepool DoesNotExist)"
                                           : ignored.message});
  }
  std::map<std::string, std::vector<const core::Pod*>> by_node;
  for (const auto& n : q->existing.nodes) by_node[n.name];
  for (const auto& p : q->existing.pods) by_node[p->spec.node_name].push_back(p.get());
  for (auto& [name, pods] : by_node) result.bound_by_node.emplace_back(name, std::move(pods));
  result.question = std::move(q);
  return result;
}

absl::StatusOr<Result> Run(scenario::ManifestScenario& manifests,
                           const cloudprovider::Catalog& catalog, const solver::Options& options,
                           const CatalogSpec* spec) {
  if (absl::Status s = SetInstanceTypes(manifests, catalog, spec); !s.ok()) return s;
  return Solve(manifests.scenario(), options);
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
    j["effectivePricePerHour"] = Round6(c.effective_price);
    j["instanceTypeOptions"] = nlohmann::json::array();
    for (const auto& it : c.instance_types) j["instanceTypeOptions"].push_back(it->name());
    j["labels"] = nlohmann::json::object();
    for (const auto& [k, v] : c.labels) j["labels"][k] = v;
    // The keys that only let DaemonSets selecting them count are not a new node's labels.
    for (std::string_view key : scenario::kInternalRequirementKeys) {
      j["labels"].erase(std::string(key));
    }
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
  out["totalEffectivePricePerHour"] = Round6(r.plan.total_effective_price);
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
  // The nodes' own costs (volumes, public IPv4) where the catalog prices them.
  if (r.plan.total_effective_price > r.plan.total_price + 5e-5) {
    absl::StrAppendFormat(&out, ", effective $%.4f/hour ($%.2f/month)",
                          r.plan.total_effective_price, r.plan.total_effective_price * 730);
  }
  if (r.plan.lower_bound) {
    absl::StrAppendFormat(&out, ", lower bound $%.4f/hour", *r.plan.lower_bound);
    if (*r.plan.lower_bound > 0) {
      absl::StrAppendFormat(&out, " (plan/bound %.3f)",
                            r.plan.total_effective_price / *r.plan.lower_bound);
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
