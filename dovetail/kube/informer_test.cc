// Informer<PodCodec> against a scripted API server in this process: undecodable objects in lists
// and watch events, re-lists after 410 Gone, and handler registrations (handler_registration.h).
#include "dovetail/kube/informer.h"

#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/common/log.h"
#include "dovetail/common/test_temp_dir.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/kube/undecodable.h"
#include "dovetail/kube/watch_event.h"
#include "dovetail/metrics/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace dovetail::kube {
namespace {

std::string Meta(const std::string& name, const std::string& rv) {
  return absl::StrCat(R"({"name":")", name, R"(","namespace":"ns","uid":"uid-)", name,
                      R"(","resourceVersion":")", rv, R"("})");
}

std::string GoodPod(const std::string& name, const std::string& rv) {
  return absl::StrCat(R"({"kind":"Pod","apiVersion":"v1","metadata":)", Meta(name, rv),
                      R"(,"spec":{"nodeName":"n1","containers":[{"name":"c","resources":)",
                      R"({"requests":{"cpu":"100m"}}}]},"status":{"phase":"Running"}})");
}

// Well-formed JSON that is not a Pod: the spec is a number.
std::string BadPod(const std::string& name, const std::string& rv) {
  return absl::StrCat(R"({"kind":"Pod","apiVersion":"v1","metadata":)", Meta(name, rv),
                      R"(,"spec":42,"status":{"phase":"Running"}})");
}

// Fails deep inside the spec (a request that is an object), with more of the pod after it.
std::string DeeplyBadPod(const std::string& name, const std::string& rv) {
  return absl::StrCat(R"({"kind":"Pod","apiVersion":"v1","metadata":)", Meta(name, rv),
                      R"(,"spec":{"containers":[{"name":"c","resources":{"requests":)",
                      R"({"cpu":{"not":["a","quantity"]},"memory":"1Gi"}}},{"name":"d"}],)",
                      R"("nodeName":"n1"},"status":{"phase":"Running","conditions":[]}})");
}

std::string PodList(const std::string& rv, const std::vector<std::string>& items) {
  return absl::StrCat(R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":")", rv,
                      R"("},"items":[)", absl::StrJoin(items, ","), "]}");
}

std::string Event(const std::string& type, const std::string& object) {
  return absl::StrCat(R"({"type":")", type, R"(","object":)", object, "}\n");
}

std::string GoneEvent() {
  return Event("ERROR", R"({"kind":"Status","apiVersion":"v1","status":"Failure","code":410,)"
                        R"("reason":"Expired","message":"too old resource version"})");
}

// A scripted API server for one resource (any path): each list answers the next body given to
// AddList (the last one again once they run out); each watch streams the lines of the next
// AddWatch, then ends the stream, or, for the last script and once none is left, holds it open
// until the test ends.
class FakeApiServer {
 public:
  FakeApiServer() {
    server_.Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.has_param("watch")) return ServeWatch(req, res);
      absl::MutexLock lock(&mu_);
      ++lists_served_;
      res.set_content(lists_.size() > 1 ? PopFront(lists_) : lists_.front(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!server_.is_running() && absl::Now() < deadline) std::this_thread::yield();
  }
  ~FakeApiServer() {
    stopping_.store(true);
    server_.stop();
    thread_.join();
  }

  void AddList(std::string body) {
    absl::MutexLock lock(&mu_);
    lists_.push_back(std::move(body));
  }
  void AddWatch(const std::vector<std::string>& lines) {
    absl::MutexLock lock(&mu_);
    watches_.push_back(absl::StrJoin(lines, ""));
  }

  RestConfig Config() const {
    RestConfig config;
    config.server = "http://127.0.0.1:" + std::to_string(port_);
    config.qps = 0;
    return config;
  }
  int lists_served() const {
    absl::MutexLock lock(&mu_);
    return lists_served_;
  }
  // The resourceVersion of every watch request, in order.
  std::vector<std::string> watch_versions() const {
    absl::MutexLock lock(&mu_);
    return watch_versions_;
  }

 private:
  static std::string PopFront(std::vector<std::string>& v) {
    std::string front = std::move(v.front());
    v.erase(v.begin());
    return front;
  }

