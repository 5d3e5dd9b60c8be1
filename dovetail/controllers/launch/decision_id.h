// Decision IDs: a short identifier for one controller decision (a provisioning pass that creates
// NodeClaims or leaves pods unschedulable, a voluntary or involuntary disruption command), so that
// the NodeClaims it touched (annotation dovetail.sh/decision-id), its events (`decision=ID` in the
// note) and its log lines (field "decisionId") can be tied together, e.g. by `dovetail explain`.
//
// An ID is 8 lowercase hex digits: a bijective 32-bit mix of a per-process random base plus a
// counter interleaved over the streams below, so IDs are unique within a process (for 2^31
// decisions per stream) and unlikely to repeat across restarts. Used by the provisioner and the
// disruption controller (which links this library).
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace dovetail::controllers::launch {

inline constexpr std::string_view kDecisionIdAnnotationKey = "dovetail.sh/decision-id";

// Which controller a generator serves: generators of different streams never collide.
enum class DecisionStream : uint32_t { kProvisioning = 0, kDisruption = 1 };

// The ID for counter value `n` of `stream` over process base `base` (exposed for tests).
std::string FormatDecisionId(uint32_t base, DecisionStream stream, uint32_t n);

class DecisionIds {
 public:
  explicit DecisionIds(DecisionStream stream);
  // A new ID.
  std::string Next();

 private:
  const DecisionStream stream_;
  std::atomic<uint32_t> next_{0};
};

// True for 8 lowercase hex digits.
bool IsDecisionId(std::string_view id);

// How every Dovetail event names its decision: "NOTE (decision=ID)".
std::string WithDecisionId(std::string_view note, std::string_view id);
// The ID at the end of an event note written by WithDecisionId; "" when there is none.
std::string DecisionIdOf(std::string_view note);

}  // namespace dovetail::controllers::launch
