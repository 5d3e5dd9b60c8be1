// Offline simulation (`dovetail simulate`): reads ordinary Kubernetes manifests (NodePools,
// EC2NodeClasses, Pods, Deployments, ReplicaSets, StatefulSets, Jobs, DaemonSets, Nodes, pods bound
// to nodes, PVCs, PVs, StorageClasses, Namespaces; older Karpenter API versions are converted to
// v1 first, as `dovetail convert` does), builds the solver's input against an instance
// catalog (the built-in kwok catalog or a catalog file in the AWS CSV format), solves, and renders
// the plan as the stable JSON of docs/simulate.md or as a table for people.
//
// Errors name the object and the file position: an unknown kind, an invalid NodePool, an
// unparseable quantity. Pure apart from reading the named files; thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/apis/core/manifest.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/cloudprovider/catalog.h"
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

// The objects of one simulation, owning everything the solver input points into.
class Scenario {
 public:
  // Decodes `manifests` (in order). Errors: InvalidArgument naming "<file>:<line>: Kind/name".
  static absl::StatusOr<std::unique_ptr<Scenario>> FromManifests(
      const std::vector<apis::core::Manifest>& manifests);
  static absl::StatusOr<std::unique_ptr<Scenario>> FromFiles(const std::vector<std::string>& paths);

  // Builds the solver input for `catalog` (which must outlive the input). With `spec` (the
  // catalog's source), a NodePool whose EC2NodeClass is in the scenario and changes capacity
  // or overhead (block devices, AMI family, kubelet maxPods, podsPerCore, reserved, evictionHard)
  // gets the catalog loaded again for that class, as the controller computes it. Errors:
  // InvalidArgument for a pool's bad requirements or a class's bad kubelet quantities.
  absl::StatusOr<solver::Input> BuildInput(const cloudprovider::Catalog& catalog,
                                           const solver::Options& options,
                                           const CatalogSpec* spec = nullptr) const;

  const std::vector<std::unique_ptr<apis::core::Pod>>& pending_pods() const { return pending_; }
  const std::vector<std::unique_ptr<apis::core::Pod>>& bound_pods() const { return bound_; }
  size_t node_pool_count() const;

  struct Impl;
  ~Scenario();

 private:
  Scenario();
  // FromManifests' steps: one manifest into the scenario (NodePools and EC2NodeClasses also into
  // `karpenter`, to validate together); a pod into pending or bound by its nodeName.
  absl::Status Add(const apis::core::Manifest& m, std::vector<apis::core::Manifest>* karpenter);
  void AddPod(std::unique_ptr<apis::core::Pod> p);
  // The catalog of `pool`'s EC2NodeClass when it shapes the types, else null.
  absl::StatusOr<const cloudprovider::Catalog*> ClassCatalog(const apis::v1::NodePool& pool,
                                                             const CatalogSpec* spec) const;
  std::unique_ptr<Impl> impl_;
  std::vector<std::unique_ptr<apis::core::Pod>> pending_;
  std::vector<std::unique_ptr<apis::core::Pod>> bound_;
};

struct Result {
  solver::Plan plan;
  double solve_seconds = 0;
  double lower_bound_seconds = 0;  // the part of solve_seconds spent on the LP bound
  // Pods already on existing nodes, by node name (for the output's existingNodes).
  std::vector<std::pair<std::string, std::vector<const apis::core::Pod*>>> bound_by_node;
};

// Runs the solver on the scenario. Errors: as Scenario::BuildInput and solver::Solve.
absl::StatusOr<Result> Run(const Scenario& scenario, const cloudprovider::Catalog& catalog,
                           const solver::Options& options, const CatalogSpec* spec = nullptr);

// The stable JSON of docs/simulate.md.
nlohmann::json ToJson(const Result& result);
// A table for people: one line per node (cost per hour and month, utilisation) and a summary.
std::string ToTable(const Result& result);

}  // namespace dovetail::simulate
