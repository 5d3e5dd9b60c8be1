#include "dovetail/providers/aws/interruption/instance_status.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"

namespace dovetail::providers::aws::interruption {
namespace {

constexpr std::string_view kFailedCheck = "failed";

void AddDetails(const Ec2StatusSummary& summary, StatusCategory category,
                std::vector<StatusDetail>& out) {
  for (const Ec2StatusDetail& d : summary.details) {
    out.push_back({.category = category,
                   .name = d.name,
                   .status = d.status,
                   .impaired_since = d.impaired_since});
  }
}

bool Counts(const StatusDetail& d, absl::Time now) {
  if (d.status != kFailedCheck) return false;
  // A scheduled event means the host needs vacating, whenever it is due (upstream treats it so,
  // as it treats the Health events from the queue).
  if (d.category == StatusCategory::kEventStatus) return true;
  // A failed check without a readable impairedSince has been failing for an unknown time: it
  // counts (InfinitePast is long enough ago), as upstream's zero time does.
  return now - d.impaired_since >= kUnhealthyThreshold;
}

}  // namespace

std::string_view StatusCategoryName(StatusCategory category) {
  switch (category) {
    case StatusCategory::kInstanceStatus:
      return "InstanceStatus";
    case StatusCategory::kSystemStatus:
      return "SystemStatus";
    case StatusCategory::kEbsStatus:
      return "EBSStatus";
    case StatusCategory::kEventStatus:
      return "EventStatus";
  }
  return "";
}

CategoryAction ActionForCategory(StatusCategory category) {
  switch (category) {
    case StatusCategory::kInstanceStatus:
      return {.act = true, .kind = "instance_status", .forceful = true};
    case StatusCategory::kSystemStatus:
      return {.act = true, .kind = "system_status", .forceful = true};
    case StatusCategory::kEventStatus:
      return {.act = true, .kind = "event_status", .forceful = false};
    case StatusCategory::kEbsStatus:
      break;
  }
  return {};
}

std::vector<std::vector<Filter>> InstanceStatusFilterSets() {
  return {
      {{"instance-status.status", {"impaired"}}},
      {{"system-status.status", {"impaired"}}},
      {{"event.code",
        {"instance-reboot", "system-reboot", "system-maintenance", "instance-retirement",
         "instance-stop"}}},
  };
}

std::vector<StatusCategory> UnhealthyInstance::Categories() const {
  std::vector<StatusCategory> out;
  for (const StatusDetail& d : details) out.push_back(d.category);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<UnhealthyInstance> UnhealthyInstances(const std::vector<Ec2InstanceStatus>& statuses,
                                                  absl::Time now) {
  std::vector<UnhealthyInstance> out;
  absl::flat_hash_set<std::string> seen;
  for (const Ec2InstanceStatus& s : statuses) {
    if (!seen.insert(s.instance_id).second) continue;
    std::vector<StatusDetail> details;
    AddDetails(s.instance_status, StatusCategory::kInstanceStatus, details);
    AddDetails(s.system_status, StatusCategory::kSystemStatus, details);
    AddDetails(s.attached_ebs_status, StatusCategory::kEbsStatus, details);
    for (const Ec2InstanceStatusEvent& e : s.events) {
      details.push_back({.category = StatusCategory::kEventStatus,
                         .name = e.code,
                         .status = std::string(kFailedCheck),
                         .impaired_since = now});
    }
    std::erase_if(details, [&](const StatusDetail& d) { return !Counts(d, now); });
    if (details.empty()) continue;
    UnhealthyInstance u{.instance_id = s.instance_id, .details = std::move(details)};
    u.impaired_since = absl::InfiniteFuture();
    for (const StatusDetail& d : u.details) {
      u.impaired_since = std::min(u.impaired_since, d.impaired_since);
    }
    out.push_back(std::move(u));
  }
  return out;
}

std::set<UnhealthySeen::Key> UnhealthySeen::Poll(std::set<Key> reported) {
  std::set<Key> fresh;
  for (const Key& k : reported) {
    if (!seen_.contains(k)) fresh.insert(k);
  }
  seen_ = std::move(reported);
  return fresh;
}

}  // namespace dovetail::providers::aws::interruption
