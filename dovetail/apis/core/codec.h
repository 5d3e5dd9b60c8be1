// The JSON codec shared by every API type in dovetail/apis (core Kubernetes objects, karpenter.sh
// and karpenter.k8s.aws kinds). Each struct describes its fields once, in a function
//
//   void DescribeFields(FieldCodec& c, Taint& t) {
//     c.Field("key", t.key);
//     c.Field("effect", t.effect);
//     c.UnknownFields(t.unknown_fields);  // only for structs that keep unknown fields
//   }
//
// and the same description drives decoding (nlohmann::json -> struct) and encoding (struct ->
// nlohmann::json). Conventions, matching how the Kubernetes API serialises Go structs:
//  - a JSON null or a missing key leaves the C++ field untouched (unset optional, empty value);
//  - encoding omits empty strings, zero numbers, false, empty lists and maps and unset optionals
//    (Go's `omitempty`), unless the field is described with {.emit_empty = true}; a set optional
//    is always written, even when it holds an empty value;
//  - keys a struct does not describe are kept in its `unknown_fields` object (when the struct has
//    one) and written back on encode, so a decode/encode round trip loses nothing there;
//  - types are checked strictly (a string field given a number is an error, as with kubectl);
//    quantities accept numbers or strings, integers accept integral floats (YAML `1.0`);
//  - errors are InvalidArgument and start with the JSON path of the offending value, e.g.
//    `spec.template.spec.requirements[0].operator: expected string, got number`.
// Enumerations are encoded by name; an enum type E opts in by providing, in its namespace,
// `std::span<const std::string_view> EnumNames(E)` listing the names in enumerator order
// (enumerators must be 0..N-1).
//
// Thread-compatible: a FieldCodec is a short-lived, single-threaded object; Decode/Encode entry
// points are safe to call concurrently on different objects.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/int_or_string.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/common/quantity.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::core {

struct DecodeOptions {
  // Keep keys the types do not model in `unknown_fields` (so that encoding writes them back).
  // Informers that only read may turn this off to save memory.
  bool keep_unknown_fields = true;
  // When set, receives the JSON path of every key no struct describes (including keys of structs
  // without an `unknown_fields` slot, which are dropped), e.g. `spec.template.spec.foo`.
  std::vector<std::string>* unknown_field_paths = nullptr;
};

struct FieldOptions {
  // Write the field even when it is empty or zero (Go fields without `omitempty`).
  bool emit_empty = false;
  // Enumerations only: leave the field out when it holds the first enumerator (the default).
  bool omit_default = false;
};

namespace codec_internal {
template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsVector : std::false_type {};
template <typename T, typename A>
struct IsVector<std::vector<T, A>> : std::true_type {};
template <typename T>
struct IsStringMap : std::false_type {};
template <typename V, typename C, typename A>
struct IsStringMap<std::map<std::string, V, C, A>> : std::true_type {};
}  // namespace codec_internal

// Name of an enumerator that has an EnumNames hook (empty for an out-of-range value).
template <typename E>
requires std::is_enum_v<E> std::string_view EnumName(E value) {
  const std::span<const std::string_view> names = EnumNames(E{});
  const auto index = static_cast<size_t>(value);
  return index < names.size() ? names[index] : std::string_view();
}

