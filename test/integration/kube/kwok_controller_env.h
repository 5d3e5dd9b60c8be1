// KwokControllerEnv: the objects a controller under test needs against the fixture's API server
// with the kwok cloud provider (synthetic catalog): the provider, an event recorder, the shared
// informers of the test's cluster state and the controllers' Dependencies over them, with the
// client, cluster state, clock and metrics registry the test owns (they must outlive the env).
// Init creates them; the test then constructs its controllers (they add informer handlers) and
// calls StartInformers; StopInformers in TearDown, after the controllers stopped. Destroy the
// controllers before the env. Test-only; thread-compatible.
#pragma once

#include <memory>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dovetail/cloudprovider/kwok/kwok_cloud_provider.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/common/clock.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "gtest/gtest.h"

namespace dovetail::kube::testing {

struct KwokControllerEnv {
  // Creates the provider, recorder, informers (not started) and Dependencies, in that order. A
  // fatal failure, leaving all of them null, when the synthetic catalog does not load: call it
  // under ASSERT_NO_FATAL_FAILURE. `metrics` may be null.
  void Init(Client& client, state::Cluster& cluster, const Clock& clock,
            metrics::Registry* metrics) {
    auto catalog = cloudprovider::kwok::SyntheticCatalog();
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    cloud = std::make_unique<cloudprovider::kwok::KwokCloudProvider>(client, std::move(*catalog));
    events = std::make_unique<EventRecorder>(client, clock, EventRecorderOptions{});
    informers = std::make_unique<state::ClusterInformers>(client, cluster);
    deps = std::make_unique<controllers::Dependencies>(
        controllers::Dependencies{client, cluster, *informers, *cloud, clock, *events, metrics});
  }

  // Starts the informers and waits (60 s at most) for their sync; a fatal failure when they do not
  // sync: call it under ASSERT_NO_FATAL_FAILURE.
  void StartInformers() {
    informers->Start();
    ASSERT_TRUE(informers->WaitForSync(absl::Now() + absl::Seconds(60)));
  }
  // Idempotent; a no-op before Init.
  void StopInformers() {
    if (informers != nullptr) informers->Stop();
  }

  // In the order of construction, so that the Dependencies go first and the provider last.
  std::unique_ptr<cloudprovider::kwok::KwokCloudProvider> cloud;
  std::unique_ptr<EventRecorder> events;
  std::unique_ptr<state::ClusterInformers> informers;
  std::unique_ptr<controllers::Dependencies> deps;
};

}  // namespace dovetail::kube::testing
