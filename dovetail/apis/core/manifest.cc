#include "dovetail/apis/core/manifest.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/input_limits.h"
#include "dovetail/common/status_macros.h"

namespace dovetail::apis::core {
namespace {

using Json = nlohmann::json;

std::string StringAt(const Json& object, std::string_view key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

std::string MetadataString(const Json& object, std::string_view key) {
  const auto it = object.find("metadata");
  if (it == object.end() || !it->is_object()) return "";
  return StringAt(*it, key);
}

Manifest MakeManifest(Json json, SourcePosition position,
                      absl::flat_hash_map<std::string, LineColumn> field_positions) {
  Manifest m;
  m.api_version = StringAt(json, "apiVersion");
  m.kind = StringAt(json, "kind");
  m.name = MetadataString(json, "name");
  m.namespace_ = MetadataString(json, "namespace");
  m.json = std::move(json);
  m.position = std::move(position);
  m.field_positions = std::move(field_positions);
  return m;
}

bool IsListObject(const Json& json) {
  const std::string kind = StringAt(json, "kind");
  if (!absl::EndsWith(kind, "List")) return false;
  const auto items = json.find("items");
  return items != json.end() && (items->is_array() || items->is_null());
}

// Splits the positions of a List document into per-item maps keyed by paths inside the item.
std::vector<absl::flat_hash_map<std::string, LineColumn>> SplitItemPositions(
    const absl::flat_hash_map<std::string, LineColumn>& positions, size_t item_count,
    std::vector<LineColumn>* item_starts) {
  std::vector<absl::flat_hash_map<std::string, LineColumn>> out(item_count);
  item_starts->assign(item_count, LineColumn{});
  constexpr absl::string_view kPrefix = "items[";
  for (const auto& [path, at] : positions) {
    if (!absl::StartsWith(path, kPrefix)) continue;
    const size_t close = path.find(']', kPrefix.size());
    if (close == std::string::npos) continue;
    size_t index = 0;
    if (!absl::SimpleAtoi(absl::string_view(path).substr(kPrefix.size(), close - kPrefix.size()),
                          &index) ||
        index >= item_count) {
      continue;
    }
    std::string_view rest = std::string_view(path).substr(close + 1);
    if (rest.empty()) {
      (*item_starts)[index] = at;
      continue;
    }
    if (rest[0] == '.') rest.remove_prefix(1);
    out[index].emplace(std::string(rest), at);
  }
  return out;
}

absl::Status NotAnObject(const SourcePosition& at, const Json& json) {
  return absl::InvalidArgumentError(absl::StrCat(
      at.ToString(), ": expected a Kubernetes object (a mapping), got ", json.type_name()));
}

}  // namespace

SourcePosition Manifest::PositionOf(std::string_view path) const {
  std::string_view p = path;
  while (!p.empty()) {
    if (const auto it = field_positions.find(absl::string_view(p.data(), p.size()));
        it != field_positions.end()) {
      return SourcePosition{position.file, it->second.line, it->second.column};
    }
    if (p.back() == ']') {
      const size_t open = (p.size() >= 2 && p[p.size() - 2] == '"') ? p.rfind("[\"") : p.rfind('[');
      p = p.substr(0, open == std::string_view::npos ? 0 : open);
    } else {
      const size_t cut = p.find_last_of(".[");
      p = p.substr(0, cut == std::string_view::npos ? 0 : cut);
    }
  }
  return position;
}

std::string Manifest::Describe() const {
  const std::string k = kind.empty() ? "<no kind>" : kind;
  const std::string n = name.empty() ? "<no name>" : name;
  return namespace_.empty() ? absl::StrCat(k, "/", n) : absl::StrCat(k, "/", namespace_, "/", n);
}

absl::StatusOr<std::vector<Manifest>> ParseManifests(std::string_view text,
                                                     std::string_view source_name) {
  RETURN_IF_ERROR(CheckSize(text.size(), kMaxManifestBytes, source_name));
  ASSIGN_OR_RETURN(std::vector<ParsedDocument> documents, ParseDocuments(text, source_name));
  std::vector<Manifest> manifests;
  manifests.reserve(documents.size());
  for (ParsedDocument& doc : documents) {
    if (!doc.json.is_object()) return NotAnObject(doc.position, doc.json);
    if (!IsListObject(doc.json)) {
      manifests.push_back(MakeManifest(std::move(doc.json), std::move(doc.position),
                                       std::move(doc.field_positions)));
      continue;
    }
    // A List: every item is a manifest of its own. Typed lists (`NodePoolList`) may leave the
    // items' apiVersion/kind out; they are filled from the list.
    const std::string list_kind = StringAt(doc.json, "kind");
    const std::string list_api_version = StringAt(doc.json, "apiVersion");
    const std::string item_kind =
        list_kind == "List" ? "" : list_kind.substr(0, list_kind.size() - 4);
    Json& items = doc.json["items"];
    if (items.is_null()) continue;
    std::vector<LineColumn> item_starts;
    std::vector<absl::flat_hash_map<std::string, LineColumn>> item_positions =
        SplitItemPositions(doc.field_positions, items.size(), &item_starts);
    for (size_t i = 0; i < items.size(); ++i) {
      SourcePosition at = doc.position;
      if (item_starts[i].line > 0) {
        at.line = item_starts[i].line;
        at.column = item_starts[i].column;
      }
      Json& item = items[i];
      if (!item.is_object()) return NotAnObject(at, item);
      if (!item_kind.empty()) {
        if (!item.contains("kind")) item["kind"] = item_kind;
        if (!item.contains("apiVersion") && !list_api_version.empty()) {
          item["apiVersion"] = list_api_version;
        }
      }
      manifests.push_back(
          MakeManifest(std::move(item), std::move(at), std::move(item_positions[i])));
    }
  }
  return manifests;
}

absl::StatusOr<std::vector<Manifest>> ReadManifests(const std::string& path) {
  if (path == "-") {
    std::string text;
    char buffer[1 << 16];
    while (std::cin) {
      std::cin.read(buffer, sizeof(buffer));
      text.append(buffer, static_cast<size_t>(std::cin.gcount()));
      if (text.size() > kMaxManifestBytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "standard input is larger than the limit of ", kMaxManifestBytes, " bytes"));
      }
    }
    if (std::cin.bad()) return absl::UnavailableError("cannot read standard input");
    return ParseManifests(text, "<stdin>");
  }
  ASSIGN_OR_RETURN(const std::string text, ReadFileAtMost(path, kMaxManifestBytes, "manifest"));
  return ParseManifests(text, path);
}

}  // namespace dovetail::apis::core