  void ServeWatch(const httplib::Request& req, httplib::Response& res) {
    std::string body;
    bool hold = true;
    {
      absl::MutexLock lock(&mu_);
      watch_versions_.push_back(req.get_param_value("resourceVersion"));
      if (!watches_.empty()) {
        body = PopFront(watches_);
        hold = watches_.empty();
      }
    }
    res.set_chunked_content_provider(
        "application/json;stream=watch",
        [this, body, hold, sent = false](size_t, httplib::DataSink& sink) mutable {
          if (!sent) {
            sent = true;
            if (!body.empty() && !sink.write(body.data(), body.size())) return false;
          }
          if (!hold) {
            sink.done();
            return true;
          }
          absl::SleepFor(absl::Milliseconds(10));
          return !stopping_.load();
        });
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  mutable absl::Mutex mu_;
  std::vector<std::string> lists_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> watches_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> watch_versions_ ABSL_GUARDED_BY(mu_);
  int lists_served_ ABSL_GUARDED_BY(mu_) = 0;
};

// What the handlers were told, per key.
struct HandlerLog {
  absl::Mutex mu;
  std::vector<std::string> adds;
  std::vector<std::string> updates;  // "key old-rv->new-rv"
  std::vector<std::string> deletes;  // "key rv" of the object handed to on_delete

  EventHandler<PodInfo> Handler() {
    return {
        .on_add =
            [this](const auto& p) {
              absl::MutexLock l(&mu);
              adds.push_back(p->meta.Key());
            },
        .on_update =
            [this](const auto& old, const auto& now) {
              absl::MutexLock l(&mu);
              updates.push_back(absl::StrCat(now->meta.Key(), " ", old->meta.resource_version, "->",
                                             now->meta.resource_version));
            },
        .on_delete =
            [this](const auto& p) {
              absl::MutexLock l(&mu);
              deletes.push_back(absl::StrCat(p->meta.Key(), " ", p->meta.resource_version));
            },
    };
  }
};

bool WaitFor(const std::function<bool()>& condition) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    if (condition()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return condition();
}

class InformerTest : public ::testing::Test {
 protected:
  using PodInformer = Informer<PodCodec>;

  // An informer of the fake server's pods, not started, without handlers; `resync_period` zero:
  // no resync.
  std::unique_ptr<PodInformer> NewInformer(UndecodableReports* shared_reports = nullptr,
                                           absl::Duration resync_period = absl::ZeroDuration()) {
    if (client_ == nullptr) {
      auto rest = RestClient::Create(server_.Config(), {.max_retries = 0});
      EXPECT_TRUE(rest.ok()) << rest.status();
      rest_ = std::move(*rest);
      client_ = std::make_unique<Client>(*rest_);
    }
    return std::make_unique<PodInformer>(
        *client_, resources::kPods, PodCodec{&ctx_},
        InformerOptions{.resync_period = resync_period,
                        .backoff = {.initial = absl::Milliseconds(1), .max = absl::Milliseconds(5)},
                        .metrics = &metrics_,
                        .undecodable = shared_reports});
  }

  // A started informer whose events go to handlers_.
  std::unique_ptr<PodInformer> Start(UndecodableReports* shared_reports = nullptr) {
    auto informer = NewInformer(shared_reports);
    registrations_.push_back(informer->AddHandler(handlers_.Handler()));
    informer->Start();
    return informer;
  }

  static std::map<std::string, std::string> Cached(const PodInformer& informer) {
    std::map<std::string, std::string> out;
    for (const auto& p : informer.store().List()) out[p->meta.Key()] = p->meta.resource_version;
    return out;
  }

  double DecodeErrorsMetric() {
    return metrics_.NewCounter(kInformerDecodeErrorsMetric, "", {"kind"}).Value({"Pod"});
  }

