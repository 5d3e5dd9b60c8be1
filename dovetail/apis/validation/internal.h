// Building blocks shared by the validators of this directory (not part of the public API): an
// error list, JSON-path helpers and the checks NodePool, NodeClaim and EC2NodeClass have in
// common. Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dovetail/apis/core/meta.h"
#include "dovetail/apis/validation/validation.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::apis::validation::internal {

class ErrorList {
 public:
  void Add(std::string field, std::string message, std::string value = {}) {
    errors_.push_back(FieldError{std::move(field), std::move(message), std::move(value)});
  }
  void Append(std::vector<FieldError> more) {
    for (FieldError& e : more) errors_.push_back(std::move(e));
  }
  std::vector<FieldError> Take() && { return std::move(errors_); }

 private:
  std::vector<FieldError> errors_;
};

// `path` + `.key` (or `["key"]`), and `path` + `[index]`, in codec.h path syntax.
std::string Child(std::string_view path, std::string_view key);
std::string Item(std::string_view path, size_t index);

// Quotes a value for a message: "value".
inline std::string Quote(std::string_view value) { return Cat("\"", value, "\""); }

// Checks metadata as the API server does for any object: a name (or generateName) that is a
// DNS-1123 subdomain, label keys that are qualified names with valid values, annotation keys that
// are qualified names and annotations of at most 256 KiB in total.
void ValidateObjectMeta(const core::ObjectMeta& meta, std::string_view path, ErrorList& errors);

// Why a label key may not be used in a NodePool (requirements, template labels) or NodeClaim
// requirement, or nullopt when it may: not a qualified name, a restricted key or domain (the CRD's
// kubernetes.io / k8s.io / karpenter.sh / karpenter.k8s.aws rules and Karpenter's runtime
// restrictions), or karpenter.sh/nodepool when `forbid_nodepool`.
std::optional<std::string> LabelKeyProblem(std::string_view key, bool forbid_nodepool);

// Checks a list of NodeSelectorRequirementWithMinValues at `path` (at most 100 items, keys,
// values, operators, minValues, well-known values).
void ValidateRequirements(const std::vector<core::NodeSelectorRequirement>& requirements,
                          std::string_view path, bool forbid_nodepool, ErrorList& errors);

// Checks taints and startup taints (`<path>.taints`, `<path>.startupTaints`): keys, values and no
// key+effect pair twice across both lists.
void ValidateTaints(const std::vector<core::Taint>& taints,
                    const std::vector<core::Taint>& startup_taints, std::string_view path,
                    ErrorList& errors);

// A non-negative decimal integer as Go's strconv.Atoi reads it (optional '+', fits int64).
std::optional<int64_t> ParseNonNegativeInteger(std::string_view text);

// Durations: `^([0-9]+(s|m|h))+$` that Go can parse; `allow_never` also admits "Never".
void ValidateKarpenterDuration(const std::optional<std::string>& value, std::string_view path,
                               bool allow_never, ErrorList& errors);

}  // namespace dovetail::apis::validation::internal