// Parses an enumerator by its exact name.
template <typename E>
requires std::is_enum_v<E> std::optional<E> ParseEnum(std::string_view name) {
  const std::span<const std::string_view> names = EnumNames(E{});
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

// JSON paths as decoding errors print them: `spec.requirements[0]`, `metadata.labels["a.b/c"]`
// (keys other than [A-Za-z0-9_-]+ are bracketed and quoted).
void AppendPathKey(std::string& path, std::string_view key);
void AppendPathIndex(std::string& path, size_t index);

class FieldCodec {
 public:
  static FieldCodec ForDecode(const DecodeOptions& options) { return FieldCodec(&options); }
  static FieldCodec ForEncode() { return FieldCodec(nullptr); }

  bool decoding() const { return decode_options_ != nullptr; }
  // Decoding: the JSON object of the struct being described (for values derived from the whole
  // object, such as NodePool::template_hash); null when encoding.
  const nlohmann::json* input() const { return frames_.empty() ? nullptr : frames_.back().in; }
  const absl::Status& status() const { return status_; }

  // Describes one field. See the file comment for the conventions.
  template <typename T>
  void Field(std::string_view key, T& value, FieldOptions options = {});

  // Declares the struct's slot for keys it does not describe. Call at most once per struct.
  void UnknownFields(nlohmann::json& unknown) { frames_.back().unknown = &unknown; }

  // Records a decoding error at the current path (plus `key` when non-empty). The first error
  // wins; later fields are skipped. For DescribeFields functions that check cross-field shape.
  void Fail(std::string_view message, std::string_view key = {});

  // Decodes / encodes a whole value (usually a struct) at the root.
  template <typename T>
  void DecodeValue(const nlohmann::json& json, T& out);
  template <typename T>
  nlohmann::json EncodeValue(const T& value, FieldOptions options = {});

 private:
  struct Frame {
    const nlohmann::json* in = nullptr;  // decoding
    nlohmann::json* out = nullptr;       // encoding
    nlohmann::json* unknown = nullptr;
    size_t consumed_begin = 0;  // this frame's keys in consumed_
  };

  explicit FieldCodec(const DecodeOptions* options) : decode_options_(options) {}

  template <typename T>
  void DecodeStruct(const nlohmann::json& json, T& out);
  template <typename T>
  nlohmann::json EncodeStruct(const T& value);
  void FinishDecodeFrame(Frame& frame);
  void MergeUnknown(const nlohmann::json& unknown, nlohmann::json& out);

  // Leaf decoders; each records an error on mismatch.
  void DecodeString(const nlohmann::json& json, std::string& out);
  void DecodeBool(const nlohmann::json& json, bool& out);
  void DecodeInt(const nlohmann::json& json, int64_t min, int64_t max, int64_t& out);
  void DecodeTime(const nlohmann::json& json, absl::Time& out);
  void DecodeQuantity(const nlohmann::json& json, Quantity& out);
  void DecodeIntOrString(const nlohmann::json& json, IntOrString& out);
  // Returns the index of the name `json` holds, or -1 after recording an error.
  int DecodeEnumIndex(const nlohmann::json& json, std::span<const std::string_view> names);
  bool ExpectKind(const nlohmann::json& json, nlohmann::json::value_t kind, const char* want);

  size_t PushKey(std::string_view key) {
    const size_t mark = path_.size();
    AppendPathKey(path_, key);
    return mark;
  }
  size_t PushIndex(size_t index) {
    const size_t mark = path_.size();
    AppendPathIndex(path_, index);
    return mark;
  }
  void PopPath(size_t length) { path_.resize(length); }
  std::string PathWith(std::string_view key) const;

  static bool IsEmptyJson(const nlohmann::json& json);

  const DecodeOptions* decode_options_;
  absl::Status status_;
  std::string path_;
  std::vector<Frame> frames_;
  std::vector<std::string_view> consumed_;  // keys decoded so far, a stack shared by all frames
};

// Encoding/decoding entry points for any described type.
template <typename T>
absl::Status DecodeJson(const nlohmann::json& json, T& out, const DecodeOptions& options = {}) {
  if (json.is_null()) return absl::InvalidArgumentError("expected object, got null");
  FieldCodec codec = FieldCodec::ForDecode(options);
  codec.DecodeValue(json, out);
  return codec.status();
}

template <typename T>
absl::StatusOr<T> DecodeAs(const nlohmann::json& json, const DecodeOptions& options = {}) {
  T out;
  if (absl::Status status = DecodeJson(json, out, options); !status.ok()) return status;
  return out;
}

template <typename T>
nlohmann::json EncodeJson(const T& value) {
  FieldCodec codec = FieldCodec::ForEncode();
  return codec.EncodeValue(value, FieldOptions{.emit_empty = true});
}

// RFC 3339 text as Kubernetes writes metav1.Time: UTC, "Z", fractional seconds only when present.
std::string FormatKubeTime(absl::Time time);
absl::StatusOr<absl::Time> ParseKubeTime(std::string_view text);

// Codec hooks for the shared types of meta.h.
std::span<const std::string_view> EnumNames(TaintEffect);
std::span<const std::string_view> EnumNames(TolerationOperator);
std::span<const std::string_view> EnumNames(SelectorOperator);
std::span<const std::string_view> EnumNames(LabelSelectorOperator);
std::span<const std::string_view> EnumNames(ConditionStatus);
void DescribeFields(FieldCodec& c, OwnerReference& v);
void DescribeFields(FieldCodec& c, ObjectMeta& v);
void DescribeFields(FieldCodec& c, Taint& v);
void DescribeFields(FieldCodec& c, Toleration& v);
void DescribeFields(FieldCodec& c, NodeSelectorRequirement& v);
void DescribeFields(FieldCodec& c, NodeSelectorTerm& v);
void DescribeFields(FieldCodec& c, NodeSelector& v);
void DescribeFields(FieldCodec& c, LabelSelectorRequirement& v);
void DescribeFields(FieldCodec& c, LabelSelector& v);
void DescribeFields(FieldCodec& c, Condition& v);

// Describes the top level of a Kubernetes object kind T, in this order: apiVersion, kind, metadata,
// spec (only when T has a `spec` member; with `spec_options`), status (only when T has a `status`
// member), then T's unknown_fields. For kinds with other top-level fields, describe them by hand.
template <typename T>
void DescribeObject(FieldCodec& c, T& v, FieldOptions spec_options = {}) {
  c.Field("apiVersion", v.api_version);
  c.Field("kind", v.kind);
  c.Field("metadata", v.metadata);
  if constexpr (requires { v.spec; }) c.Field("spec", v.spec, spec_options);
  if constexpr (requires { v.status; }) c.Field("status", v.status);
  c.UnknownFields(v.unknown_fields);
}

// ---------------------------------------------------------------------------------------------
// Implementation details below.

template <typename T>
void FieldCodec::Field(std::string_view key, T& value, FieldOptions options) {
  if (decoding()) {
    if (!status_.ok()) return;
    Frame& frame = frames_.back();
    const auto it = frame.in->find(key);
    if (it == frame.in->end()) return;
    consumed_.push_back(it.key());
    if (it->is_null()) return;
    const size_t mark = PushKey(key);
    DecodeValue(*it, value);
    PopPath(mark);
    return;
  }
  if constexpr (codec_internal::IsOptional<T>::value) {
    if (!value.has_value()) return;
    (*frames_.back().out)[std::string(key)] = EncodeValue(*value, FieldOptions{.emit_empty = true});
  } else if constexpr (std::is_enum_v<T>) {
    if (options.omit_default && value == T{}) return;
    (*frames_.back().out)[std::string(key)] = EncodeValue(value);
  } else {
    nlohmann::json encoded = EncodeValue(value, options);
    if (!options.emit_empty && IsEmptyJson(encoded)) return;
    (*frames_.back().out)[std::string(key)] = std::move(encoded);
  }
}

template <typename T>
void FieldCodec::DecodeValue(const nlohmann::json& json, T& out) {
  // null means "not set" (as in Go: the field keeps its zero value), also for list items and map
  // values (where the key is still created, e.g. a label with an empty value).
  if (!status_.ok() || json.is_null()) return;
  if constexpr (std::is_same_v<T, std::string>) {
    DecodeString(json, out);
  } else if constexpr (std::is_same_v<T, bool>) {
    DecodeBool(json, out);
  } else if constexpr (std::is_integral_v<T>) {
    static_assert(std::is_signed_v<T>, "API integers are signed");
    int64_t v = 0;
    DecodeInt(json, std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), v);
    out = static_cast<T>(v);
  } else if constexpr (std::is_enum_v<T>) {
    const int index = DecodeEnumIndex(json, EnumNames(T{}));
    if (index >= 0) out = static_cast<T>(index);
  } else if constexpr (std::is_same_v<T, absl::Time>) {
    DecodeTime(json, out);
  } else if constexpr (std::is_same_v<T, Quantity>) {
    DecodeQuantity(json, out);
  } else if constexpr (std::is_same_v<T, IntOrString>) {
    DecodeIntOrString(json, out);
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    out = json;
  } else if constexpr (codec_internal::IsOptional<T>::value) {
    if (!out.has_value()) out.emplace();
    DecodeValue(json, *out);
  } else if constexpr (codec_internal::IsVector<T>::value) {
    if (!ExpectKind(json, nlohmann::json::value_t::array, "array")) return;
    out.clear();
    out.resize(json.size());
    for (size_t i = 0; i < json.size() && status_.ok(); ++i) {
      const size_t mark = PushIndex(i);
      DecodeValue(json[i], out[i]);
      PopPath(mark);
    }
  } else if constexpr (codec_internal::IsStringMap<T>::value) {
    if (!ExpectKind(json, nlohmann::json::value_t::object, "object")) return;
    out.clear();
    for (auto it = json.begin(); it != json.end() && status_.ok(); ++it) {
      const size_t mark = PushKey(it.key());
      DecodeValue(*it, out[it.key()]);
      PopPath(mark);
    }
  } else {
    DecodeStruct(json, out);
  }
}

