// The cost report of a running cluster: what every machine costs per hour (its offering's price:
// instance type x zone x capacity type), how full it is (pod requests / allocatable, the way
// eks-node-viewer shows it), and the totals per NodePool and for the cluster, per hour and per
// month. `dovetail cost` prints it (dovetail/cli/cost.cc, docs/cost.md) and the controller exports
// the same totals as the dovetail_*_cost_per_hour gauges (dovetail/operator/operator.cc); both
// go through Compute() below, fed by MachinesFromCluster() (from_state.h).
//
// Rules:
//   - A machine's price is that of the catalog offering with its instance type, zone and
//     capacity type; with no such offering (an unknown type, a missing label, a NodeClaim not
//     launched yet) the price is unknown: shown as "?", left out of the totals and counted in
//     `unpricedNodes`, with a note.
//   - A NodeClaim that is launched but whose Node has not registered yet costs like a node (the
//     instance runs); it is marked `launched` (a `*` in the table). A NodeClaim not launched yet
//     costs nothing and is marked `launching`.
//   - Month = 730 hours (as AWS bills); monthly cost = hourly x 730.
//   - Utilisation = requests of the non-terminal pods bound to the node / allocatable, per
//     resource; unset (null) when allocatable is zero.
// Pure functions over values; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/cloudprovider/catalog.h"
#include "nlohmann/json.hpp"

namespace dovetail::cost {

inline constexpr double kHoursPerMonth = 730;

enum class MachineStatus {
  kRegistered,  // a registered Node (or a Node Karpenter does not manage)
  kLaunched,    // a NodeClaim with an instance behind it, its Node not registered yet
  kLaunching,   // a NodeClaim not launched yet (no provider id): no cost
};
std::string_view MachineStatusName(MachineStatus status);

// One machine as the report needs it (a Node, a NodeClaim, or both).
struct Machine {
  std::string name;        // the Node's name, else the NodeClaim's
  std::string node_claim;  // "" for nodes Karpenter does not manage
  std::string node_pool;   // karpenter.sh/nodepool; "" when unmanaged
  std::string instance_type;
  std::string capacity_type;
  std::string zone;
  MachineStatus status = MachineStatus::kRegistered;
  bool deleting = false;
  absl::Time created = absl::InfinitePast();
  int64_t cpu_requested_milli = 0;
  int64_t cpu_allocatable_milli = 0;
  int64_t memory_requested_bytes = 0;
  int64_t memory_allocatable_bytes = 0;
  int64_t pods = 0;
};

// USD per hour of (instance type, zone, capacity type); nullopt when unknown.
using PriceLookup = std::function<std::optional<double>(
    std::string_view instance_type, std::string_view zone, std::string_view capacity_type)>;

// The price of the catalog's offering with this zone and capacity type; nullopt when the type or
// the offering is missing, or the offering is unavailable with no price (price 0).
std::optional<double> OfferingPrice(const cloudprovider::Catalog& catalog,
                                    std::string_view instance_type, std::string_view zone,
                                    std::string_view capacity_type);
// A lookup over `catalog`, which must outlive it.
PriceLookup CatalogPriceLookup(const cloudprovider::Catalog& catalog);

struct MachineCost {
  Machine machine;
  std::optional<double> price_per_hour;  // nullopt: unknown (or launching)
  absl::Duration age;
  std::optional<double> cpu_utilisation;  // 0..1 (may exceed 1 when overcommitted)
  std::optional<double> memory_utilisation;
};

struct Totals {
  std::string node_pool;  // "" for the cluster total and for unmanaged nodes
  int64_t nodes = 0;      // every machine, launching ones included
  int64_t priced_nodes = 0;
  int64_t unpriced_nodes = 0;  // launched or registered with no known price
  int64_t launching_nodes = 0;
  double cost_per_hour = 0;
  double cost_per_month = 0;
  int64_t cpu_requested_milli = 0;
  int64_t cpu_allocatable_milli = 0;
  int64_t memory_requested_bytes = 0;
  int64_t memory_allocatable_bytes = 0;
  int64_t pods = 0;
};

struct Report {
  absl::Time generated_at;
  std::vector<MachineCost> machines;  // by NodePool ("" last), then name
  std::vector<Totals> node_pools;     // by name; unmanaged nodes ("") last when there are any
  Totals total;
  std::vector<std::string> notes;
};

struct ComputeOptions {
  // NodePools listed even without machines (zero totals), e.g. every NodePool in the cluster.
  std::vector<std::string> node_pools;
  // When non-empty: only this NodePool's machines and totals.
  std::string only_node_pool;
};

Report Compute(std::vector<Machine> machines, const PriceLookup& prices, absl::Time now,
               const ComputeOptions& options = {});

// The stable JSON of docs/cost.md (apiVersion dovetail.sh/v1alpha1, kind CostReport).
// `cloud_provider` names where the prices came from.
nlohmann::json ToJson(const Report& report, std::string_view cloud_provider);

// A table for people: one line per machine, then one per NodePool and the total, then the notes.
std::string ToTable(const Report& report);

// "45s", "12m", "3h", "5d" (the largest whole unit, as kubectl shows ages).
std::string FormatAge(absl::Duration age);

}  // namespace dovetail::cost
