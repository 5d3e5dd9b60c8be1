// HandlerRegistration: an event handler's place on an informer (Informer::AddHandler, informer.h).
// While the registration lives, the informer calls the handler; Reset() or the destructor removes
// it, under this contract:
//  - once Reset() returns, the handler is never called again and no call of it is in progress:
//    Reset waits for the call in flight, if any, to return. Then it destroys the handler's
//    function objects (their captures). So the state a handler touches may go right after: an
//    owner declares its registrations after that state (members are destroyed last to first), or
//    resets them first thing in its destructor.
//  - Reset may be called from any thread at any time, also while the informer dispatches: it takes
//    no lock of the informer, only the handler's own. From within a handler call it never waits
//    for that same call: resetting the handler's own registration returns at once (no further
//    call starts; the informer destroys the function objects once the call in progress returns),
//    and resetting another handler of the same informer finds it idle (an informer calls its
//    handlers one at a time).
//  - Since Reset waits, the usual rule of waiting holds: do not call it while holding a lock that
//    the handler takes, or from a handler of one informer for a handler of another that waits for
//    the first.
//  - A registration may outlive its informer (Reset then has nothing to wait for).
// Movable, not copyable; a default-constructed or moved-from registration holds nothing, and
// assigning to a registration resets what it held first. One registration is used from one thread
// at a time (like any object); what races with the informer is handled above.
#pragma once

#include <memory>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace dovetail::kube {

namespace internal {

// The informer's side of one handler: it Enter()s before each call of the handler and Exit()s
// after; Remove() is what HandlerRegistration::Reset does.
class HandlerGate {
 public:
  HandlerGate() = default;
  HandlerGate(const HandlerGate&) = delete;
  HandlerGate& operator=(const HandlerGate&) = delete;
  virtual ~HandlerGate() = default;

  // False once removed: the handler must not be called. True: a call may start, and Exit() must
  // follow it. One call at a time (the informer serialises its dispatch).
  bool Enter();
  void Exit();
  // Stops further calls, waits for the call in progress unless it is the caller's own, then
  // (when it waited) Release()s the handler. Idempotent.
  void Remove();
  bool removed() const;

 protected:
  // Destroys the handler's function objects; called at most once, with no call in progress.
  virtual void Release() = 0;

 private:
  mutable absl::Mutex mu_;
  bool removed_ ABSL_GUARDED_BY(mu_) = false;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
  bool calling_ ABSL_GUARDED_BY(mu_) = false;
  std::thread::id caller_ ABSL_GUARDED_BY(mu_);
};

// Enter() on construction, Exit() on destruction when it entered.
class HandlerCall {
 public:
  explicit HandlerCall(HandlerGate& gate) : gate_(gate), entered_(gate.Enter()) {}
  ~HandlerCall() {
    if (entered_) gate_.Exit();
  }
  HandlerCall(const HandlerCall&) = delete;
  HandlerCall& operator=(const HandlerCall&) = delete;
  explicit operator bool() const { return entered_; }

 private:
  HandlerGate& gate_;
  const bool entered_;
};

}  // namespace internal

class [[nodiscard]] HandlerRegistration {
 public:
  HandlerRegistration() = default;
  explicit HandlerRegistration(std::shared_ptr<internal::HandlerGate> gate)
      : gate_(std::move(gate)) {}
  ~HandlerRegistration() { Reset(); }
  HandlerRegistration(HandlerRegistration&& other) noexcept = default;
  HandlerRegistration& operator=(HandlerRegistration&& other) noexcept {
    if (this != &other) {
      Reset();
      gate_ = std::move(other.gate_);
    }
    return *this;
  }
  HandlerRegistration(const HandlerRegistration&) = delete;
  HandlerRegistration& operator=(const HandlerRegistration&) = delete;

  // Removes the handler (the contract above); nothing when it holds none.
  void Reset() {
    if (gate_ == nullptr) return;
    gate_->Remove();
    gate_.reset();
  }
  // Whether it holds a handler (not reset, not moved from).
  bool registered() const { return gate_ != nullptr; }

 private:
  std::shared_ptr<internal::HandlerGate> gate_;
};

}  // namespace dovetail::kube
