#include "dovetail/providers/aws/interruption_messages.h"

#include <exception>
#include <optional>

#include "absl/strings/string_view.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/providers/aws/json_member.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws {
namespace {

using nlohmann::json;

constexpr std::string_view kSpotDetailType = "EC2 Spot Instance Interruption Warning";
constexpr std::string_view kRebalanceDetailType = "EC2 Instance Rebalance Recommendation";
constexpr std::string_view kStateChangeDetailType = "EC2 Instance State-change Notification";
constexpr std::string_view kCapacityReservationDetailType =
    "EC2 Capacity Reservation Instance Interruption Warning";
constexpr std::string_view kHealthDetailType = "AWS Health Event";

using internal::Member;

// The string member `key`: nullopt when absent or not a string.
std::optional<std::string> StringMember(const json& obj, const char* key) {
  const json* v = Member(obj, key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

// Marks `m` unknown / invalid for `reason` and hands it over (the caller returns the result).
InterruptionMessage Fail(InterruptionMessage& m, InterruptionKind kind, std::string reason) {
  m.kind = kind;
  m.reason = std::move(reason);
  m.instance_ids.clear();
  return std::move(m);
}

// An AWS Health time: RFC 1123 with "GMT" (what the Health API writes in EventBridge events) or
// RFC 3339. InfinitePast for anything else.
absl::Time ParseHealthTime(const std::string& text) {
  absl::Time t;
  std::string err;
  for (const char* format : {"%a, %d %b %Y %H:%M:%S GMT", "%d %b %Y %H:%M:%S GMT",
                             "%a, %d %b %Y %H:%M:%S UTC", absl::RFC3339_full}) {
    if (absl::ParseTime(format, text, absl::UTCTimeZone(), &t, &err)) return t;
  }
  return absl::InfinitePast();
}

// Fills the envelope. Returns an error reason for a malformed envelope, empty when it is fine.
std::string ParseEnvelope(const json& doc, InterruptionMessage& m) {
  for (const char* key : {"id", "source", "detail-type", "account", "region", "time", "version"}) {
    const json* v = Member(doc, key);
    if (v != nullptr && !v->is_string()) return Cat("field \"", key, "\" is not a string");
  }
  m.id = StringMember(doc, "id").value_or("");
  m.source = StringMember(doc, "source").value_or("");
  m.detail_type = StringMember(doc, "detail-type").value_or("");
  m.account = StringMember(doc, "account").value_or("");
  m.region = StringMember(doc, "region").value_or("");
  if (auto t = StringMember(doc, "time"); t.has_value() && !t->empty()) {
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, *t, &m.time, &err)) {
      return Cat("field \"time\" is not RFC 3339: ", err);
    }
  }
  if (const json* r = Member(doc, "resources"); r != nullptr) {
    if (!r->is_array()) return "field \"resources\" is not an array";
    for (const json& item : *r) {
      if (!item.is_string()) return "field \"resources\" holds a non-string";
      m.resources.push_back(item.get<std::string>());
    }
  }
  return "";
}

// detail."instance-id" as the one instance id; an error reason when it is missing.
std::string RequireInstanceId(const json& detail, InterruptionMessage& m) {
  std::optional<std::string> id = StringMember(detail, "instance-id");
  if (!id.has_value() || id->empty()) return "detail has no \"instance-id\" string";
  m.instance_ids.push_back(*id);
  return "";
}

InterruptionMessage ParseDocument(const json& doc) {
  InterruptionMessage m;
  if (!doc.is_object()) return Fail(m, InterruptionKind::kInvalid, "not a JSON object");
  if (std::string err = ParseEnvelope(doc, m); !err.empty()) {
    return Fail(m, InterruptionKind::kInvalid, std::move(err));
  }
  if (StringMember(doc, "Type").value_or("") == "Notification" &&
      Member(doc, "Message") != nullptr) {
    return Fail(m, InterruptionKind::kUnknown,
                "an SNS envelope; the queue must receive raw EventBridge events");
  }
  if (m.source.empty() || m.detail_type.empty()) {
    return Fail(m, InterruptionKind::kUnknown,
                "not an EventBridge event (no source / detail-type)");
  }
  const std::string version = StringMember(doc, "version").value_or("");
  const bool ec2 = m.source == "aws.ec2";
  const bool health = m.source == "aws.health";
  const std::string_view dt = m.detail_type;
  const bool known =
      (ec2 && (dt == kSpotDetailType || dt == kRebalanceDetailType ||
               dt == kStateChangeDetailType || dt == kCapacityReservationDetailType)) ||
      (health && dt == kHealthDetailType);
  if (!known) {
    return Fail(m, InterruptionKind::kUnknown,
                Cat("unhandled event ", m.source, " \"", m.detail_type, "\""));
  }
  if (version != "0") {
    return Fail(m, InterruptionKind::kUnknown,
                Cat("unhandled event version \"", version, "\" of \"", m.detail_type, "\""));
  }
  const json* detail = Member(doc, "detail");
  if (detail == nullptr || !detail->is_object()) {
    return Fail(m, InterruptionKind::kInvalid, "field \"detail\" is not an object");
  }
  std::string err;
  if (health) {
    const std::string service = StringMember(*detail, "service").value_or("");
    const std::string category = StringMember(*detail, "eventTypeCategory").value_or("");
    if (service != "EC2" || category != "scheduledChange") {
      return Fail(m, InterruptionKind::kUnknown,
                  Cat("Health event of service \"", service, "\" category \"", category,
                      "\" is not acted on"));
    }
    m.event_arn = StringMember(*detail, "eventArn").value_or("");
    m.event_type_code = StringMember(*detail, "eventTypeCode").value_or("");
    m.start_time = ParseHealthTime(StringMember(*detail, "startTime").value_or(""));
    m.end_time = ParseHealthTime(StringMember(*detail, "endTime").value_or(""));
    const json* entities = Member(*detail, "affectedEntities");
    if (entities == nullptr || !entities->is_array()) {
      return Fail(m, InterruptionKind::kInvalid, "detail has no \"affectedEntities\" array");
    }
    for (const json& e : *entities) {
      std::optional<std::string> value = StringMember(e, "entityValue");
      if (!value.has_value()) {
        return Fail(m, InterruptionKind::kInvalid,
                    "an affected entity has no \"entityValue\" string");
      }
      if (!value->empty()) m.instance_ids.push_back(*value);
    }
    if (m.instance_ids.empty()) {
      return Fail(m, InterruptionKind::kInvalid, "no affected entities");
    }
    m.kind = InterruptionKind::kScheduledChange;
    return m;
  }
  if (dt == kStateChangeDetailType) {
    err = RequireInstanceId(*detail, m);
    if (!err.empty()) return Fail(m, InterruptionKind::kInvalid, std::move(err));
    std::optional<std::string> state = StringMember(*detail, "state");
    if (!state.has_value()) {
      return Fail(m, InterruptionKind::kInvalid, "detail has no \"state\" string");
    }
    m.state = *state;
    if (m.state == "stopping" || m.state == "stopped") {
      m.kind = InterruptionKind::kInstanceStopped;
    } else if (m.state == "shutting-down" || m.state == "terminated") {
      m.kind = InterruptionKind::kInstanceTerminated;
    } else {
      return Fail(m, InterruptionKind::kUnknown,
                  Cat("instance state \"", m.state, "\" is not acted on"));
    }
    return m;
  }
  err = RequireInstanceId(*detail, m);
  if (!err.empty()) return Fail(m, InterruptionKind::kInvalid, std::move(err));
  if (const json* action = Member(*detail, "instance-action"); action != nullptr) {
    if (!action->is_string()) {
      return Fail(m, InterruptionKind::kInvalid, "detail \"instance-action\" is not a string");
    }
    m.instance_action = action->get<std::string>();
  }
  if (dt == kSpotDetailType) {
    m.kind = InterruptionKind::kSpotInterruption;
  } else if (dt == kRebalanceDetailType) {
    m.kind = InterruptionKind::kRebalanceRecommendation;
  } else {
    m.kind = InterruptionKind::kCapacityReservationInterruption;
  }
  return m;
}

}  // namespace

