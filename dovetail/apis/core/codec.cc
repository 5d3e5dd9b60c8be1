#include "dovetail/apis/core/codec.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace dovetail::apis::core {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kTaintEffectNames[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
constexpr std::string_view kTolerationOperatorNames[] = {"Equal", "Exists"};
constexpr std::string_view kSelectorOperatorNames[] = {"In", "NotIn", "Exists", "DoesNotExist",
                                                       "Gt", "Lt",    "Gte",    "Lte"};
constexpr std::string_view kLabelSelectorOperatorNames[] = {"In", "NotIn", "Exists",
                                                            "DoesNotExist"};
constexpr std::string_view kConditionStatusNames[] = {"True", "False", "Unknown"};

bool IsPlainKey(std::string_view key) {
  if (key.empty()) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

std::string QuoteKey(std::string_view key) {
  std::string out = "[\"";
  for (char c : key) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out += "\"]";
  return out;
}

}  // namespace

void AppendPathKey(std::string& path, std::string_view key) {
  if (IsPlainKey(key)) {
    if (!path.empty()) path.push_back('.');
    path.append(key);
  } else {
    path += QuoteKey(key);
  }
}

void AppendPathIndex(std::string& path, size_t index) { absl::StrAppend(&path, "[", index, "]"); }

std::span<const std::string_view> EnumNames(TaintEffect) { return kTaintEffectNames; }
std::span<const std::string_view> EnumNames(TolerationOperator) { return kTolerationOperatorNames; }
std::span<const std::string_view> EnumNames(SelectorOperator) { return kSelectorOperatorNames; }
std::span<const std::string_view> EnumNames(LabelSelectorOperator) {
  return kLabelSelectorOperatorNames;
}
std::span<const std::string_view> EnumNames(ConditionStatus) { return kConditionStatusNames; }

std::string FormatKubeTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", time, absl::UTCTimeZone());
}

absl::StatusOr<absl::Time> ParseKubeTime(std::string_view text) {
  absl::Time time;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, absl::string_view(text.data(), text.size()), &time,
                       &error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid RFC 3339 time \"", std::string(text), "\": ", error));
  }
  return time;
}

void FieldCodec::Fail(std::string_view message, std::string_view key) {
  if (!decoding() || !status_.ok()) return;
  const std::string where = key.empty() ? path_ : PathWith(key);
  status_ = absl::InvalidArgumentError(
      where.empty() ? std::string(message) : absl::StrCat(where, ": ", std::string(message)));
}

bool FieldCodec::ExpectKind(const Json& json, Json::value_t kind, const char* want) {
  if (json.type() == kind) return true;
  Fail(absl::StrCat("expected ", want, ", got ", json.type_name()));
  return false;
}

void FieldCodec::DecodeString(const Json& json, std::string& out) {
  if (!ExpectKind(json, Json::value_t::string, "string")) return;
  out = json.get_ref<const std::string&>();
}

void FieldCodec::DecodeBool(const Json& json, bool& out) {
  if (!ExpectKind(json, Json::value_t::boolean, "boolean")) return;
  out = json.get<bool>();
}

void FieldCodec::DecodeInt(const Json& json, int64_t min, int64_t max, int64_t& out) {
  int64_t value = 0;
  switch (json.type()) {
    case Json::value_t::number_integer:
      value = json.get<int64_t>();
      break;
    case Json::value_t::number_unsigned: {
      const uint64_t u = json.get<uint64_t>();
      if (u > static_cast<uint64_t>(max)) {
        Fail(absl::StrCat("integer ", u, " out of range [", min, ", ", max, "]"));
        return;
      }
      value = static_cast<int64_t>(u);
      break;
    }
    case Json::value_t::number_float: {
      const double d = json.get<double>();
      // Integral floats (YAML `1.0`) are accepted, as Kubernetes' YAML-to-JSON conversion does.
      if (!std::isfinite(d) || d != std::trunc(d) || d < -9.2e18 || d > 9.2e18) {
        Fail(absl::StrCat("expected integer, got number ", json.dump()));
        return;
      }
      value = static_cast<int64_t>(d);
      break;
    }
    default:
      Fail(absl::StrCat("expected integer, got ", json.type_name()));
      return;
  }
  if (value < min || value > max) {
    Fail(absl::StrCat("integer ", value, " out of range [", min, ", ", max, "]"));
    return;
  }
  out = value;
}

void FieldCodec::DecodeTime(const Json& json, absl::Time& out) {
  if (!ExpectKind(json, Json::value_t::string, "string")) return;
  absl::StatusOr<absl::Time> time = ParseKubeTime(json.get_ref<const std::string&>());
  if (!time.ok()) {
    Fail(std::string(time.status().message()));
    return;
  }
  out = *time;
}

void FieldCodec::DecodeQuantity(const Json& json, Quantity& out) {
  std::string text;
  if (json.is_string()) {
    text = json.get_ref<const std::string&>();
  } else if (json.is_number()) {
    text = json.dump();
  } else {
    Fail(absl::StrCat("expected quantity (string or number), got ", json.type_name()));
    return;
  }
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) {
    Fail(absl::StrCat("invalid quantity \"", text, "\": ", q.status().message()));
    return;
  }
  out = *q;
}

void FieldCodec::DecodeIntOrString(const Json& json, IntOrString& out) {
  if (json.is_string()) {
    out = IntOrString::FromString(json.get_ref<const std::string&>());
    return;
  }
  if (json.is_number()) {
    int64_t v = 0;
    DecodeInt(json, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), v);
    if (status_.ok()) out = IntOrString::FromInt(static_cast<int32_t>(v));
    return;
  }
  Fail(absl::StrCat("expected integer or string, got ", json.type_name()));
}

