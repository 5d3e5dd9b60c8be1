// ValidateManifests: objects as written. Three passes per object:
//  1. checks on the JSON itself for what a typed struct cannot show: required keys that are
//     missing, `role: ""`, volume sizes written without Gi/G/Ti/T, unknown top-level keys;
//  2. decoding into the typed struct, collecting every decode error (wrong JSON types, values
//     outside an enumeration, numbers out of range, bad quantities): after each error the
//     offending value is removed (or, inside a list, replaced by a neutral value) and decoding is
//     retried, so one bad field does not hide the others;
//  3. the typed validators of validation.h, minus errors about values that passes 1-2 already
//     reported or had to remove.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "dovetail/apis/convert/convert.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/validation/internal.h"
#include "dovetail/apis/validation/validation.h"

namespace dovetail::apis::validation {
namespace {

using Json = nlohmann::json;
using internal::Child;
using internal::ErrorList;
using internal::Item;

// Decoding is retried at most this many times per object (each retry removes one bad value).
constexpr int kMaxDecodeAttempts = 200;

// ---- Paths --------------------------------------------------------------------------------------

struct Segment {
  bool is_index = false;
  std::string key;
  size_t index = 0;
};

bool IsPlainKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// Parses a codec.h path at the start of `text` into `out`; returns how many characters it used
// (0 when there is no path). Stops before anything that does not continue the path.
size_t ParsePath(std::string_view text, std::vector<Segment>* out) {
  size_t i = 0;
  size_t good = 0;
  std::vector<Segment> segments;
  while (i < text.size()) {
    if (text[i] == '[') {
      Segment s;
      size_t j = i + 1;
      if (j < text.size() && text[j] == '"') {
        ++j;
        while (j < text.size() && text[j] != '"') {
          if (text[j] == '\\' && j + 1 < text.size()) ++j;
          s.key.push_back(text[j]);
          ++j;
        }
        if (j + 1 >= text.size() || text[j + 1] != ']') break;
        j += 2;
      } else {
        const size_t start = j;
        while (j < text.size() && text[j] >= '0' && text[j] <= '9') {
          s.index = s.index * 10 + static_cast<size_t>(text[j] - '0');
          ++j;
        }
        if (j == start || j >= text.size() || text[j] != ']') break;
        s.is_index = true;
        ++j;
      }
      segments.push_back(std::move(s));
      i = j;
      good = i;
      continue;
    }
    size_t j = i;
    if (!segments.empty()) {
      if (text[j] != '.') break;
      ++j;
    }
    const size_t start = j;
    while (j < text.size() && IsPlainKeyChar(text[j])) ++j;
    if (j == start) break;
    Segment s;
    s.key = std::string(text.substr(start, j - start));
    segments.push_back(std::move(s));
    i = j;
    good = i;
  }
  if (out != nullptr) *out = std::move(segments);
  return good;
}

// Splits a codec error "<path>: <message>" (the path may be absent).
void SplitDecodeError(std::string_view text, std::string* path, std::string* message,
                      std::vector<Segment>* segments) {
  const size_t used = ParsePath(text, segments);
  if (used > 0 && text.substr(used).starts_with(": ")) {
    *path = std::string(text.substr(0, used));
    *message = std::string(text.substr(used + 2));
    return;
  }
  segments->clear();
  path->clear();
  *message = std::string(text);
}

// True when `path` is `prefix` or lies under it (segment-aware).
bool IsUnder(std::string_view path, std::string_view prefix) {
  if (!path.starts_with(prefix)) return false;
  if (path.size() == prefix.size() || prefix.empty()) return true;
  const char next = path[prefix.size()];
  return next == '.' || next == '[';
}

// The path of the innermost list item that contains `path` (up to and including its last `[N]`),
// or "" when there is none.
std::string EnclosingItem(std::string_view path) {
  std::vector<Segment> segments;
  ParsePath(path, &segments);
  std::string rebuilt;
  std::string item;
  for (const Segment& s : segments) {
    if (s.is_index) {
      core::AppendPathIndex(rebuilt, s.index);
      item = rebuilt;
    } else {
      core::AppendPathKey(rebuilt, s.key);
    }
  }
  return item;
}

// ---- Pass 1: checks on the JSON -----------------------------------------------------------------

// Errors of passes 1 and 2, with the subtrees whose typed errors are to be dropped.
struct EarlyErrors {
  ErrorList errors;
  std::vector<std::string> suppressed;
  // Typed errors to drop by exact field and message prefix (when a whole subtree is too much).
  std::vector<std::pair<std::string, std::string>> suppressed_messages;