  FakeApiServer server_;
  StringPool pool_;
  DecodeContext ctx_{.pool = &pool_};
  metrics::Registry metrics_;
  std::unique_ptr<RestClient> rest_;
  std::unique_ptr<Client> client_;
  HandlerLog handlers_;
  std::vector<HandlerRegistration> registrations_;  // of handlers_
};

using Cache = std::map<std::string, std::string>;

TEST_F(InformerTest, SkipsUndecodableListItemsAndSyncsTheRest) {
  server_.AddList(PodList(
      "10", {GoodPod("a", "1"), BadPod("b", "2"), DeeplyBadPod("c", "3"), GoodPod("d", "4")}));
  auto informer = Start();
  ASSERT_TRUE(informer->WaitForSync(absl::Now() + absl::Seconds(30)))
      << informer->stats().last_error;
  EXPECT_EQ(Cached(*informer), (Cache{{"ns/a", "1"}, {"ns/d", "4"}}));
  EXPECT_EQ(informer->stats().decode_errors, 2);
  EXPECT_EQ(informer->stats().errors, 0) << informer->stats().last_error;
  EXPECT_EQ(DecodeErrorsMetric(), 2);
  // The watch starts from the list's resourceVersion.
  ASSERT_TRUE(WaitFor([&] { return !server_.watch_versions().empty(); }));
  EXPECT_EQ(server_.watch_versions().at(0), "10");
  informer->Stop();
  absl::MutexLock l(&handlers_.mu);
  EXPECT_EQ(handlers_.adds, (std::vector<std::string>{"ns/a", "ns/d"}));
}

TEST_F(InformerTest, LogsEachUndecodableVersionOnceButCountsEverySkip) {
  const std::string log_path = dovetail::testing::ProcessTempDir("informer_test") + "/log.json";
  ASSERT_TRUE(log::SetOutputs({log_path}, {"stderr"}).ok());
  // b@5 in two lists (a 410 in between) and in a watch event, then b@7 in a watch event.
  server_.AddList(PodList("10", {GoodPod("a", "1"), BadPod("b", "5")}));
  server_.AddWatch({GoneEvent()});
  server_.AddList(PodList("12", {GoodPod("a", "1"), BadPod("b", "5")}));
  server_.AddWatch({Event("ADDED", BadPod("b", "5")), Event("MODIFIED", BadPod("b", "7")),
                    Event("MODIFIED", GoodPod("a", "13"))});
  auto informer = Start();
  ASSERT_TRUE(WaitFor([&] { return Cached(*informer)["ns/a"] == "13"; }))
      << informer->stats().last_error;
  informer->Stop();
  ASSERT_TRUE(log::SetOutputs({"stderr"}, {"stderr"}).ok());

  EXPECT_EQ(informer->stats().lists, 2);
  EXPECT_EQ(informer->stats().decode_errors, 4);
  EXPECT_EQ(DecodeErrorsMetric(), 4);
  std::ifstream in(log_path);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> skipped;
  for (absl::string_view line : absl::StrSplit(text.str(), '\n', absl::SkipEmpty())) {
    if (absl::StrContains(line, "cannot be decoded")) skipped.emplace_back(line);
  }
  ASSERT_EQ(skipped.size(), 2u) << text.str();
  for (const std::string& line : skipped) {
    EXPECT_TRUE(absl::StrContains(line, R"("kind":"Pod")")) << line;
    EXPECT_TRUE(absl::StrContains(line, R"("namespace":"ns")")) << line;
    EXPECT_TRUE(absl::StrContains(line, R"("name":"b")")) << line;
    EXPECT_TRUE(absl::StrContains(line, R"("error":")")) << line;
  }
  EXPECT_TRUE(absl::StrContains(skipped[0], R"("resourceVersion":"5")")) << skipped[0];
  EXPECT_TRUE(absl::StrContains(skipped[1], R"("resourceVersion":"7")")) << skipped[1];
}

// Several controllers have an informer of the same kind; with shared reports (as the operator
// wires them) a version is logged once, while each informer counts its own skips.
TEST_F(InformerTest, InformersSharingReportsLogAVersionOnce) {
  const std::string log_path = dovetail::testing::ProcessTempDir("informer_test") + "/shared.json";
  ASSERT_TRUE(log::SetOutputs({log_path}, {"stderr"}).ok());
  server_.AddList(PodList("10", {GoodPod("a", "1"), BadPod("b", "5")}));
  UndecodableReports shared;
  auto first = Start(&shared);
  auto second = Start(&shared);
  ASSERT_TRUE(first->WaitForSync(absl::Now() + absl::Seconds(30)));
  ASSERT_TRUE(second->WaitForSync(absl::Now() + absl::Seconds(30)));
  first->Stop();
  second->Stop();
  ASSERT_TRUE(log::SetOutputs({"stderr"}, {"stderr"}).ok());
  EXPECT_EQ(DecodeErrorsMetric(), 2);
  EXPECT_EQ(shared.size(), 1u);
  std::ifstream in(log_path);
  std::stringstream text;
  text << in.rdbuf();
  int lines = 0;
  for (absl::string_view line : absl::StrSplit(text.str(), '\n', absl::SkipEmpty())) {
    lines += absl::StrContains(line, "cannot be decoded") ? 1 : 0;
  }
  EXPECT_EQ(lines, 1) << text.str();
}

TEST_F(InformerTest, KeepsTheCachedVersionWhenAWatchedObjectStopsDecoding) {
  server_.AddList(PodList("10", {GoodPod("a", "1"), GoodPod("c", "2")}));
  // First watch: a's update, e's creation and c's deletion carry undecodable objects.
  server_.AddWatch({Event("MODIFIED", BadPod("a", "11")), Event("ADDED", BadPod("e", "12")),
                    Event("DELETED", DeeplyBadPod("c", "13"))});
  // Second watch (from the last skipped version): a decodes again.
  server_.AddWatch({Event("MODIFIED", GoodPod("a", "14"))});
  auto informer = Start();
  ASSERT_TRUE(WaitFor([&] {
    return Cached(*informer) == Cache{{"ns/a", "14"}};
  })) << informer->stats().last_error;
  informer->Stop();

  EXPECT_EQ(server_.watch_versions().at(1), "13");
  EXPECT_EQ(informer->stats().decode_errors, 3);
  EXPECT_EQ(informer->stats().lists, 1);  // no re-list: nothing was missed
  absl::MutexLock l(&handlers_.mu);
  EXPECT_EQ(handlers_.adds, (std::vector<std::string>{"ns/a", "ns/c"}));
  // a was cached at version 1 all along, until version 14 decoded.
  EXPECT_EQ(handlers_.updates, (std::vector<std::string>{"ns/a 1->14"}));
  // c was deleted by key, and on_delete got its last decoded version.
  EXPECT_EQ(handlers_.deletes, (std::vector<std::string>{"ns/c 2"}));
}

TEST_F(InformerTest, DeletedObjectWithoutAReadableNameForcesARelistThatSweepsIt) {
  server_.AddList(PodList("10", {GoodPod("a", "1"), GoodPod("c", "2")}));
  server_.AddWatch({Event("DELETED", R"({"kind":"Pod","metadata":7})")});
  server_.AddList(PodList("20", {GoodPod("a", "1")}));
  auto informer = Start();
  ASSERT_TRUE(WaitFor([&] { return informer->stats().lists == 2; }))
      << informer->stats().last_error;
  informer->Stop();
  EXPECT_EQ(Cached(*informer), (Cache{{"ns/a", "1"}}));
  absl::MutexLock l(&handlers_.mu);
  EXPECT_EQ(handlers_.deletes, (std::vector<std::string>{"ns/c 2"}));
}

TEST_F(InformerTest, RelistAfterGoneSweepsObjectsDeletedWhileTheWatchWasDown) {
  server_.AddList(
      PodList("10", {GoodPod("a", "1"), GoodPod("b", "2"), GoodPod("c", "3"), GoodPod("d", "4")}));
  server_.AddWatch({GoneEvent()});
  // Meanwhile b was deleted, a updated, c's new version does not decode, f was created.
  server_.AddList(PodList(
      "20", {GoodPod("a", "15"), BadPod("c", "16"), GoodPod("d", "4"), GoodPod("f", "17")}));
  auto informer = Start();
  ASSERT_TRUE(WaitFor([&] { return informer->stats().lists == 2; }))
      << informer->stats().last_error;
  informer->Stop();

  EXPECT_EQ(informer->stats().gone, 1);
  // b swept; c present on the server but undecodable: its cached version is kept.
  EXPECT_EQ(Cached(*informer),
            (Cache{{"ns/a", "15"}, {"ns/c", "3"}, {"ns/d", "4"}, {"ns/f", "17"}}));
  EXPECT_EQ(server_.watch_versions().at(1), "20");
  absl::MutexLock l(&handlers_.mu);
  EXPECT_EQ(handlers_.deletes, (std::vector<std::string>{"ns/b 2"}));
  EXPECT_EQ(handlers_.updates, (std::vector<std::string>{"ns/a 1->15"}));
  EXPECT_EQ(handlers_.adds, (std::vector<std::string>{"ns/a", "ns/b", "ns/c", "ns/d", "ns/f"}));
}

// Counts the calls of its handler.
struct CallCounter {
  std::atomic<int> calls{0};

  EventHandler<PodInfo> Handler() {
    return {
        .on_add = [this](const auto&) { ++calls; },
        .on_update = [this](const auto&, const auto&) { ++calls; },
        .on_delete = [this](const auto&) { ++calls; },
    };
  }
};

TEST_F(InformerTest, AResetHandlerIsNeverCalledAgainWhileTheOthersAre) {
  server_.AddList(PodList("10", {GoodPod("a", "1"), GoodPod("b", "2")}));
  // The resync re-delivers both pods every millisecond: a steady stream of calls.
  auto informer = NewInformer(nullptr, absl::Milliseconds(1));
  CallCounter kept, reset, moved;
  HandlerRegistration kept_registration = informer->AddHandler(kept.Handler());
  HandlerRegistration reset_registration = informer->AddHandler(reset.Handler());
  HandlerRegistration moved_registration;
  {
    HandlerRegistration first = informer->AddHandler(moved.Handler());
    moved_registration = std::move(first);
  }  // the moved-from registration removes nothing
  informer->Start();
  ASSERT_TRUE(WaitFor([&] { return reset.calls.load() >= 10 && moved.calls.load() >= 10; }));

  reset_registration.Reset();
  EXPECT_FALSE(reset_registration.registered());
  const int reset_calls = reset.calls.load();
  int kept_calls = kept.calls.load();
  ASSERT_TRUE(WaitFor([&] { return kept.calls.load() >= kept_calls + 50; }));
  EXPECT_EQ(reset.calls.load(), reset_calls);

  // Assigning to a registration removes the handler it held.
  EXPECT_TRUE(moved_registration.registered());
  moved_registration = HandlerRegistration();
  const int moved_calls = moved.calls.load();
  kept_calls = kept.calls.load();
  ASSERT_TRUE(WaitFor([&] { return kept.calls.load() >= kept_calls + 50; }));
  EXPECT_EQ(moved.calls.load(), moved_calls);

  // A registration may outlive its informer.
  informer.reset();
  kept_registration.Reset();
}

TEST_F(InformerTest, ResetWaitsForTheCallInProgressToReturn) {
  server_.AddList(PodList("10", {GoodPod("a", "1"), GoodPod("b", "2")}));
  auto informer = NewInformer();
  absl::Notification entered, release;
  std::atomic<bool> in_call{false};
  std::atomic<int> calls{0};
  HandlerRegistration registration = informer->AddHandler({
      .on_add =
          [&](const auto&) {
            in_call = true;
            ++calls;
            entered.Notify();
            release.WaitForNotification();
            absl::SleepFor(absl::Milliseconds(50));  // still in the call once released
            in_call = false;
          },
  });
  informer->Start();
  ASSERT_TRUE(entered.WaitForNotificationWithTimeout(absl::Seconds(30)));

  std::atomic<bool> reset_returned{false};
  bool in_call_when_reset_returned = true;
  std::thread resetter([&] {
    registration.Reset();
    in_call_when_reset_returned = in_call.load();
    reset_returned = true;
  });
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_FALSE(reset_returned.load()) << "Reset returned while the handler was in its call";
  release.Notify();
  resetter.join();
  EXPECT_FALSE(in_call_when_reset_returned);
  // b's add came after the Reset: not delivered; the informer went on and synced.
  ASSERT_TRUE(informer->WaitForSync(absl::Now() + absl::Seconds(30)));
  informer->Stop();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(Cached(*informer), (Cache{{"ns/a", "1"}, {"ns/b", "2"}}));
}

// Two threads add and reset registrations while the informer dispatches (the resync thread every
// millisecond, 3 pods): no handler is called once its Reset returned. Each handler's state is
// freed right after its Reset, so that AddressSanitizer reports any later call too.
TEST_F(InformerTest, RegistrationsAddedAndResetFromOtherThreadsWhileItDispatches) {
  server_.AddList(PodList("10", {GoodPod("a", "1"), GoodPod("b", "2"), GoodPod("c", "3")}));
  auto informer = NewInformer(nullptr, absl::Milliseconds(1));
  CallCounter steady;
  HandlerRegistration steady_registration = informer->AddHandler(steady.Handler());
  informer->Start();
  ASSERT_TRUE(informer->WaitForSync(absl::Now() + absl::Seconds(30)));

  std::atomic<int> late_calls{0};  // calls after their registration's Reset returned
  std::atomic<int> called_handlers{0};
  auto churn = [&] {
    for (int i = 0; i < 200; ++i) {
      auto counter = std::make_unique<CallCounter>();
      auto reset_done = std::make_shared<std::atomic<bool>>(false);
      CallCounter* c = counter.get();
      auto count = [c, reset_done, &late_calls] {
        if (reset_done->load()) ++late_calls;
        ++c->calls;
      };
      HandlerRegistration registration = informer->AddHandler({
          .on_add = [count](const auto&) { count(); },
          .on_update = [count](const auto&, const auto&) { count(); },
          .on_delete = [count](const auto&) { count(); },
      });
      if (i % 2 == 0) absl::SleepFor(absl::Microseconds(500));
      registration.Reset();
      reset_done->store(true);
      if (counter->calls.load() > 0) ++called_handlers;
      counter.reset();
    }
  };
  std::thread first(churn);
  std::thread second(churn);
  first.join();
  second.join();
  const int steady_calls = steady.calls.load();
  ASSERT_TRUE(WaitFor([&] { return steady.calls.load() >= steady_calls + 30; }));
  informer->Stop();
  EXPECT_EQ(late_calls.load(), 0);
  // The churn overlapped the dispatch: some of its handlers were called while registered.
  EXPECT_GT(called_handlers.load(), 0);
}

// From within a handler call: resetting its own registration returns at once (no further call),
// resetting another handler of the informer removes it from that very event on, and a handler
// added gets the next events.
TEST_F(InformerTest, AHandlerMayResetRegistrationsAndAddHandlers) {
  server_.AddList(PodList("10", {GoodPod("a", "1"), GoodPod("b", "2"), GoodPod("c", "3")}));
  auto informer = NewInformer();
  std::atomic<int> self_calls{0};
  CallCounter other, added;
  HandlerRegistration self, other_registration, added_registration;
  self = informer->AddHandler({
      .on_add =
          [&](const auto&) {
            ++self_calls;
            self.Reset();
            other_registration.Reset();
            added_registration = informer->AddHandler(added.Handler());
          },
  });
  other_registration = informer->AddHandler(other.Handler());
  informer->Start();
  ASSERT_TRUE(informer->WaitForSync(absl::Now() + absl::Seconds(30)));
  informer->Stop();
  EXPECT_EQ(self_calls.load(), 1);  // a
  EXPECT_EQ(other.calls.load(), 0);
  EXPECT_EQ(added.calls.load(), 2);  // b and c
  EXPECT_TRUE(added_registration.registered());
}

// The other codecs: NodeCodec stops inside a condition (a time that does not parse, with a
// condition after it); ApiObjectCodec has read the whole object before it refuses it.
TEST(InformerCodecsTest, SkipUndecodableObjectsOfEveryCodec) {
  const std::string good_node =
      R"({"metadata":{"name":"n1","resourceVersion":"1"},"spec":{"providerID":"kwok://n1"},)"
      R"("status":{"conditions":[{"type":"Ready","status":"True"}]}})";
  const std::string tampered_node =
      R"({"metadata":{"name":"n2","resourceVersion":"2"},"spec":{"providerID":"kwok://n2"},)"
      R"("status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"never"},)"
      R"({"type":"DiskPressure","status":"False"}],"capacity":{"cpu":"4"}}})";
  const std::string good_claim =
      R"({"apiVersion":"karpenter.sh/v1","kind":"NodeClaim","metadata":{"name":"c1",)"
      R"("resourceVersion":"3"},"spec":{"nodeClassRef":{"group":"karpenter.k8s.aws",)"
      R"("kind":"EC2NodeClass","name":"default"},"requirements":[]}})";
  const std::string bad_claim =
      R"({"apiVersion":"karpenter.sh/v1","kind":"NodeClaim","metadata":{"name":"c2",)"
      R"("resourceVersion":"4"},"spec":"garbage"})";
  auto list = [](const std::vector<std::string>& items) {
    return absl::StrCat(R"({"metadata":{"resourceVersion":"9"},"items":[)",
                        absl::StrJoin(items, ","), "]}");
  };
  FakeApiServer node_server;
  node_server.AddList(list({tampered_node, good_node}));
  FakeApiServer claim_server;
  claim_server.AddList(list({bad_claim, good_claim}));
  auto node_rest = RestClient::Create(node_server.Config(), {.max_retries = 0});
  auto claim_rest = RestClient::Create(claim_server.Config(), {.max_retries = 0});
  ASSERT_TRUE(node_rest.ok() && claim_rest.ok());
  Client node_client(**node_rest);
  Client claim_client(**claim_rest);
  StringPool pool;
  DecodeContext ctx{.pool = &pool};
  metrics::Registry registry;
  Informer<NodeCodec> nodes(node_client, resources::kNodes, NodeCodec{&ctx},
                            {.metrics = &registry});
  Informer<ApiObjectCodec<apis::v1::NodeClaim>> claims(claim_client, resources::kNodeClaims, {},
                                                       {.metrics = &registry});
  nodes.Start();
  claims.Start();
  ASSERT_TRUE(nodes.WaitForSync(absl::Now() + absl::Seconds(30))) << nodes.stats().last_error;
  ASSERT_TRUE(claims.WaitForSync(absl::Now() + absl::Seconds(30))) << claims.stats().last_error;
  nodes.Stop();
  claims.Stop();
  EXPECT_EQ(nodes.store().Keys(), std::vector<std::string>{"n1"});
  EXPECT_EQ(claims.store().Keys(), std::vector<std::string>{"c1"});
  metrics::Counter& errors = registry.NewCounter(kInformerDecodeErrorsMetric, "", {"kind"});
  EXPECT_EQ(errors.Value({"Node"}), 1);
  EXPECT_EQ(errors.Value({"NodeClaim"}), 1);
}

