#include "dovetail/apis/core/int_or_string.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace dovetail::apis::core {

IntOrString IntOrString::FromInt(int32_t value) {
  IntOrString v;
  v.is_int_ = true;
  v.int_value_ = value;
  return v;
}

IntOrString IntOrString::FromString(std::string value) {
  IntOrString v;
  v.is_int_ = false;
  v.string_value_ = std::move(value);
  return v;
}

std::string IntOrString::ToString() const {
  return is_int_ ? absl::StrCat(int_value_) : string_value_;
}

absl::StatusOr<int32_t> IntOrString::ScaledValue(int32_t total, bool round_up) const {
  if (is_int_) return int_value_;
  absl::string_view text = string_value_;
  int64_t percent = 0;
  if (!absl::ConsumeSuffix(&text, "%") || !absl::SimpleAtoi(text, &percent)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid value \"", string_value_, "\": want an integer or a percentage"));
  }
  // 64-bit intermediate: percent * total cannot overflow for int32 inputs and sane percentages.
  if (percent > std::numeric_limits<int32_t>::max() ||
      percent < std::numeric_limits<int32_t>::min()) {
    return absl::InvalidArgumentError(absl::StrCat("percentage out of range: ", string_value_));
  }
  const int64_t product = percent * static_cast<int64_t>(total);
  int64_t scaled = product / 100;
  if (round_up && product % 100 != 0 && product > 0) ++scaled;
  if (!round_up && product % 100 != 0 && product < 0) --scaled;
  if (scaled > std::numeric_limits<int32_t>::max() ||
      scaled < std::numeric_limits<int32_t>::min()) {
    return absl::InvalidArgumentError(absl::StrCat("scaled value out of range: ", string_value_));
  }
  return static_cast<int32_t>(scaled);
}

}  // namespace dovetail::apis::core
