#include "dovetail/controllers/disruption/involuntary_record.h"

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/absl_compat.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::disruption {
namespace {

constexpr char kTimeFormat[] = "%Y-%m-%dT%H:%M:%SZ";

absl::Status Invalid(std::string_view node_claim, std::string_view why) {
  return absl::InvalidArgumentError(
      Cat("nodeclaim ", node_claim, ": annotation ", kInvoluntaryDisruptionAnnotation, ": ", why));
}

}  // namespace

std::string EncodeInvoluntaryRecord(const ReplaceRequest& request) {
  nlohmann::ordered_json out = {{"reason", request.reason},
                                {"metricReason", request.metric_reason}};
  if (request.deadline != absl::InfiniteFuture()) {
    // Whole seconds, rounded down: a resumed command never drains later than asked.
    const absl::Time deadline = absl::FromUnixSeconds(absl::ToUnixSeconds(request.deadline));
    out["deadline"] = absl::FormatTime(kTimeFormat, deadline, absl::UTCTimeZone());
  }
  out["deleteWhenReady"] = request.delete_when_ready;
  out["cordon"] = request.cordon;
  return out.dump();
}

absl::StatusOr<ReplaceRequest> DecodeInvoluntaryRecord(std::string_view node_claim,
                                                       std::string_view text) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Invalid(node_claim, "not JSON");
  if (!json.is_object()) return Invalid(node_claim, "not a JSON object");
  ReplaceRequest request;
  request.node_claim = std::string(node_claim);
  for (const auto& [key, value] : json.items()) {
    if (key == "reason" || key == "metricReason") {
      if (!value.is_string()) return Invalid(node_claim, Cat(key, " is not a string"));
      (key == "reason" ? request.reason : request.metric_reason) = value.get<std::string>();
    } else if (key == "deleteWhenReady" || key == "cordon") {
      if (!value.is_boolean()) return Invalid(node_claim, Cat(key, " is not a boolean"));
      (key == "cordon" ? request.cordon : request.delete_when_ready) = value.get<bool>();
    } else if (key == "deadline") {
      if (!value.is_string()) return Invalid(node_claim, "deadline is not a string");
      std::string error;
      if (!absl::ParseTime(absl::RFC3339_full, value.get<std::string>(), &request.deadline,
                           &error)) {
        return Invalid(node_claim, Cat("deadline: ", error));
      }
    }  // Unknown keys: written by a newer version; ignored.
  }
  return request;
}

ReplaceRequest MergeInvoluntary(const ReplaceRequest& recorded, const ReplaceRequest& incoming) {
  ReplaceRequest out = incoming;
  out.deadline = std::min(recorded.deadline, incoming.deadline);
  out.delete_when_ready = recorded.delete_when_ready || incoming.delete_when_ready;
  out.cordon = recorded.cordon || incoming.cordon;
  return out;
}

ResumeAction DecideResume(const ReplaceRequest& recorded, absl::Time now) {
  return recorded.deadline <= now ? ResumeAction::kDelete : ResumeAction::kReplace;
}

}  // namespace dovetail::controllers::disruption
