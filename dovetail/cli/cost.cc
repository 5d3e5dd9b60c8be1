// `dovetail cost`: what the cluster's nodes cost, like eks-node-viewer but printed once (table or
// JSON, docs/cost.md). Reads Nodes, NodeClaims and Pods through the controller's own informers
// into a state::Cluster (so the machines are the ones the controller's cost gauges count),
// NodePools with one list, and prices from the cloud provider's catalog offerings.
#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cli/cluster_provider.h"
#include "dovetail/cli/commands.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/cloudprovider/aws_static_data.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/common/clock.h"
#include "dovetail/cost/cost_report.h"
#include "dovetail/cost/from_state.h"
#include "dovetail/kube/config.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/operator/options.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"

namespace dovetail::cli {
namespace {

struct CostFlags {
  std::string kubeconfig;
  std::string cloud_provider;
  std::string catalog;
  std::string region;
  std::string output = "table";
  std::string node_pool;
  int timeout_seconds = 60;
};

// The most common topology.kubernetes.io/region of the machines; "" when none has one.
std::string ClusterRegion(const state::Cluster& cluster) {
  std::map<std::string, int> count;
  for (const state::StateNode& n : cluster.Nodes()) {
    const apis::core::StringMap labels = n.Labels();
    if (auto it = labels.find(apis::v1::kLabelTopologyRegion); it != labels.end()) {
      ++count[it->second];
    }
  }
  std::string best;
  int best_count = 0;
  for (const auto& [region, c] : count) {
    if (c > best_count) best = region, best_count = c;
  }
  return best;
}

// `directory` empty: the AWS catalog compiled in (cloudprovider/aws_static_data.h).
absl::StatusOr<cloudprovider::Catalog> LoadAwsCatalog(const std::string& directory,
                                                      std::string region,
                                                      const std::vector<cost::Machine>& machines) {
  auto files = directory.empty() ? cloudprovider::BuiltInAwsCatalogFiles()
                                 : cloudprovider::ReadCatalogDirectory(directory);
  if (!files.ok()) return files.status();
  if (region.empty()) region = cloudprovider::OfferingsRegion(*files);
  if (region.empty()) region = "us-east-1";
  cloudprovider::CatalogOptions options;
  options.region = region;
  if (!files->offerings.has_value() || files->offerings->empty()) {
    // Without offerings.csv every type is offered in CatalogOptions::zones: the zones the
    // machines are in (the price model needs the zone; on-demand prices do not depend on it).
    std::set<std::string> zones;
    for (const cost::Machine& m : machines) {
      if (!m.zone.empty()) zones.insert(m.zone);
    }
    options.zones.assign(zones.begin(), zones.end());
  }
  return cloudprovider::BuildCatalog(*files, options);
}

int RunCost(const CostFlags& flags) {
  if (flags.output != "table" && flags.output != "json") {
    std::cerr << "error: -o \"" << flags.output << "\": must be table or json\n";
    return 2;
  }
  auto options = op::OptionsFromEnvironment();
  if (!options.ok()) {
    std::cerr << "error: " << options.status().message() << "\n";
    return 2;
  }
  if (!flags.cloud_provider.empty() && flags.cloud_provider != "kwok" &&
      flags.cloud_provider != "aws") {
    std::cerr << "error: --cloud-provider \"" << flags.cloud_provider
              << "\": must be kwok or aws\n";
    return 2;
  }

  const std::string kubeconfig = flags.kubeconfig.empty() ? options->kubeconfig : flags.kubeconfig;
  absl::StatusOr<kube::RestConfig> config =
      kubeconfig.empty() ? kube::LoadDefaultConfig() : kube::LoadKubeconfigFile(kubeconfig);
  if (!config.ok()) {
    std::cerr << "error: kubeconfig: " << config.status().message() << "\n";
    return 1;
  }
  config->timeout = absl::Seconds(std::max(1, flags.timeout_seconds));
  auto rest = kube::RestClient::Create(*config, kube::RestClientOptions{.max_retries = 2});
  if (!rest.ok()) {
    std::cerr << "error: kubeconfig: " << rest.status().message() << "\n";
    return 1;
  }
  kube::Client client(**rest);

  // NodePools first: one quick request that tells an unreachable API server or missing CRDs
  // apart before the informers start.
  kube::TypedClient<apis::v1::NodePool> node_pools(client, kube::resources::kNodePools);
  auto pools = node_pools.List("");
  if (!pools.ok()) {
    std::cerr << "error: listing NodePools from " << config->server << ": "
              << pools.status().message()
              << " (is the API server reachable and are the karpenter.sh CRDs installed?)\n";
    return 1;
  }
  // Prices come from the provider the cluster runs (cluster_provider.h) unless the flag says.
  std::string provider = flags.cloud_provider;
  if (provider.empty()) provider = CloudProviderOfNodePools(*pools);
  if (provider.empty()) provider = options->cloud_provider;
  std::string catalog_dir = flags.catalog;
  if (catalog_dir.empty()) {
    catalog_dir = provider == "aws" ? options->aws_catalog : options->kwok_catalog;
  }

  std::vector<std::string> pool_names;
  bool pool_found = flags.node_pool.empty();
  for (const apis::v1::NodePool& p : *pools) {
    pool_names.push_back(p.metadata.name);
    if (p.metadata.name == flags.node_pool) pool_found = true;
  }

  RealClock clock;
  state::Cluster cluster(clock);
  // Stopped once synced but kept alive: the cached objects' label keys live in its string pool.
  state::ClusterInformers informers(client, cluster);
  informers.Start();
  const bool synced =
      informers.WaitForSync(absl::Now() + absl::Seconds(std::max(1, flags.timeout_seconds)));
  informers.Stop();
  if (!synced) {
    std::cerr << "error: could not list Nodes, NodeClaims and Pods from " << config->server
              << " within " << flags.timeout_seconds << "s\n";
    return 1;
  }
  std::vector<cost::Machine> machines = cost::MachinesFromCluster(cluster);
  if (!pool_found) {
    bool has_machines = std::any_of(machines.begin(), machines.end(), [&](const cost::Machine& m) {
      return m.node_pool == flags.node_pool;
    });
    if (!has_machines) {
      std::cerr << "error: --nodepool " << flags.node_pool
                << ": no such NodePool and no node of it\n";
      return 1;
    }
  }

  std::string region = flags.region.empty() ? options->aws_region : flags.region;
  absl::StatusOr<cloudprovider::Catalog> catalog;
  if (provider == "aws") {
    if (region.empty()) region = ClusterRegion(cluster);
    catalog = LoadAwsCatalog(catalog_dir, region, machines);
  } else {
    cloudprovider::kwok::KwokCatalogOptions kwok_options;
    if (!flags.region.empty()) kwok_options.region = flags.region;
    catalog = catalog_dir.empty() ? cloudprovider::kwok::SyntheticCatalog(kwok_options)
                                  : cloudprovider::kwok::LoadCatalog(catalog_dir, kwok_options);
  }
  if (!catalog.ok()) {
    std::cerr << "error: catalog"
              << (catalog_dir.empty() ? std::string() : absl::StrCat(" ", catalog_dir)) << ": "
              << catalog.status().message() << "\n";
    return 1;
  }

  cost::Report report =
      cost::Compute(std::move(machines), cost::CatalogPriceLookup(*catalog), absl::Now(),
                    {.node_pools = pool_names, .only_node_pool = flags.node_pool});
  if (flags.output == "json") {
    std::cout << cost::ToJson(report, provider).dump(2) << "\n";
  } else {
    std::cout << cost::ToTable(report);
  }
  return 0;
}

}  // namespace

void RegisterCostCommand(CLI::App& app, ExitCode& exit_code) {
  auto flags = std::make_shared<CostFlags>();
  CLI::App* cmd = app.add_subcommand(
      "cost",
      "What the cluster's nodes cost: instance type, capacity type, zone, age, $/hour and "
      "utilisation per node; totals per NodePool per hour and month (docs/cost.md)");
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  cmd->add_option("--cloud-provider", flags->cloud_provider,
                  "where prices come from: aws or kwok (default: the provider the NodePools' "
                  "node classes belong to, else DOVETAIL_CLOUD_PROVIDER)");
  cmd->add_option("--catalog", flags->catalog,
                  "catalog directory (`dovetail catalog export` format); default for kwok: "
                  "DOVETAIL_KWOK_CATALOG, else the synthetic catalog; for aws: "
                  "DOVETAIL_AWS_CATALOG, else the AWS catalog and static on-demand prices "
                  "built in");
  cmd->add_option("--region", flags->region,
                  "region of the catalog's prices (default: AWS_REGION, the nodes' "
                  "topology.kubernetes.io/region, offerings.csv's region, us-east-1)");
  cmd->add_option("-o,--output", flags->output, "table (default) or json");
  cmd->add_option("--nodepool", flags->node_pool, "only this NodePool's nodes and totals");
  cmd->add_option("--timeout", flags->timeout_seconds,
                  "seconds to wait for the API server (default 60)")
      ->check(CLI::Range(1, 3600));
  cmd->callback([flags, &exit_code] { exit_code.value = RunCost(*flags); });
}

}  // namespace dovetail::cli
