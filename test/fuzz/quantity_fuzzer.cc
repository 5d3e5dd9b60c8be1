// Quantities (`2Gi`, `1e30`), Go durations (`720h`, `Never`) and RFC 3339 times, as they arrive in
// pod requests, node capacities and NodePool specs. Properties: a parsed quantity prints a text
// that parses back to the same value, and that text's own printing is a fixed point (the first
// round may change the format, as apimachinery's does: "1000187.5Ki" prints "1024192000", which
// prints "1024192k"); sums saturate instead of wrapping;
// a parsed duration or time formats to a text that parses back to the same value.
#include <cstdint>
#include <string>
#include <string_view>

#include "dovetail/apis/core/codec.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/duration.h"
#include "dovetail/common/quantity.h"
#include "test/fuzz/fuzz_check.h"

namespace {

void CheckQuantity(std::string_view text) {
  auto parsed = dovetail::Quantity::Parse(text);
  if (!parsed.ok()) return;
  const dovetail::Quantity& q = *parsed;
  const std::string printed = q.ToString();
  auto again = dovetail::Quantity::Parse(printed);
  FUZZ_CHECK(again.ok(), dovetail::Cat(text, " printed as ", printed, " which does not parse"));
  FUZZ_CHECK(*again == q, dovetail::Cat(text, " -> ", printed, " -> ", again->ToString()));
  const std::string reprinted = again->ToString();
  auto third = dovetail::Quantity::Parse(reprinted);
  FUZZ_CHECK(third.ok() && *third == q && third->ToString() == reprinted,
             dovetail::Cat(printed, " -> ", reprinted, " is not a fixed point"));
  FUZZ_CHECK(q.Sign() == (q.MilliValue() > 0) - (q.MilliValue() < 0), printed);
  // Sums work on the saturated milli view: never past +-(2^63-1), never wrapping sign.
  const dovetail::Quantity doubled = q + q;
  if (q.Sign() > 0) FUZZ_CHECK(doubled.MilliValue() >= q.MilliValue(), printed);
  if (q.Sign() < 0) FUZZ_CHECK(doubled.MilliValue() <= q.MilliValue(), printed);
  FUZZ_CHECK((q - q).IsZero() || !q.IsExactMilli(), printed);
  (void)q.Value();
}

void CheckDuration(std::string_view text) {
  auto parsed = dovetail::ParseGoDuration(text);
  if (parsed.ok()) {
    const std::string printed = dovetail::FormatGoDuration(*parsed);
    auto again = dovetail::ParseGoDuration(printed);
    FUZZ_CHECK(again.ok() && *again == *parsed, dovetail::Cat(text, " printed as ", printed));
  }
  auto nillable = dovetail::ParseNillableDuration(text);
  if (nillable.ok()) {
    const std::string printed = dovetail::FormatNillableDuration(*nillable);
    auto again = dovetail::ParseNillableDuration(printed);
    FUZZ_CHECK(again.ok() && *again == *nillable, dovetail::Cat(text, " printed as ", printed));
  }
  (void)dovetail::IsKarpenterDurationPattern(text);
  (void)dovetail::IsBudgetDurationPattern(text);
}

void CheckTime(std::string_view text) {
  auto parsed = dovetail::apis::core::ParseKubeTime(text);
  if (!parsed.ok()) return;
  const std::string printed = dovetail::apis::core::FormatKubeTime(*parsed);
  auto again = dovetail::apis::core::ParseKubeTime(printed);
  FUZZ_CHECK(again.ok(), dovetail::Cat(text, " printed as ", printed, " which does not parse"));
  // FormatKubeTime writes whole seconds (metav1.Time), so compare at that precision.
  FUZZ_CHECK(absl::ToUnixSeconds(*again) == absl::ToUnixSeconds(*parsed),
             dovetail::Cat(text, " -> ", printed));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckQuantity(text);
  CheckDuration(text);
  CheckTime(text);
  return 0;
}
