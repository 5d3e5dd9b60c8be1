#include "dovetail/kube/singleton.h"

#include <string>
#include <utility>

namespace dovetail::kube {

namespace {
constexpr char kSingletonKey[] = "singleton";
}  // namespace

Singleton::Singleton(WorkQueueOptions queue, absl::Duration period, Pass pass)
    : queue_options_(std::move(queue)), period_(period), pass_(std::move(pass)) {}

Singleton::~Singleton() { Stop(); }

void Singleton::Start() {
  absl::MutexLock lock(&mu_);
  if (queue_ != nullptr) return;
  queue_ = std::make_unique<WorkQueue>(queue_options_);
  worker_ = std::make_unique<ReconcileWorkers>(
      *queue_,
      [this](const std::string&) -> absl::StatusOr<ReconcileResult> {
        absl::Status status;
        {
          WorkInProgress::Scope scope(work_);
          status = pass_();
        }
        if (!status.ok()) return status;
        return ReconcileResult{.requeue_after = period_};
      },
      1);
  queue_->Add(kSingletonKey);
  worker_->Start();
}

void Singleton::Stop() {
  // Under the lock throughout, so that a Start meanwhile cannot begin a pass beside the one in
  // flight (the pass never takes it).
  absl::MutexLock lock(&mu_);
  if (worker_ != nullptr) worker_->Stop();
  worker_.reset();
  queue_.reset();
}

}  // namespace dovetail::kube