  // `widen`: the typed struct holds a stand-in for the value (a default), so errors anywhere in
  // the enclosing list item are unreliable too.
  void Add(std::string field, std::string message, bool widen, std::string value = {}) {
    suppressed.push_back(field);
    if (widen) {
      std::string item = EnclosingItem(field);
      if (!item.empty()) suppressed.push_back(std::move(item));
    }
    errors.Add(std::move(field), std::move(message), std::move(value));
  }
};

const Json& EmptyObject() {
  static const Json* const kEmpty = new Json(Json::object());
  return *kEmpty;
}

// The object at `key` of `parent`; reports it missing. A `null` (YAML `key:` with nothing after
// it) counts as an empty object so that the keys required inside it are reported. Returns nullptr
// when it is missing or not an object (decoding reports the wrong type).
const Json* RequireObject(const Json* parent, std::string_view key, const std::string& path,
                          EarlyErrors& early) {
  if (parent == nullptr || !parent->is_object()) return nullptr;
  const auto it = parent->find(key);
  if (it == parent->end()) {
    early.Add(path, "Required value: this field must be set", /*widen=*/true);
    return nullptr;
  }
  if (it->is_null()) return &EmptyObject();
  return it->is_object() ? &*it : nullptr;
}

void RequireField(const Json* parent, std::string_view key, const std::string& path,
                  EarlyErrors& early) {
  if (parent == nullptr || !parent->is_object()) return;
  const auto it = parent->find(key);
  if (it == parent->end() || it->is_null()) {
    early.Add(path, "Required value: this field must be set", /*widen=*/true);
  }
}

// For every object item of the list at `key`, requires `fields`.
void RequireInItems(const Json* parent, std::string_view key, const std::string& path,
                    std::initializer_list<std::string_view> fields, EarlyErrors& early) {
  if (parent == nullptr || !parent->is_object()) return;
  const auto it = parent->find(key);
  if (it == parent->end() || !it->is_array()) return;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& item = (*it)[i];
    if (!item.is_object()) continue;
    for (std::string_view field : fields) {
      RequireField(&item, field, Child(Item(path, i), field), early);
    }
  }
}

void CheckTopLevel(const Json& root, EarlyErrors& early) {
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& key = it.key();
    if (key == "apiVersion" || key == "kind" || key == "metadata" || key == "spec" ||
        key == "status") {
      continue;
    }
    early.Add(Child("", key), "unknown field", /*widen=*/false, key);
  }
}

void CheckTaintItems(const Json* spec, const std::string& path, EarlyErrors& early) {
  for (std::string_view list : {"taints", "startupTaints"}) {
    RequireInItems(spec, list, Child(path, list), {"key", "effect"}, early);
  }
}

void CheckNodeClassRef(const Json* spec, const std::string& path, EarlyErrors& early) {
  const std::string at = Child(path, "nodeClassRef");
  const Json* ref = RequireObject(spec, "nodeClassRef", at, early);
  for (std::string_view field : {"group", "kind", "name"}) {
    RequireField(ref, field, Child(at, field), early);
  }
}

void CheckNodePoolJson(const Json& root, EarlyErrors& early) {
  const Json* spec = RequireObject(&root, "spec", "spec", early);
  const Json* tmpl = RequireObject(spec, "template", "spec.template", early);
  const Json* tspec = RequireObject(tmpl, "spec", "spec.template.spec", early);
  const std::string path = "spec.template.spec";
  RequireField(tspec, "requirements", Child(path, "requirements"), early);
  RequireInItems(tspec, "requirements", Child(path, "requirements"), {"key", "operator"}, early);
  CheckTaintItems(tspec, path, early);
  CheckNodeClassRef(tspec, path, early);
}

void CheckNodeClaimJson(const Json& root, EarlyErrors& early) {
  const Json* spec = RequireObject(&root, "spec", "spec", early);
  RequireField(spec, "requirements", "spec.requirements", early);
  RequireInItems(spec, "requirements", "spec.requirements", {"key", "operator"}, early);
  CheckTaintItems(spec, "spec", early);
  CheckNodeClassRef(spec, "spec", early);
}

