// IntOrString: a Kubernetes field that holds either a 32-bit integer or a string, such as a
// PodDisruptionBudget's minAvailable ("50%" or 2) or a port name. Used by the API types in
// dovetail/apis; the JSON form is a bare number or a bare string. Value type; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace dovetail::apis::core {

class IntOrString {
 public:
  IntOrString() = default;
  static IntOrString FromInt(int32_t value);
  static IntOrString FromString(std::string value);

  bool is_int() const { return is_int_; }
  bool is_string() const { return !is_int_; }
  int32_t int_value() const { return int_value_; }
  const std::string& string_value() const { return string_value_; }

  // The value as text: "3" for an integer, the string itself otherwise.
  std::string ToString() const;

  // Resolves an absolute count or a percentage ("25%") of `total`, as Kubernetes'
  // GetScaledValueFromIntOrPercent does: a percentage is rounded up when `round_up`, down
  // otherwise. Errors: InvalidArgument for a string that is not "<integer>%".
  absl::StatusOr<int32_t> ScaledValue(int32_t total, bool round_up) const;

  friend bool operator==(const IntOrString&, const IntOrString&) = default;

 private:
  bool is_int_ = true;
  int32_t int_value_ = 0;
  std::string string_value_;
};

}  // namespace dovetail::apis::core
