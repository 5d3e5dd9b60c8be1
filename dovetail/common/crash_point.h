// Named crash points for the fault tests (docs/reliability.md): CrashPoint(name) ends the process
// at once with SIGKILL, as `kill -9` at that instant would, when the environment variable
// DOVETAIL_CRASH_POINT names it, and does nothing otherwise. The variable is read once, at the
// first call; a name that is no crash point is logged as an error there. It exists for tests only;
// the chart has no value that sets it (docs/settings.md). Thread-safe.
#pragma once

#include <string_view>

namespace dovetail {

// Between a NodeClaim's launch (CloudProvider::Create returned) and the write of its status
// (controllers/nodeclaim/lifecycle_controller.cc): the instance exists, the NodeClaim does not
// name it yet.
inline constexpr std::string_view kCrashPointNodeClaimLaunched = "nodeclaim-launched";

void CrashPoint(std::string_view name);

}  // namespace dovetail