// An object whose JSON structure breaks inside it ({:}, a colon where a key belongs) leaves the
// simdjson document dead once the codec reads into it: the page and the event are errors, and
// nothing reads the abandoned document again (found by test/fuzz/object_decoder_fuzzer).
TEST(DecodeOrIdentifyTest, BrokenStructureInsideAnObjectFailsThePageNotTheProcess) {
  StringPool pool;
  const DecodeContext ctx{.pool = &pool};
  const PodCodec codec{&ctx};
  simdjson::ondemand::parser parser;
  std::vector<std::string> decoded;
  auto decode = [&](simdjson::ondemand::object item,
                    simdjson::ondemand::document& doc) -> absl::Status {
    PodInfo pod;
    absl::Status decode_error;
    std::optional<ObjectIdentity> skipped;
    RETURN_IF_ERROR(DecodeOrIdentify(codec, item, doc, pod, decode_error, skipped));
    if (decode_error.ok()) decoded.push_back(pod.meta.name);
    return absl::OkStatus();
  };
  std::string body = R"({"items":[{"metadata":{"name":"a"}},{:},{"metadata":{"name":"b"}}]})";
  ListMeta meta;
  const absl::Status list = ParseList(parser, body, meta, decode);
  EXPECT_FALSE(list.ok());
  EXPECT_THAT(std::string(list.message()), ::testing::HasSubstr("cannot be read past it"));
  EXPECT_EQ(decoded, std::vector<std::string>{"a"});

  const simdjson::padded_string line(std::string_view(R"({"type":"ADDED","object":{:}})"));
  WatchEventType type;
  std::string bookmark_rv;
  absl::Status error;
  EXPECT_FALSE(ParseWatchEvent(parser, line.data(), line.size(),
                               line.size() + simdjson::SIMDJSON_PADDING, type, bookmark_rv, error,
                               decode)
                   .ok());
}

}  // namespace
}  // namespace dovetail::kube