int FieldCodec::DecodeEnumIndex(const Json& json, std::span<const std::string_view> names) {
  if (!ExpectKind(json, Json::value_t::string, "string")) return -1;
  const std::string& text = json.get_ref<const std::string&>();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == text) return static_cast<int>(i);
  }
  std::string supported;
  for (std::string_view name : names) {
    if (!supported.empty()) supported += ", ";
    supported.push_back('"');
    supported.append(name.data(), name.size());
    supported.push_back('"');
  }
  Fail(absl::StrCat("unsupported value \"", text, "\": supported values: ", supported));
  return -1;
}

void FieldCodec::FinishDecodeFrame(Frame& frame) {
  if (!status_.ok()) return;
  const bool keep = decode_options_->keep_unknown_fields && frame.unknown != nullptr;
  if (frame.unknown != nullptr) *frame.unknown = Json::object();
  const auto consumed_begin = consumed_.begin() + static_cast<ptrdiff_t>(frame.consumed_begin);
  if (static_cast<size_t>(consumed_.end() - consumed_begin) == frame.in->size()) return;
  for (auto it = frame.in->begin(); it != frame.in->end(); ++it) {
    const std::string& key = it.key();
    if (std::find(consumed_begin, consumed_.end(), key) != consumed_.end()) continue;
    if (decode_options_->unknown_field_paths != nullptr) {
      decode_options_->unknown_field_paths->push_back(PathWith(key));
    }
    if (keep) (*frame.unknown)[key] = *it;
  }
}

void FieldCodec::MergeUnknown(const Json& unknown, Json& out) {
  if (!unknown.is_object()) return;
  for (auto it = unknown.begin(); it != unknown.end(); ++it) {
    if (!out.contains(it.key())) out[it.key()] = *it;
  }
}

std::string FieldCodec::PathWith(std::string_view key) const {
  std::string path = path_;
  AppendPathKey(path, key);
  return path;
}

bool FieldCodec::IsEmptyJson(const Json& json) {
  switch (json.type()) {
    case Json::value_t::null:
      return true;
    case Json::value_t::string:
      return json.get_ref<const std::string&>().empty();
    case Json::value_t::boolean:
      return !json.get<bool>();
    case Json::value_t::number_integer:
      return json.get<int64_t>() == 0;
    case Json::value_t::number_unsigned:
      return json.get<uint64_t>() == 0;
    case Json::value_t::number_float:
      return json.get<double>() == 0;
    case Json::value_t::array:
    case Json::value_t::object:
      return json.empty();
    default:
      return false;
  }
}

void DescribeFields(FieldCodec& c, OwnerReference& v) {
  c.Field("apiVersion", v.api_version, {.emit_empty = true});
  c.Field("kind", v.kind, {.emit_empty = true});
  c.Field("name", v.name, {.emit_empty = true});
  c.Field("uid", v.uid, {.emit_empty = true});
  c.Field("controller", v.controller);
  c.Field("blockOwnerDeletion", v.block_owner_deletion);
}

void DescribeFields(FieldCodec& c, ObjectMeta& v) {
  c.Field("name", v.name);
  c.Field("generateName", v.generate_name);
  c.Field("namespace", v.namespace_);
  c.Field("uid", v.uid);
  c.Field("resourceVersion", v.resource_version);
  c.Field("generation", v.generation);
  c.Field("creationTimestamp", v.creation_timestamp);
  c.Field("deletionTimestamp", v.deletion_timestamp);
  c.Field("deletionGracePeriodSeconds", v.deletion_grace_period_seconds);
  c.Field("labels", v.labels);
  c.Field("annotations", v.annotations);
  c.Field("ownerReferences", v.owner_references);
  c.Field("finalizers", v.finalizers);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, Taint& v) {
  c.Field("key", v.key, {.emit_empty = true});
  c.Field("value", v.value);
  c.Field("effect", v.effect);
  c.Field("timeAdded", v.time_added);
}

void DescribeFields(FieldCodec& c, Toleration& v) {
  c.Field("key", v.key);
  c.Field("operator", v.op, {.omit_default = true});
  c.Field("value", v.value);
  c.Field("effect", v.effect);
  c.Field("tolerationSeconds", v.toleration_seconds);
}

void DescribeFields(FieldCodec& c, NodeSelectorRequirement& v) {
  c.Field("key", v.key, {.emit_empty = true});
  c.Field("operator", v.op);
  c.Field("values", v.values);
  c.Field("minValues", v.min_values);
}

void DescribeFields(FieldCodec& c, NodeSelectorTerm& v) {
  c.Field("matchExpressions", v.match_expressions);
  c.Field("matchFields", v.match_fields);
}

void DescribeFields(FieldCodec& c, NodeSelector& v) {
  c.Field("nodeSelectorTerms", v.terms, {.emit_empty = true});
}

void DescribeFields(FieldCodec& c, LabelSelectorRequirement& v) {
  c.Field("key", v.key, {.emit_empty = true});
  c.Field("operator", v.op);
  c.Field("values", v.values);
}

void DescribeFields(FieldCodec& c, LabelSelector& v) {
  c.Field("matchLabels", v.match_labels);
  c.Field("matchExpressions", v.match_expressions);
}

void DescribeFields(FieldCodec& c, Condition& v) {
  c.Field("type", v.type, {.emit_empty = true});
  c.Field("status", v.status);
  c.Field("observedGeneration", v.observed_generation);
  c.Field("lastTransitionTime", v.last_transition_time);
  c.Field("reason", v.reason, {.emit_empty = true});
  c.Field("message", v.message, {.emit_empty = true});
}

}  // namespace dovetail::apis::core
