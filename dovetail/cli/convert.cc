// `dovetail convert -f FILE|- [-o yaml|json] [--explain] [--helm-values FILE]`: converts Karpenter
// objects of older API versions (v1alpha5 Provisioner/Machine, v1alpha1 AWSNodeTemplate, v1beta1
// NodePool/EC2NodeClass, the karpenter-global-settings ConfigMap) to v1 (apis/convert/convert.h)
// and prints them to standard output, as YAML documents or a JSON v1 List. The global settings
// become Helm values, written to `--helm-values FILE` (or, without it, to standard error).
// `--explain` prints one line per change to standard error. Exit code 0 on success; 1 when the
// input cannot be read or anything cannot be converted (every error is printed, nothing is
// written).

#include "dovetail/apis/convert/convert.h"

#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "dovetail/apis/core/manifest.h"
#include "dovetail/cli/commands.h"
#include "nlohmann/json.hpp"

namespace dovetail::cli {
namespace {

struct ConvertOptions {
  std::vector<std::string> inputs;
  std::string output = "yaml";
  bool explain = false;
  std::string helm_values;  // file for the Helm values of a global-settings ConfigMap
};

int RunConvert(const ConvertOptions& options) {
  std::vector<nlohmann::json> objects;
  bool read_error = false;
  for (const std::string& input : options.inputs) {
    auto manifests = apis::core::ReadManifests(input);
    if (!manifests.ok()) {
      std::cerr << "error: " << manifests.status().message() << "\n";
      read_error = true;
      continue;
    }
    for (apis::core::Manifest& manifest : *manifests) objects.push_back(std::move(manifest.json));
  }
  if (read_error) return 1;
  apis::convert::ConvertResult result = apis::convert::Convert(objects);
  if (!result.errors.empty()) {
    for (const std::string& error : result.errors) std::cerr << "error: " << error << "\n";
    std::cerr << result.errors.size() << " error(s); nothing converted\n";
    return 1;
  }
  if (!result.helm_values.is_null()) {
    const std::string values = apis::convert::ToYaml({result.helm_values});
    if (options.helm_values.empty()) {
      std::cerr << "# Helm values for charts/dovetail from the karpenter-global-settings ConfigMap "
                   "(pass --helm-values FILE to write them to a file):\n"
                << values;
    } else {
      std::ofstream file(options.helm_values, std::ios::trunc);
      file << "# Helm values for charts/dovetail, converted from karpenter-global-settings.\n"
           << values;
      file.close();
      if (!file) {
        std::cerr << "error: cannot write " << options.helm_values << "\n";
        return 1;
      }
    }
  } else if (!options.helm_values.empty()) {
    std::cerr << "note: no karpenter-global-settings ConfigMap in the input; "
              << options.helm_values << " not written\n";
  }
  if (options.explain) {
    for (const std::string& change : result.changes) std::cerr << change << "\n";
  }
  if (options.output == "json") {
    nlohmann::json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", result.objects}};
    std::cout << list.dump(2) << "\n";
  } else {
    std::cout << apis::convert::ToYaml(result.objects);
  }
  return 0;
}

}  // namespace

void RegisterConvertCommand(CLI::App& app, ExitCode& exit_code) {
  auto options = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Convert Karpenter v1alpha5/v1alpha1/v1beta1 objects to karpenter.sh/v1 and "
      "karpenter.k8s.aws/v1");
  cmd->add_option("-f,--filename", options->inputs,
                  "Manifest file or - for standard input; repeatable (all files are converted "
                  "together, so pools and their node classes may be in different files)")
      ->required()
      ->allow_extra_args(false);
  cmd->add_option("-o,--output", options->output, "Output format: yaml or json (a v1 List)")
      ->check(CLI::IsMember({"yaml", "json"}));
  cmd->add_flag("--explain", options->explain, "List every change on standard error");
  cmd->add_option("--helm-values", options->helm_values,
                  "Write the Helm values (settings.*) converted from a karpenter-global-settings "
                  "ConfigMap to this file (default: standard error)");
  cmd->callback([options, &exit_code] { exit_code.value = RunConvert(*options); });
}

}  // namespace dovetail::cli