// The text of an EBS volume size: a whole number of Gi (1-59000), G (1-64000), Ti (1-58) or T
// (1-64), without leading zeros.
bool IsVolumeSizeText(std::string_view text) {
  struct Unit {
    std::string_view suffix;
    int max;
  };
  constexpr Unit kUnits[] = {{"Gi", 59000}, {"Ti", 58}, {"G", 64000}, {"T", 64}};
  for (const Unit& unit : kUnits) {
    if (!text.ends_with(unit.suffix)) continue;
    const std::string_view number = text.substr(0, text.size() - unit.suffix.size());
    if (number.empty() || number.size() > 5 || number.front() == '0') return false;
    int value = 0;
    for (char c : number) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + (c - '0');
    }
    return value <= unit.max;
  }
  return false;
}

void CheckEC2NodeClassJson(const Json& root, EarlyErrors& early) {
  const Json* spec = RequireObject(&root, "spec", "spec", early);
  if (spec == nullptr) return;
  for (std::string_view terms :
       {"subnetSelectorTerms", "securityGroupSelectorTerms", "amiSelectorTerms"}) {
    RequireField(spec, terms, Child("spec", terms), early);
  }
  if (!spec->contains("amiSelectorTerms")) {
    // Without terms there is no alias to infer the family from; the missing terms are the error.
    early.suppressed_messages.emplace_back("spec.amiFamily", "must specify amiFamily");
  }
  if (const auto role = spec->find("role");
      role != spec->end() && role->is_string() && role->get_ref<const std::string&>().empty()) {
    early.Add("spec.role", "role cannot be empty", /*widen=*/false);
    // The typed struct reads the empty role as no role at all.
    early.suppressed_messages.emplace_back("spec", "must specify exactly one of");
  }
  RequireInItems(spec, "networkInterfaces", "spec.networkInterfaces",
                 {"networkCardIndex", "deviceIndex", "interfaceType"}, early);
  const auto mappings = spec->find("blockDeviceMappings");
  if (mappings == spec->end() || !mappings->is_array()) return;
  for (size_t i = 0; i < mappings->size(); ++i) {
    const Json& mapping = (*mappings)[i];
    if (!mapping.is_object()) continue;
    const auto ebs = mapping.find("ebs");
    if (ebs == mapping.end() || !ebs->is_object()) continue;
    const auto size = ebs->find("volumeSize");
    if (size == ebs->end() || size->is_null()) continue;
    const std::string at = Child(Child(Item("spec.blockDeviceMappings", i), "ebs"), "volumeSize");
    if (!size->is_string()) {
      early.Add(at, "must be a string with a unit, such as 20Gi, 100G, 1Ti or 2T",
                /*widen=*/false, size->dump());
    } else if (!IsVolumeSizeText(size->get_ref<const std::string&>())) {
      const std::string& text = size->get_ref<const std::string&>();
      early.Add(at,
                Cat("must be a whole number of Gi (1-59000), G (1-64000), Ti (1-58) or T (1-64), "
                    "such as 20Gi, got \"",
                    text, "\""),
                /*widen=*/false, text);
    }
  }
}

// ---- Pass 2: decoding ---------------------------------------------------------------------------

// A value that decodes for the type named in a codec error message, for list items that cannot
// be removed without shifting the indices of the items after them.
std::optional<Json> StandIn(const std::string& message) {
  constexpr std::string_view kSupported = "supported values: \"";
  if (const size_t at = message.find(kSupported); at != std::string::npos) {
    const size_t start = at + kSupported.size();
    const size_t end = message.find('"', start);
    if (end != std::string::npos) return Json(message.substr(start, end - start));
  }
  const std::string_view m = message;
  if (m.starts_with("expected string")) return Json("");
  if (m.starts_with("expected boolean")) return Json(false);
  if (m.starts_with("expected integer") || m.starts_with("integer ")) return Json(0);
  if (m.starts_with("expected object")) return Json::object();
  if (m.starts_with("expected array")) return Json::array();
  if (m.starts_with("expected quantity") || m.starts_with("invalid quantity")) return Json("0");
  return std::nullopt;
}

