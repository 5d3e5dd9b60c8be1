#include "dovetail/operator/health.h"

#include "absl/strings/str_cat.h"

namespace dovetail::op {
namespace {

std::string WholeSeconds(absl::Duration d) { return absl::StrCat(absl::ToInt64Seconds(d), "s"); }

}  // namespace

HealthVerdict DecideHealth(const HealthInput& input) {
  if (input.lease.has_value() && input.lease->leading) {
    const LeaseHealthInput& lease = *input.lease;
    const absl::Duration limit = lease.lease_duration + kLeaseRenewalGrace;
    const absl::Duration since = input.now - lease.last_renewal;
    if (since > limit) {
      const std::string when = lease.last_renewal == absl::InfinitePast()
                                   ? std::string("never renewed")
                                   : absl::StrCat("not renewed for ", WholeSeconds(since));
      return {false, absl::StrCat("leader election: leading but lease ", lease.lease_name, " ",
                                  when, " (limit ", WholeSeconds(limit), ")")};
    }
  }
  const WorkHealthInput* oldest = nullptr;
  for (const WorkHealthInput& work : input.work) {
    if (!work.oldest_start.has_value()) continue;
    if (oldest == nullptr || *work.oldest_start < *oldest->oldest_start) oldest = &work;
  }
  if (oldest != nullptr) {
    const absl::Duration running = input.now - *oldest->oldest_start;
    if (running > kStuckWorkLimit) {
      return {false,
              absl::StrCat("controller ", oldest->controller, ": a unit of work running for ",
                           WholeSeconds(running), " (limit ", WholeSeconds(kStuckWorkLimit), ")")};
    }
  }
  return {};
}

}  // namespace dovetail::op