std::string_view InterruptionKindName(InterruptionKind kind) {
  switch (kind) {
    case InterruptionKind::kSpotInterruption:
      return "spot_interrupted";
    case InterruptionKind::kRebalanceRecommendation:
      return "rebalance_recommendation";
    case InterruptionKind::kScheduledChange:
      return "scheduled_change";
    case InterruptionKind::kInstanceStopped:
      return "instance_stopped";
    case InterruptionKind::kInstanceTerminated:
      return "instance_terminated";
    case InterruptionKind::kCapacityReservationInterruption:
      return "capacity_reservation_interrupted";
    case InterruptionKind::kUnknown:
      return "unknown";
    case InterruptionKind::kInvalid:
      return "invalid";
  }
  return "invalid";
}

InterruptionMessage ParseInterruptionMessage(std::string_view body) {
  // nlohmann::json is the third-party adapter here: parse without exceptions, and catch anything
  // it might still throw while the document is walked.
  try {
    json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
      InterruptionMessage m;
      m.kind = InterruptionKind::kInvalid;
      m.reason = "not JSON";
      return m;
    }
    return ParseDocument(doc);
  } catch (const std::exception& e) {
    InterruptionMessage m;
    m.kind = InterruptionKind::kInvalid;
    m.reason = Cat("malformed: ", e.what());
    return m;
  }
}

}  // namespace dovetail::providers::aws