// Removes (or stands in for) the value at `segments`; false when there is nothing to change.
bool Neutralize(Json& root, const std::vector<Segment>& segments, const std::string& message) {
  if (segments.empty()) return false;
  Json* parent = &root;
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    const Segment& s = segments[i];
    if (s.is_index) {
      if (!parent->is_array() || s.index >= parent->size()) return false;
      parent = &(*parent)[s.index];
    } else {
      if (!parent->is_object()) return false;
      const auto it = parent->find(s.key);
      if (it == parent->end()) return false;
      parent = &*it;
    }
  }
  const Segment& last = segments.back();
  if (last.is_index) {
    if (!parent->is_array() || last.index >= parent->size()) return false;
    std::optional<Json> stand_in = StandIn(message);
    if (!stand_in.has_value() || *stand_in == (*parent)[last.index]) {
      parent->erase(last.index);
      return true;
    }
    (*parent)[last.index] = std::move(*stand_in);
    return true;
  }
  if (!parent->is_object()) return false;
  return parent->erase(last.key) > 0;
}

template <typename T>
T DecodeCollectingErrors(Json json, EarlyErrors& early, std::vector<std::string>* unknown) {
  T out;
  std::string previous_path;
  for (int attempt = 0; attempt < kMaxDecodeAttempts; ++attempt) {
    out = T();
    unknown->clear();
    core::DecodeOptions options;
    options.unknown_field_paths = unknown;
    const absl::Status status = core::DecodeJson(json, out, options);
    if (status.ok()) return out;
    std::string path;
    std::string message;
    std::vector<Segment> segments;
    SplitDecodeError(AsStd(status.message()), &path, &message, &segments);
    // A stand-in of the right JSON type may still be refused (a list of enumerations): that is
    // not another error of the user's, and the new message names a value that will do.
    if (attempt == 0 || path != previous_path) early.Add(path, message, /*widen=*/true);
    previous_path = path;
    if (!Neutralize(json, segments, message)) {
      // Nothing more can be decoded reliably; drop every typed error.
      early.suppressed.push_back("");
      return out;
    }
  }
  early.suppressed.push_back("");
  return out;
}

// ---- Putting it together ------------------------------------------------------------------------

struct GroupVersion {
  std::string group;
  std::string version;
};

GroupVersion SplitApiVersion(std::string_view api_version) {
  const size_t slash = api_version.find('/');
  if (slash == std::string_view::npos) return {"", std::string(api_version)};
  return {std::string(api_version.substr(0, slash)), std::string(api_version.substr(slash + 1))};
}

bool IsBuiltinGroup(std::string_view group) {
  return group.empty() || group == "apps" || group == "batch" || group == "policy" ||
         group == "autoscaling" || group == "extensions" || group.ends_with(".k8s.io");
}

enum class Kind { kNodePool, kNodeClaim, kEC2NodeClass };

template <typename T>
void Validate(const core::Manifest& manifest, Kind kind, ObjectErrors& result) {
  EarlyErrors early;
  CheckTopLevel(manifest.json, early);
  switch (kind) {
    case Kind::kNodePool:
      CheckNodePoolJson(manifest.json, early);
      break;
    case Kind::kNodeClaim:
      CheckNodeClaimJson(manifest.json, early);
      break;
    case Kind::kEC2NodeClass:
      CheckEC2NodeClassJson(manifest.json, early);
      break;
  }
  // Status is written by controllers and ignored when an object is created.
  Json json = manifest.json;
  json.erase("status");
  // Top-level unknown keys are reported above; decoding would report them again.
  for (auto it = json.begin(); it != json.end();) {
    const std::string& key = it.key();
    if (key == "apiVersion" || key == "kind" || key == "metadata" || key == "spec") {
      ++it;
    } else {
      it = json.erase(it);
    }
  }
  std::vector<std::string> unknown;
  const T object = DecodeCollectingErrors<T>(std::move(json), early, &unknown);
  std::vector<FieldError> typed;
  if constexpr (std::is_same_v<T, v1::NodePool>) {
    typed = ValidateNodePool(object);
  } else if constexpr (std::is_same_v<T, v1::NodeClaim>) {
    typed = ValidateNodeClaim(object);
  } else {
    typed = ValidateEC2NodeClass(object);
  }
  std::vector<FieldError> all = std::move(early.errors).Take();
  for (const std::string& path : unknown) {
    if (!IsUnder(path, "spec")) continue;  // metadata keeps fields Dovetail does not model
    if (kind == Kind::kEC2NodeClass && IsUnder(path, "spec.kubelet")) {
      result.notes.push_back(Cat(path,
                                 ": not a kubelet setting Dovetail knows; passed to the node as "
                                 "written without validation"));
      continue;
    }
    all.push_back(FieldError{path, "unknown field (misspelt, or not part of this API)", ""});
  }
  for (FieldError& error : typed) {
    const bool hidden =
        std::any_of(early.suppressed.begin(), early.suppressed.end(),
                    [&](const std::string& prefix) { return IsUnder(error.field, prefix); }) ||
        std::any_of(early.suppressed_messages.begin(), early.suppressed_messages.end(),
                    [&](const auto& m) {
                      return error.field == m.first && error.message.starts_with(m.second);
                    });
    if (!hidden) all.push_back(std::move(error));
  }
  for (FieldError& error : all) {
    core::SourcePosition position = manifest.PositionOf(error.field);
    result.errors.push_back(ObjectErrors::Error{std::move(error), std::move(position)});
  }
}

