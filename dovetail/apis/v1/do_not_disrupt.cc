#include "dovetail/apis/v1/do_not_disrupt.h"

#include "dovetail/common/duration.h"

namespace dovetail::apis::v1 {

bool DoNotDisruptInForce(std::string_view value, std::optional<absl::Time> since, absl::Time now,
                         bool* invalid) {
  if (invalid != nullptr) *invalid = false;
  if (value == "true") return true;
  absl::StatusOr<absl::Duration> duration = ParseGoDuration(value);
  if (!duration.ok() || *duration < absl::ZeroDuration()) {
    if (invalid != nullptr) *invalid = true;
    return false;
  }
  return since.has_value() && now < *since + *duration;
}

}  // namespace dovetail::apis::v1
