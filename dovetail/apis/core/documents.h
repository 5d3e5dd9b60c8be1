// Turns YAML or JSON text into nlohmann::json documents that remember where they came from.
// Used by the manifest reader (manifest.h) and by anything else that reads user-written YAML
// (Helm values, CLI input).
//
// YAML scalars are typed the way Kubernetes' YAML-to-JSON conversion types them (YAML 1.1 rules as
// in go-yaml v2): quoted or block scalars are always strings; plain scalars become null (~, null,
// empty), booleans (true/false and also yes/no/on/off/y/n in their usual capitalisations),
// integers (decimal, 0x hex, 0o/leading-0 octal, 0b binary, `_` separators ignored), floats
// (1.5, 1e3, .5) or otherwise strings. Explicit tags (!!str, !!int, ...) are honoured; merge keys
// (`<<: *anchor`) are expanded. Duplicate keys are an error, as in strict Kubernetes decoding.
// Text whose first character is `{` or `[` is read as a stream of JSON values, as kubectl does
// (so flow-style YAML at the very start of a file is not accepted).
//
// Errors are InvalidArgument with a message "<source>:<line>:<column>: <what>" (1-based line and
// column). Invalid UTF-8, nesting deeper than 256 levels, alias expansion to more nodes than the
// input has bytes (plus 100000) and inputs on which the YAML parser stops making progress are
// rejected. Never throws; thread-compatible (no shared state).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::core {

struct LineColumn {
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based
  bool operator==(const LineColumn&) const = default;
};

// A position in a named source, printed "file:line:column".
struct SourcePosition {
  std::string file;
  int line = 0;
  int column = 0;
  std::string ToString() const;
  bool operator==(const SourcePosition&) const = default;
};

struct ParsedDocument {
  nlohmann::json json;
  SourcePosition position;  // where the document's content starts
  // Position of every key and list item inside the document, by JSON path in the syntax of
  // codec.h (`spec.template.spec.requirements[0].operator`). Filled for YAML input only.
  absl::flat_hash_map<std::string, LineColumn> field_positions;
};

// Parses every document of `text` (YAML `---`-separated documents, or a JSON value stream).
// Empty YAML documents (nothing, or only comments / null) are skipped.
absl::StatusOr<std::vector<ParsedDocument>> ParseDocuments(std::string_view text,
                                                           std::string_view source_name);

// Converts a byte offset into `text` to a 1-based line and column (columns count bytes).
LineColumn OffsetToLineColumn(std::string_view text, size_t offset);

}  // namespace dovetail::apis::core