// The result of `manifest` before any check: its identity and where it starts.
ObjectErrors ResultFor(const core::Manifest& manifest) {
  ObjectErrors result;
  result.api_version = manifest.api_version;
  result.kind = manifest.kind;
  result.name = manifest.name;
  result.position = manifest.position;
  result.object = Cat(manifest.kind.empty() ? "<no kind>" : manifest.kind, "/",
                      manifest.name.empty() ? "<no name>" : manifest.name);
  result.source = manifest.position.line > 0
                      ? Cat(manifest.position.file, ":", manifest.position.line)
                      : manifest.position.file;
  return result;
}

std::vector<ObjectErrors> ValidateAsWritten(const std::vector<core::Manifest>& manifests) {
  std::vector<ObjectErrors> results;
  results.reserve(manifests.size());
  for (const core::Manifest& manifest : manifests) {
    ObjectErrors result = ResultFor(manifest);
    auto add_error = [&](std::string field, std::string message) {
      core::SourcePosition at = manifest.PositionOf(field);
      result.errors.push_back(
          ObjectErrors::Error{FieldError{std::move(field), std::move(message), ""}, std::move(at)});
    };
    if (manifest.api_version.empty() || manifest.kind.empty()) {
      result.validated = true;
      if (manifest.api_version.empty()) add_error("apiVersion", "is required");
      if (manifest.kind.empty()) add_error("kind", "is required");
      results.push_back(std::move(result));
      continue;
    }
    const GroupVersion gv = SplitApiVersion(manifest.api_version);
    const std::string& kind = manifest.kind;
    if (gv.group == v1::kGroup) {
      if (gv.version == "v1" && kind == v1::kNodePoolKind) {
        result.validated = true;
        Validate<v1::NodePool>(manifest, Kind::kNodePool, result);
      } else if (gv.version == "v1" && kind == v1::kNodeClaimKind) {
        result.validated = true;
        Validate<v1::NodeClaim>(manifest, Kind::kNodeClaim, result);
      } else if (kind == v1::kNodePoolKind || kind == v1::kNodeClaimKind || kind == "Provisioner" ||
                 kind == "Machine") {
        result.validated = true;
        add_error("apiVersion", Cat(manifest.api_version, " ", kind,
                                    " is not served by Karpenter v1; convert it to karpenter.sh/v1 "
                                    "(dovetail convert)"));
      } else {
        result.notes.push_back(
            Cat("kind ", kind, " of ", manifest.api_version, " is not validated by dovetail"));
      }
    } else if (gv.group == v1::kAwsGroup) {
      if (gv.version == "v1" && kind == aws::v1::kEC2NodeClassKind) {
        result.validated = true;
        Validate<aws::v1::EC2NodeClass>(manifest, Kind::kEC2NodeClass, result);
      } else if (kind == aws::v1::kEC2NodeClassKind || kind == "AWSNodeTemplate") {
        result.validated = true;
        add_error("apiVersion",
                  Cat(manifest.api_version, " ", kind,
                      " is not served by Karpenter v1; convert it to karpenter.k8s.aws/v1 "
                      "EC2NodeClass (dovetail convert)"));
      } else {
        result.notes.push_back(
            Cat("kind ", kind, " of ", manifest.api_version, " is not validated by dovetail"));
      }
    } else if (!IsBuiltinGroup(gv.group)) {
      result.notes.push_back(Cat("kind ", kind, " of API group ", gv.group,
                                 " is not validated by dovetail (only karpenter.sh and "
                                 "karpenter.k8s.aws objects are)"));
    }
    results.push_back(std::move(result));
  }
  return results;
}