template <typename T>
nlohmann::json FieldCodec::EncodeValue(const T& value, FieldOptions options) {
  if constexpr (std::is_same_v<T, std::string>) {  // NOLINT(bugprone-branch-clone)
    return value;
  } else if constexpr (std::is_same_v<T, bool>) {
    return value;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<int64_t>(value);
  } else if constexpr (std::is_enum_v<T>) {
    return std::string(EnumName(value));
  } else if constexpr (std::is_same_v<T, absl::Time>) {
    return FormatKubeTime(value);
  } else if constexpr (std::is_same_v<T, Quantity>) {
    return value.ToString();
  } else if constexpr (std::is_same_v<T, IntOrString>) {
    if (value.is_int()) return value.int_value();
    return value.string_value();
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    return value;
  } else if constexpr (codec_internal::IsOptional<T>::value) {
    if (!value.has_value()) return nullptr;
    return EncodeValue(*value, FieldOptions{.emit_empty = true});
  } else if constexpr (codec_internal::IsVector<T>::value) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : value)
      out.push_back(EncodeValue(item, FieldOptions{.emit_empty = true}));
    return out;
  } else if constexpr (codec_internal::IsStringMap<T>::value) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : value) out[k] = EncodeValue(v, FieldOptions{.emit_empty = true});
    return out;
  } else {
    (void)options;
    return EncodeStruct(value);
  }
}

template <typename T>
void FieldCodec::DecodeStruct(const nlohmann::json& json, T& out) {
  if (!ExpectKind(json, nlohmann::json::value_t::object, "object")) return;
  Frame frame;
  frame.in = &json;
  frame.consumed_begin = consumed_.size();
  frames_.push_back(frame);
  DescribeFields(*this, out);
  FinishDecodeFrame(frames_.back());
  consumed_.resize(frames_.back().consumed_begin);
  frames_.pop_back();
}

template <typename T>
nlohmann::json FieldCodec::EncodeStruct(const T& value) {
  nlohmann::json out = nlohmann::json::object();
  Frame frame;
  frame.out = &out;
  frames_.push_back(frame);
  // Describing never modifies the struct while encoding; one description serves both directions.
  DescribeFields(*this, const_cast<T&>(value));
  if (frames_.back().unknown != nullptr) MergeUnknown(*frames_.back().unknown, out);
  frames_.pop_back();
  return out;
}

}  // namespace dovetail::apis::core
