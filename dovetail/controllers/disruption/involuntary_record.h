// The durable record of an involuntary command: what a caller of the Replacer (replacer.h; the
// AWS interruption controller) asked for a node, kept on its NodeClaim in the annotation
// dovetail.sh/involuntary-disruption as JSON, e.g.
//   {"reason":"SpotInterrupted","metricReason":"spot_interrupted",
//    "deadline":"2026-12-06T10:02:15Z","deleteWhenReady":true,"cordon":true}
// ("deadline" absent: none; the queue's own command timeout applies).
//
// Why: the orchestration queue holds commands in memory only. The interruption controller writes
// the record before it asks the Replacer and before it deletes the SQS message, so a crash or a
// leader change after the message is gone loses nothing: at start-up the controller resumes every
// recorded command (DecideResume), and crash recovery (queue.h, RemoveStaleDisruptionMarks) leaves
// the karpenter.sh/disrupted taint of a recorded node in place. The record goes away with the
// NodeClaim. Upstream Karpenter, which deletes the NodeClaim at once, ignores the annotation, so
// switching back keeps the node until upstream's own handling (none: the message is gone) or the
// instance's reclaim.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/controllers/disruption/replacer.h"

namespace dovetail::controllers::disruption {

inline constexpr std::string_view kInvoluntaryDisruptionAnnotation =
    "dovetail.sh/involuntary-disruption";

// The annotation's value for `request` (its node_claim is the object's name and is not encoded).
std::string EncodeInvoluntaryRecord(const ReplaceRequest& request);

// The request recorded in `text` for the NodeClaim `node_claim`. Errors: InvalidArgument naming
// what is wrong (not JSON, a field of the wrong type, a deadline that is not RFC 3339).
absl::StatusOr<ReplaceRequest> DecodeInvoluntaryRecord(std::string_view node_claim,
                                                       std::string_view text);

// Two requests for one node, as the queue combines them (Replacer::Replace on a held node): the
// earlier deadline, delete_when_ready and cordon OR-ed, the reasons of `incoming`.
ReplaceRequest MergeInvoluntary(const ReplaceRequest& recorded, const ReplaceRequest& incoming);

enum class ResumeAction {
  kReplace,  // time is left before the deadline: replace first (the queue drains at the deadline)
  kDelete,   // the deadline has passed: delete (and so drain) the NodeClaim now
};

// What a restarted controller does with a recorded command at `now`.
ResumeAction DecideResume(const ReplaceRequest& recorded, absl::Time now);

}  // namespace dovetail::controllers::disruption