// object[key] when it is a string, else "".
std::string StringAt(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// "Kind/name: field.path: message" (a convert::ConvertResult error) -> field and message.
FieldError SplitConvertError(const std::string& line) {
  std::string rest = line;
  if (const size_t at = rest.find(": "); at != std::string::npos) rest = rest.substr(at + 2);
  const size_t at = rest.find(": ");
  if (at == std::string::npos) return FieldError{"", Cat("cannot convert to v1: ", rest), ""};
  return FieldError{rest.substr(0, at), Cat("cannot convert to v1: ", rest.substr(at + 2)), ""};
}

}  // namespace

std::vector<ObjectErrors> ValidateManifests(const std::vector<core::Manifest>& manifests) {
  const size_t n = manifests.size();
  bool any_old = false;
  for (const core::Manifest& m : manifests) any_old |= convert::NeedsConversion(m.json);
  if (!any_old) return ValidateAsWritten(manifests);

  // Older API versions are converted to v1 (all together, as `dovetail convert` does: pools meet
  // their node classes) and the result is validated. An object that cannot be converted is
  // reported and left out of the next try, so one bad object does not hide the others.
  std::vector<std::vector<FieldError>> convert_errors(n);
  std::vector<bool> excluded(n, false);
  convert::ConvertResult converted;
  std::vector<size_t> index;  // input of Convert -> manifest
  for (size_t round = 0; round <= n; ++round) {
    std::vector<nlohmann::json> objects;
    index.clear();
    for (size_t i = 0; i < n; ++i) {
      if (excluded[i]) continue;
      objects.push_back(manifests[i].json);
      index.push_back(i);
    }
    converted = convert::Convert(objects);
    if (converted.errors.empty()) break;
    for (size_t e = 0; e < converted.errors.size(); ++e) {
      const size_t i = index[converted.error_inputs[e]];
      convert_errors[i].push_back(SplitConvertError(converted.errors[e]));
      excluded[i] = true;
    }
    converted = {};
  }
  std::vector<std::vector<const nlohmann::json*>> outputs(n);
  for (size_t k = 0; k < converted.objects.size(); ++k) {
    outputs[index[converted.origins[k]]].push_back(&converted.objects[k]);
  }

  std::vector<ObjectErrors> results;
  results.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const core::Manifest& manifest = manifests[i];
    const bool old = convert::NeedsConversion(manifest.json);
    if (!old && convert_errors[i].empty() && outputs[i].size() == 1 &&
        *outputs[i][0] == manifest.json) {
      results.push_back(std::move(ValidateAsWritten({manifest})[0]));
      continue;
    }
    ObjectErrors result = ResultFor(manifest);
    result.validated = true;
    if (!convert_errors[i].empty()) {
      for (FieldError& error : convert_errors[i]) {
        core::SourcePosition at = manifest.PositionOf(error.field);
        result.errors.push_back(ObjectErrors::Error{std::move(error), std::move(at)});
      }
      results.push_back(std::move(result));
      continue;
    }
    if (outputs[i].empty()) {
      result.notes.push_back(
          "converted to Helm values (settings.*) of charts/dovetail: see dovetail convert "
          "--helm-values");
      results.push_back(std::move(result));
      continue;
    }
    // The converted object(s): the first is the object itself, any others node classes split
    // off by the kubelet move.
    std::vector<core::Manifest> as_v1;
    for (const nlohmann::json* object : outputs[i]) {
      core::Manifest m;
      m.json = *object;
      m.api_version = StringAt(*object, "apiVersion");
      m.kind = StringAt(*object, "kind");
      if (auto meta = object->find("metadata"); meta != object->end()) {
        m.name = StringAt(*meta, "name");
        m.namespace_ = StringAt(*meta, "namespace");
      }
      m.position = manifest.position;
      as_v1.push_back(std::move(m));
    }
    if (old) {
      result.notes.push_back(Cat(manifest.api_version, " ", manifest.kind,
                                 " validated as its conversion to ", as_v1[0].api_version, " ",
                                 as_v1[0].kind, " (dovetail convert); field paths are v1's"));
    } else {
      result.notes.push_back(
          "validated with the kubelet block it takes from an older NodePool (dovetail convert)");
    }
    std::vector<ObjectErrors> v1 = ValidateAsWritten(as_v1);
    for (size_t k = 0; k < v1.size(); ++k) {
      const std::string prefix = k == 0 ? "" : Cat("in the split-off ", v1[k].object, ": ");
      for (const std::string& note : v1[k].notes) result.notes.push_back(Cat(prefix, note));
      for (ObjectErrors::Error& error : v1[k].errors) {
        error.message = Cat(prefix, error.message);
        result.errors.push_back(std::move(error));
      }
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace dovetail::apis::validation
