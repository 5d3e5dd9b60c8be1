// Reading Kubernetes manifests: files of one or more YAML documents (`---`), JSON values, or
// `kind: List` / `<Kind>List` objects with `items`. Each object becomes a Manifest carrying its
// type, name and where it was written, ready to be decoded into a typed struct with the codecs
// (e.g. `Decode(manifest.json, &node_pool)`). Used by `dovetail validate`, `simulate` and tests.
//
// Errors: InvalidArgument naming "<file>:<line>:<column>" for malformed YAML/JSON, invalid UTF-8
// and documents that are not objects, and naming the file for more than kMaxManifestBytes
// (common/input_limits.h) of text; NotFound / PermissionDenied / ... from ReadManifests when the
// file cannot be read. A document without apiVersion or kind is returned as is (with empty fields)
// so that a validator can report it. Never throws; thread-compatible.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "dovetail/apis/core/documents.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::core {

struct Manifest {
  std::string api_version;
  std::string kind;
  std::string name;         // metadata.name (empty when absent)
  std::string namespace_;   // metadata.namespace (empty when absent)
  nlohmann::json json;      // the whole object
  SourcePosition position;  // start of the document (or of the List item)
  // Positions of keys and list items by JSON path (YAML input only); see PositionOf.
  absl::flat_hash_map<std::string, LineColumn> field_positions;

  // Where the value at `path` (codec.h path syntax) was written: the closest enclosing path with a
  // known position, falling back to the document start. Handy for "file:line:col: <error>".
  SourcePosition PositionOf(std::string_view path) const;

  // "Kind/name" or "Kind/namespace/name", for messages.
  std::string Describe() const;
};

// Parses the manifests in `text`; `source_name` (usually the file name) appears in positions and
// error messages.
absl::StatusOr<std::vector<Manifest>> ParseManifests(std::string_view text,
                                                     std::string_view source_name);

// Reads and parses a file; "-" reads standard input.
absl::StatusOr<std::vector<Manifest>> ReadManifests(const std::string& path);

}  // namespace dovetail::apis::core
