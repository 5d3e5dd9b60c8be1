// Offline simulation (`dovetail simulate`): the Scenario read from manifest files
// (scenario/from_manifests.h) gets its instance types from a catalog (the built-in kwok or AWS
// catalog, or catalog files in the AWS CSV format) and is solved through the controller's one
// solver input (scenario/solver_input.h); the plan is rendered as the stable JSON of
// docs/simulate.md or as a table for people.
//
// Pure apart from reading the named files; thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/cloudprovider/catalog.h"
#include "dovetail/scenario/from_manifests.h"
#include "dovetail/scenario/solver_input.h"
#include "dovetail/solver/solver.h"
#include "nlohmann/json.hpp"

namespace dovetail::simulate {

struct CatalogSpec {
  // "kwok" for the built-in synthetic catalog, "aws" for the AWS catalog and on-demand prices
  // compiled in (cloudprovider/aws_static_data.h), or the path of an instance-types CSV (or of a
  // directory holding instance-types.csv, on-demand-prices.csv and optionally spot-prices.csv
  // and offerings.csv).
  std::string catalog = "kwok";
  std::string prices;       // on-demand prices CSV (region,instance_type,usd_per_hour)
  std::string spot_prices;  // spot prices CSV (region,zone,instance_type,usd_per_hour)
  // Default: offerings.csv's region, else us-east-1 for CSV catalogs; test-region for kwok.
  std::string region;
  std::vector<std::string> zones;  // default: offerings.csv's zones, else the region's a, b and c
};

// `capacity`: how an EC2NodeClass shapes the types (cloudprovider/aws_node_class_capacity.h); the
// AWS-format catalogs only (the synthetic kwok catalog ignores it).
absl::StatusOr<cloudprovider::Catalog> LoadCatalog(
    const CatalogSpec& spec, const cloudprovider::CapacityOptions& capacity = {});

// What a simulation solved, owning everything `plan` points into.
struct Result {
  solver::Plan plan;  // the ignored pods (scenario/pod_filter.h) are among plan.unschedulable
  double solve_seconds = 0;
  double lower_bound_seconds = 0;  // the part of solve_seconds spent on the LP bound
  // Pods already on existing nodes, by node name (for the output's existingNodes).
  std::vector<std::pair<std::string, std::vector<const apis::core::Pod*>>> bound_by_node;
  std::shared_ptr<const scenario::SolverQuestion> question;
};

// Gives every NodePool of `manifests` the types of `catalog` (a CloudProvider's GetInstanceTypes
// offline). With `spec` (the catalog's source), a NodePool whose EC2NodeClass is in the scenario
// and changes capacity or overhead (block devices, AMI family, kubelet maxPods, podsPerCore,
// reserved, evictionHard) gets the catalog loaded again for that class, as the controller
// computes it. Errors: InvalidArgument for a class's bad kubelet quantities; LoadCatalog's.
absl::Status SetInstanceTypes(scenario::ManifestScenario& manifests,
                              const cloudprovider::Catalog& catalog,
                              const CatalogSpec* spec = nullptr);

// Solves the scenario's one solver question (scenario/solver_input.h BuildSolverInput, NodePools
// without a Ready condition used), timing the plan and its lower bound. Errors: InvalidArgument
// for a NodePool whose requirements do not parse; solver::Solve's.
absl::StatusOr<Result> Solve(const scenario::Scenario& scenario, const solver::Options& options);

// SetInstanceTypes, then Solve.
absl::StatusOr<Result> Run(scenario::ManifestScenario& manifests,
                           const cloudprovider::Catalog& catalog, const solver::Options& options,
                           const CatalogSpec* spec = nullptr);

// The stable JSON of docs/simulate.md.
nlohmann::json ToJson(const Result& result);
// A table for people: one line per node (cost per hour and month, utilisation) and a summary.
std::string ToTable(const Result& result);

}  // namespace dovetail::simulate
