// `dovetail simulate`: plans nodes for the workloads in manifest files, offline (docs/simulate.md).

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "dovetail/cli/commands.h"
#include "dovetail/simulate/simulation.h"

namespace dovetail::cli {

namespace {

struct SimulateFlags {
  std::vector<std::string> files;
  simulate::CatalogSpec catalog;
  std::string zones;
  std::string output = "table";
  bool ignore_preferences = false;
  bool best_effort_min_values = false;
  bool no_lower_bound = false;
};

int RunSimulate(const SimulateFlags& f) {
  simulate::CatalogSpec spec = f.catalog;
  if (!f.zones.empty()) spec.zones = absl::StrSplit(f.zones, ',', absl::SkipEmpty());
  auto catalog = simulate::LoadCatalog(spec);
  if (!catalog.ok()) {
    std::cerr << "error: catalog: " << catalog.status().message() << "\n";
    return 1;
  }
  auto scenario = scenario::ManifestScenario::FromFiles(f.files, absl::Now());
  if (!scenario.ok()) {
    std::cerr << "error: " << scenario.status().message() << "\n";
    return 1;
  }
  if ((*scenario)->scenario().node_pools.empty()) {
    std::cerr << "warning: no NodePool in the input; every pod will be unschedulable\n";
  }
  solver::Options options;
  options.respect_preferences = !f.ignore_preferences;
  options.min_values_strict = !f.best_effort_min_values;
  options.lower_bound = !f.no_lower_bound;
  auto result = simulate::Run(**scenario, *catalog, options, &spec);
  if (!result.ok()) {
    std::cerr << "error: " << result.status().message() << "\n";
    return 1;
  }
  if (f.output == "json") {
    std::cout << simulate::ToJson(*result).dump(2) << "\n";
  } else {
    std::cout << simulate::ToTable(*result);
  }
  return 0;
}

}  // namespace

void RegisterSimulateCommand(CLI::App& app, ExitCode& exit_code) {
  auto flags = std::make_shared<SimulateFlags>();
  auto* cmd = app.add_subcommand(
      "simulate", "Plan the nodes Dovetail would launch for the pods in manifest files");
  cmd->add_option("-f,--filename", flags->files, "Manifest file (YAML or JSON); repeatable")
      ->required();
  cmd->add_option("--catalog", flags->catalog.catalog,
                  "Instance catalog: 'kwok' (synthetic, built in), 'aws' (the AWS catalog and "
                  "on-demand prices built in) or an instance-types CSV / directory");
  cmd->add_option("--prices", flags->catalog.prices,
                  "On-demand prices CSV (region,instance_type,usd_per_hour)");
  cmd->add_option("--spot-prices", flags->catalog.spot_prices,
                  "Spot prices CSV (region,zone,instance_type,usd_per_hour)");
  cmd->add_option("--region", flags->catalog.region,
                  "Region (default us-east-1; kwok: test-region)");
  cmd->add_option("--zones", flags->zones, "Zones, comma separated (default: the region's a,b,c)");
  cmd->add_option("-o,--output", flags->output, "Output format")
      ->check(CLI::IsMember({"json", "table"}));
  cmd->add_flag("--ignore-preferences", flags->ignore_preferences,
                "PREFERENCE_POLICY=Ignore: drop preferred affinities and ScheduleAnyway spreads");
  cmd->add_flag("--min-values-best-effort", flags->best_effort_min_values,
                "MIN_VALUES_POLICY=BestEffort");
  cmd->add_flag("--no-lower-bound", flags->no_lower_bound, "Skip the LP lower bound");
  cmd->callback([flags, &exit_code] { exit_code.value = RunSimulate(*flags); });
}

}  // namespace dovetail::cli
