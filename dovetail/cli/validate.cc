// `dovetail validate -f FILE|DIR|- ...`: checks NodePool, NodeClaim and EC2NodeClass manifests
// against every rule the API server (CRD schema and CEL) and Karpenter (runtime validation) apply,
// without a cluster. Prints one line per problem, `FILE:LINE: Kind/name: field: message`, then a
// summary; `-o json` prints a machine-readable report instead. Exit code 0 when everything is
// valid, 1 when any object is invalid or any input cannot be read or parsed.

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "dovetail/apis/core/manifest.h"
#include "dovetail/apis/validation/validation.h"
#include "dovetail/cli/commands.h"
#include "dovetail/common/absl_compat.h"
#include "nlohmann/json.hpp"

namespace dovetail::cli {
namespace {

namespace fs = std::filesystem;
using apis::validation::ObjectErrors;
using Json = nlohmann::json;

struct ValidateOptions {
  std::vector<std::string> inputs;
  std::string output = "text";
};

struct FileResult {
  std::string file;
  std::string error;  // cannot read or parse; empty when the file was validated
  std::vector<ObjectErrors> objects;
};

bool IsManifestFile(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

// Expands directories (recursively, *.yaml/*.yml/*.json, sorted); files and "-" are kept as
// given. Unreadable directories become file errors.
std::vector<FileResult> ExpandInputs(const std::vector<std::string>& inputs) {
  std::vector<FileResult> out;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (input == "-" || !fs::is_directory(input, ec)) {
      out.push_back(FileResult{input, "", {}});
      continue;
    }
    std::vector<std::string> found;
    fs::recursive_directory_iterator it(input, fs::directory_options::skip_permission_denied, ec);
    const fs::recursive_directory_iterator end;
    for (; !ec && it != end; it.increment(ec)) {
      std::error_code file_ec;
      if (it->is_regular_file(file_ec) && IsManifestFile(it->path())) {
        found.push_back(it->path().string());
      }
    }
    if (ec) {
      out.push_back(
          FileResult{input, Cat("cannot read directory ", input, ": ", ec.message()), {}});
      continue;
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) {
      out.push_back(FileResult{input, Cat(input, ": no *.yaml, *.yml or *.json files found"), {}});
      continue;
    }
    for (std::string& file : found) out.push_back(FileResult{std::move(file), "", {}});
  }
  return out;
}

void ValidateFile(FileResult& result) {
  absl::StatusOr<std::vector<apis::core::Manifest>> manifests =
      apis::core::ReadManifests(result.file);
  if (!manifests.ok()) {
    result.error = std::string(AsStd(manifests.status().message()));
    return;
  }
  result.objects = apis::validation::ValidateManifests(*manifests);
}

std::string Where(const apis::core::SourcePosition& position) {
  return position.line > 0 ? Cat(position.file, ":", position.line) : position.file;
}

struct Summary {
  int files = 0;
  int file_errors = 0;
  int objects = 0;  // validated objects
  int invalid = 0;
  int errors = 0;
  int skipped = 0;
};

Summary Summarize(const std::vector<FileResult>& results) {
  Summary s;
  for (const FileResult& file : results) {
    ++s.files;
    if (!file.error.empty()) ++s.file_errors;
    for (const ObjectErrors& object : file.objects) {
      if (!object.validated) {
        ++s.skipped;
        continue;
      }
      ++s.objects;
      if (!object.errors.empty()) ++s.invalid;
      s.errors += static_cast<int>(object.errors.size());
    }
  }
  return s;
}

void PrintText(const std::vector<FileResult>& results, const Summary& summary) {
  for (const FileResult& file : results) {
    if (!file.error.empty()) std::cerr << "error: " << file.error << "\n";
    for (const ObjectErrors& object : file.objects) {
      for (const std::string& note : object.notes) {
        std::cout << Where(object.position) << ": " << object.Describe() << ": warning: " << note
                  << "\n";
      }
      for (const ObjectErrors::Error& e : object.errors) {
        std::cout << Where(e.position) << ": " << object.Describe() << ": "
                  << apis::validation::ToString(e) << "\n";
      }
    }
  }
  std::cout << summary.objects << (summary.objects == 1 ? " object" : " objects")
            << " validated in " << summary.files << (summary.files == 1 ? " file" : " files")
            << ": ";
  if (summary.invalid == 0 && summary.file_errors == 0) {
    std::cout << "all valid";
  } else {
    std::cout << summary.invalid << " invalid (" << summary.errors
              << (summary.errors == 1 ? " error" : " errors") << ")";
    if (summary.file_errors > 0) {
      std::cout << ", " << summary.file_errors << " unreadable "
                << (summary.file_errors == 1 ? "file" : "files");
    }
  }
  if (summary.skipped > 0) std::cout << "; " << summary.skipped << " other objects skipped";
  std::cout << "\n";
}

Json PositionJson(const apis::core::SourcePosition& position) {
  Json out = {{"file", position.file}};
  if (position.line > 0) {
    out["line"] = position.line;
    out["column"] = position.column;
  }
  return out;
}

void PrintJson(const std::vector<FileResult>& results, const Summary& summary) {
  Json files = Json::array();
  for (const FileResult& file : results) {
    Json f = {{"file", file.file}, {"objects", Json::array()}};
    if (!file.error.empty()) f["error"] = file.error;
    for (const ObjectErrors& object : file.objects) {
      Json o = {{"apiVersion", object.api_version},
                {"kind", object.kind},
                {"name", object.name},
                {"position", PositionJson(object.position)},
                {"validated", object.validated},
                {"valid", object.errors.empty()},
                {"errors", Json::array()},
                {"notes", object.notes}};
      for (const ObjectErrors::Error& e : object.errors) {
        Json error = {
            {"field", e.field}, {"message", e.message}, {"position", PositionJson(e.position)}};
        if (!e.value.empty()) error["value"] = e.value;
        o["errors"].push_back(std::move(error));
      }
      f["objects"].push_back(std::move(o));
    }
    files.push_back(std::move(f));
  }
  const Json report = {{"valid", summary.invalid == 0 && summary.file_errors == 0},
                       {"summary",
                        {{"files", summary.files},
                         {"unreadableFiles", summary.file_errors},
                         {"objects", summary.objects},
                         {"invalidObjects", summary.invalid},
                         {"errors", summary.errors},
                         {"skippedObjects", summary.skipped}}},
                       {"files", std::move(files)}};
  // Replace rather than throw on bytes that are not UTF-8 (file names come from the command line).
  std::cout << report.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}

}  // namespace

void RegisterValidateCommand(CLI::App& app, ExitCode& exit_code) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Check NodePool, NodeClaim and EC2NodeClass manifests against Karpenter's validation rules");
  cmd->add_option("-f,--filename", options->inputs,
                  "Manifest file, directory (searched recursively for *.yaml, *.yml, *.json) "
                  "or - for standard input; repeatable")
      ->required()
      ->allow_extra_args(false);
  cmd->add_option("-o,--output", options->output, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([options, &exit_code] {
    std::vector<FileResult> results = ExpandInputs(options->inputs);
    for (FileResult& result : results) {
      if (result.error.empty()) ValidateFile(result);
    }
    const Summary summary = Summarize(results);
    if (options->output == "json") {
      PrintJson(results, summary);
    } else {
      PrintText(results, summary);
    }
    exit_code.value = (summary.invalid > 0 || summary.file_errors > 0) ? 1 : 0;
  });
}

}  // namespace dovetail::cli
