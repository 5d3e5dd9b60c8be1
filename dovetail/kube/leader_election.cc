#include "dovetail/kube/leader_election.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/random/random.h"
#include "absl/time/clock.h"
#include "dovetail/common/thread_entry.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/kube/wire.h"
#include "nlohmann/json.hpp"

namespace dovetail::kube {
namespace {

using internal::MicroTime;

}  // namespace

LeaderElector::LeaderElector(std::unique_ptr<RestClient> rest, LeaderElectionConfig config,
                             const Clock& clock, WriteGate* gate, LeaderCallbacks callbacks)
    : rest_(std::move(rest)),
      client_(*rest_),
      config_(std::move(config)),
      clock_(clock),
      gate_(gate),
      callbacks_(std::move(callbacks)) {
  if (config_.renew_deadline >= config_.lease_duration) {
    config_.renew_deadline = config_.lease_duration * 2 / 3;
  }
  if (config_.retry_period >= config_.renew_deadline) {
    config_.retry_period = config_.renew_deadline / 2;
  }
  if (gate_ != nullptr) gate_->Close();
  SetMasterStatus(false);
}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::SetMasterStatus(bool leading) {
  if (config_.metrics == nullptr) return;
  config_.metrics
      ->NewGauge("leader_election_master_status",
                 "1 while this process holds the lease `name`, else 0. Group by name.", {"name"})
      .Set({config_.lease_name}, leading ? 1 : 0);
}

void LeaderElector::Start() {
  thread_ = StartThread("leader-election", [this] { Run(); });
}

void LeaderElector::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool LeaderElector::IsLeader() const {
  absl::MutexLock lock(&mu_);
  return leader_ && clock_.Now() < last_renew_ + config_.renew_deadline;
}

LeaderStatus LeaderElector::Status() const {
  absl::MutexLock lock(&mu_);
  return LeaderStatus{
      .leading = leader_, .last_renewal = last_renew_, .lease_duration = config_.lease_duration};
}

std::string LeaderElector::observed_holder() const {
  absl::MutexLock lock(&mu_);
  return observed_holder_;
}

bool LeaderElector::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void LeaderElector::WaitOrStop(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), d);
}

void LeaderElector::Run() {
  absl::BitGen gen;
  while (!stopping()) {
    // Campaign.
    while (!stopping() && !TryAcquireOrRenew()) {
      WaitOrStop(config_.retry_period * absl::Uniform(gen, 1.0, 1.2));
    }
    if (stopping()) break;
    {
      absl::MutexLock lock(&mu_);
      leader_ = true;
    }
    SetMasterStatus(true);
    if (callbacks_.on_started_leading) callbacks_.on_started_leading();
    // Renew until a renewal has not succeeded for renew_deadline.
    while (!stopping()) {
      WaitOrStop(config_.retry_period);
      if (stopping()) break;
      if (TryAcquireOrRenew()) continue;
      if (clock_.Now() >= last_renew_ + config_.renew_deadline) break;
    }
    if (gate_ != nullptr) gate_->Close();
    {
      absl::MutexLock lock(&mu_);
      leader_ = false;
    }
    SetMasterStatus(false);
    if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
    if (stopping()) Release();
  }
}

bool LeaderElector::TryAcquireOrRenew() {
  const absl::Time now = clock_.Now();  // before the request: conservative for the deadline
  const std::string& id = config_.identity;
  absl::StatusOr<std::string> body =
      client_.Get(resources::kLeases, config_.lease_namespace, config_.lease_name);
  nlohmann::json lease;
  if (kube::IsNotFound(body.status())) {
    lease = {{"apiVersion", "coordination.k8s.io/v1"},
             {"kind", "Lease"},
             {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
             {"spec",
              {{"holderIdentity", id},
               {"leaseDurationSeconds", absl::ToInt64Seconds(config_.lease_duration)},
               {"acquireTime", MicroTime(now)},
               {"renewTime", MicroTime(now)},
               {"leaseTransitions", 0}}}};
    if (!client_.Create(resources::kLeases, config_.lease_namespace, lease.dump()).ok()) {
      return false;
    }
  } else {
    if (!body.ok()) return false;
    absl::StatusOr<nlohmann::json> parsed = ParseJsonBody(*body);
    if (!parsed.ok() || !parsed->is_object()) return false;
    lease = std::move(*parsed);
    nlohmann::json& spec = lease["spec"];
    if (!spec.is_object()) spec = nlohmann::json::object();
    const std::string holder = spec.value("holderIdentity", "");
    const std::string record = spec.dump();
    if (record != observed_record_) {
      observed_record_ = record;
      observed_time_ = now;
      bool changed = false;
      {
        absl::MutexLock lock(&mu_);
        changed = observed_holder_ != holder;
        observed_holder_ = holder;
      }
      if (changed && callbacks_.on_new_leader) callbacks_.on_new_leader(holder);
    }
    const absl::Duration duration = absl::Seconds(
        spec.value("leaseDurationSeconds", absl::ToInt64Seconds(config_.lease_duration)));
    if (!holder.empty() && holder != id && observed_time_ + duration > now) return false;
    if (holder != id) {
      spec["holderIdentity"] = id;
      spec["acquireTime"] = MicroTime(now);
      spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + (holder.empty() ? 0 : 1);
    }
    spec["renewTime"] = MicroTime(now);
    spec["leaseDurationSeconds"] = absl::ToInt64Seconds(config_.lease_duration);
    // PUT with the resourceVersion read above: a concurrent candidate makes this a conflict.
    if (!client_
             .Update(resources::kLeases, config_.lease_namespace, config_.lease_name, lease.dump())
             .ok()) {
      return false;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    last_renew_ = now;
    observed_holder_ = id;
  }
  observed_record_.clear();
  if (gate_ != nullptr) gate_->OpenUntil(now + config_.renew_deadline);
  return true;
}

void LeaderElector::Release() {
  absl::StatusOr<std::string> body =
      client_.Get(resources::kLeases, config_.lease_namespace, config_.lease_name);
  if (!body.ok()) return;
  absl::StatusOr<nlohmann::json> lease = ParseJsonBody(*body);
  if (!lease.ok() || !lease->contains("spec")) return;
  nlohmann::json& spec = (*lease)["spec"];
  if (spec.value("holderIdentity", "") != config_.identity) return;
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["renewTime"] = MicroTime(clock_.Now());
  (void)client_.Update(resources::kLeases, config_.lease_namespace, config_.lease_name,
                       lease->dump());
}

}  // namespace dovetail::kube
