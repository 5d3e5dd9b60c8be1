#include "dovetail/kube/handler_registration.h"

namespace dovetail::kube::internal {

bool HandlerGate::Enter() {
  absl::MutexLock lock(&mu_);
  if (removed_) return false;
  calling_ = true;
  caller_ = std::this_thread::get_id();
  return true;
}

void HandlerGate::Exit() {
  absl::MutexLock lock(&mu_);
  calling_ = false;
  caller_ = std::thread::id();
}

void HandlerGate::Remove() {
  {
    absl::MutexLock lock(&mu_);
    removed_ = true;
    // From within the handler's own call: that call cannot be waited for (it is this one).
    if (calling_ && caller_ == std::this_thread::get_id()) return;
    auto idle = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !calling_; };
    mu_.Await(absl::Condition(&idle));
    if (released_) return;
    released_ = true;
  }
  // Outside the lock: the captures' destructors may do anything but call the handler.
  Release();
}

bool HandlerGate::removed() const {
  absl::MutexLock lock(&mu_);
  return removed_;
}

}  // namespace dovetail::kube::internal
