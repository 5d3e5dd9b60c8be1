// `dovetail hash -f FILE|DIR|- ... [-o text|json] [--cluster-ca-bundle B64]`: prints the drift
// hash of each NodePool (karpenter.sh/nodepool-hash, version v3) and EC2NodeClass
// (karpenter.k8s.aws/ec2nodeclass-hash, version v5) in the files, as upstream Karpenter and
// Dovetail stamp them (apis/hash/drift_hash.h), so an operator can see why a NodeClaim is or is
// not drifted: it is when its annotation differs from its NodePool's or EC2NodeClass's under the
// same version. The CRD defaults the API server applies are applied first (expireAfter: 720h,
// the metadata options), so a manifest hashes as the object it creates. The EC2NodeClass hash
// mixes in the cluster's CA bundle: pass the one the controller uses (CLUSTER_CA_BUNDLE, else its
// Kubernetes CA, base64), which `kubectl config view --raw -o
// jsonpath='{.clusters[0].cluster.certificate-authority-data}'` prints.
//
// Text: one line per object, `KIND NAME HASH VERSION`; json: a list of
// {"kind","name","hash","hashVersion"}. Other kinds are skipped; NodePools and EC2NodeClasses of
// older API versions are errors (convert them first, `dovetail convert`). Exit code 0, or 1 when
// a file cannot be read or an object cannot be decoded or hashed (printed to stderr).

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/manifest.h"
#include "dovetail/apis/hash/drift_hash.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cli/commands.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "nlohmann/json.hpp"

namespace dovetail::cli {
namespace {

namespace fs = std::filesystem;

struct HashOptions {
  std::vector<std::string> inputs;
  std::string output = "text";
  std::string ca_bundle;
};

struct Hashed {
  std::string kind, name, hash, version;
};

std::vector<std::string> Files(const std::vector<std::string>& inputs,
                               std::vector<std::string>& errors) {
  std::vector<std::string> out;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (input == "-" || !fs::is_directory(input, ec)) {
      out.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    for (fs::recursive_directory_iterator it(input, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string ext = it->path().extension().string();
      if (it->is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
        found.push_back(it->path().string());
      }
    }
    if (ec) errors.push_back(Cat("cannot read directory ", input, ": ", ec.message()));
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

// The object's hash, or an error naming what does not decode or hash.
absl::StatusOr<Hashed> HashOne(const apis::core::Manifest& m, std::string_view ca_bundle) {
  if (m.kind == "NodePool") {
    if (m.api_version != "karpenter.sh/v1") {
      return absl::InvalidArgumentError(
          Cat(m.api_version, " is not hashed; convert it first (dovetail convert)"));
    }
    apis::v1::NodePool pool;
    RETURN_IF_ERROR(apis::core::DecodeJson(m.json, pool));
    apis::v1::ApplyDefaults(pool);
    ASSIGN_OR_RETURN(std::string hash, apis::v1::TemplateHash(pool));
    return Hashed{m.kind, m.name, std::move(hash), std::string(apis::hash::kNodePoolHashVersion)};
  }
  if (m.api_version != "karpenter.k8s.aws/v1") {
    return absl::InvalidArgumentError(
        Cat(m.api_version, " is not hashed; convert it first (dovetail convert)"));
  }
  apis::aws::v1::EC2NodeClass node_class;
  RETURN_IF_ERROR(apis::core::DecodeJson(m.json, node_class));
  apis::aws::v1::ApplyDefaults(node_class);
  ASSIGN_OR_RETURN(std::string hash, apis::aws::v1::DriftHash(node_class, ca_bundle));
  return Hashed{m.kind, m.name, std::move(hash), std::string(apis::hash::kEC2NodeClassHashVersion)};
}

}  // namespace

void RegisterHashCommand(CLI::App& app, ExitCode& exit_code) {
  auto options = std::make_shared<HashOptions>();
  CLI::App* cmd = app.add_subcommand(
      "hash", "Print the drift hashes of NodePools and EC2NodeClasses, as Karpenter stamps them");
  cmd->add_option("-f,--filename", options->inputs,
                  "Manifest file, directory (searched recursively for *.yaml, *.yml, *.json) "
                  "or - for standard input; repeatable")
      ->required()
      ->allow_extra_args(false);
  cmd->add_option("-o,--output", options->output, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--cluster-ca-bundle", options->ca_bundle,
                  "The cluster CA bundle (base64) the EC2NodeClass hash mixes in: the "
                  "controller's CLUSTER_CA_BUNDLE, else its Kubernetes CA");
  cmd->callback([options, &exit_code] {
    std::vector<std::string> errors;
    std::vector<Hashed> hashed;
    for (const std::string& file : Files(options->inputs, errors)) {
      absl::StatusOr<std::vector<apis::core::Manifest>> manifests = apis::core::ReadManifests(file);
      if (!manifests.ok()) {
        errors.push_back(std::string(AsStd(manifests.status().message())));
        continue;
      }
      for (const apis::core::Manifest& m : *manifests) {
        if (m.kind != "NodePool" && m.kind != "EC2NodeClass") continue;
        absl::StatusOr<Hashed> h = HashOne(m, options->ca_bundle);
        if (h.ok()) {
          hashed.push_back(*std::move(h));
        } else {
          errors.push_back(Cat(file, ": ", m.Describe(), ": ", AsStd(h.status().message())));
        }
      }
    }
    if (options->output == "json") {
      nlohmann::json out = nlohmann::json::array();
      for (const Hashed& h : hashed) {
        out.push_back(
            {{"kind", h.kind}, {"name", h.name}, {"hash", h.hash}, {"hashVersion", h.version}});
      }
      std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      for (const Hashed& h : hashed) {
        std::cout << h.kind << " " << h.name << " " << h.hash << " " << h.version << "\n";
      }
    }
    for (const std::string& e : errors) std::cerr << "error: " << e << "\n";
    exit_code.value = errors.empty() ? 0 : 1;
  });
}

}  // namespace dovetail::cli
