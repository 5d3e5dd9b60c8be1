#include "dovetail/metrics/registry.h"

#include <string>

#include "dovetail/metrics/server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace dovetail::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(RegistryTest, ExposesCountersGaugesAndHistogramsInTextFormat) {
  Registry r;
  Counter& created = r.NewCounter("karpenter_nodeclaims_created_total", "NodeClaims created.",
                                  {"nodepool", "reason"});
  created.Inc({"default", "provisioned"});
  created.Inc({"default", "provisioned"}, 2);
  created.Inc({"bad-arity"});  // dropped
  Gauge& pods = r.NewGauge("karpenter_pods_state", "Pods by phase.", {"phase"});
  pods.Set({"Running"}, 12);
  Histogram& h = r.NewHistogram("karpenter_provisioner_scheduling_duration_seconds",
                                "Scheduling simulation time.", {}, {0.1, 1});
  h.Observe({}, 0.05);
  h.Observe({}, 0.5);
  h.Observe({}, 5);
  const std::string text = r.Expose();
  EXPECT_THAT(text, HasSubstr("# TYPE karpenter_nodeclaims_created_total counter\n"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "karpenter_nodeclaims_created_total{nodepool=\"default\",reason=\"provisioned\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_state{phase=\"Running\"} 12\n"));
  EXPECT_THAT(
      text, HasSubstr("karpenter_provisioner_scheduling_duration_seconds_bucket{le=\"0.1\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("karpenter_provisioner_scheduling_duration_seconds_bucket{le=\"1\"} 2\n"));
  EXPECT_THAT(
      text, HasSubstr("karpenter_provisioner_scheduling_duration_seconds_bucket{le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_provisioner_scheduling_duration_seconds_count 3\n"));
  EXPECT_EQ(created.Value({"default", "provisioned"}), 3);
  EXPECT_EQ(&r.NewCounter("karpenter_nodeclaims_created_total", "", {"nodepool", "reason"}),
            &created);
}

TEST(RegistryTest, EscapesLabelValues) {
  Registry r;
  r.NewGauge("g", "help with \\ backslash", {"v"}).Set({"a\"b\nc"}, 1);
  EXPECT_THAT(r.Expose(), HasSubstr("g{v=\"a\\\"b\\nc\"} 1\n"));
}

TEST(RegistryTest, SummariesReportUpstreamsQuantilesOverTheWindow) {
  Registry r;
  Summary& s = r.NewSummary("karpenter_pods_startup_duration_seconds", "Startup.");
  for (int i = 1; i <= 100; ++i) s.Observe({}, i);
  s.Observe({"bad-arity"}, 1);  // dropped
  const std::string text = r.Expose();
  EXPECT_THAT(text, HasSubstr("# TYPE karpenter_pods_startup_duration_seconds summary\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_startup_duration_seconds{quantile=\"0\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_startup_duration_seconds{quantile=\"0.5\"} 50\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_startup_duration_seconds{quantile=\"0.99\"} 99\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_startup_duration_seconds{quantile=\"1\"} 100\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_startup_duration_seconds_sum 5050\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_startup_duration_seconds_count 100\n"));

  Summary& old = r.NewSummary("old", "Window of zero.", {"nodepool"});
  Summary expired("expired", "", {"nodepool"}, std::chrono::seconds(0));
  expired.Observe({"a"}, 3);
  std::string out;
  expired.Expose(out);
  EXPECT_THAT(out, HasSubstr("expired{nodepool=\"a\",quantile=\"0.5\"} NaN\n"));
  EXPECT_THAT(out, HasSubstr("expired_count{nodepool=\"a\"} 1\n"));
  EXPECT_EQ(old.Count({"a"}), 0u);
}

TEST(RegistryTest, DeletesGaugeSeriesAndRefreshesBeforeEachScrape) {
  Registry r;
  Gauge& g = r.NewGauge("g", "", {"pod"});
  int scrapes = 0;
  r.OnScrape([&] { g.Set({"p"}, ++scrapes); });
  EXPECT_THAT(r.Expose(), HasSubstr("g{pod=\"p\"} 1\n"));
  EXPECT_THAT(r.Expose(), HasSubstr("g{pod=\"p\"} 2\n"));
  g.Set({"q"}, 5);
  g.Delete({"q"});
  g.Delete({"absent"});
  EXPECT_THAT(r.Expose(), Not(HasSubstr("g{pod=\"q\"}")));
}

TEST(HttpEndpointTest, ServesRegisteredPaths) {
  Registry r;
  r.NewCounter("c_total", "a counter").Inc();
  HttpEndpoint endpoint;
  bool ready = false;
  endpoint.Handle("/metrics", [&] {
    return Response{200, r.Expose(), "text/plain; version=0.0.4"};
  });
  endpoint.Handle("/readyz", [&] {
    return ready ? Response{200, "ok"} : Response{503, "not synced"};
  });
  auto port = endpoint.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();
  httplib::Client client("127.0.0.1", *port);
  auto m = client.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_THAT(m->body, HasSubstr("c_total 1\n"));
  auto notready = client.Get("/readyz");
  ASSERT_TRUE(notready);
  EXPECT_EQ(notready->status, 503);
  ready = true;
  EXPECT_EQ(client.Get("/readyz")->status, 200);
  EXPECT_EQ(client.Get("/nope")->status, 404);
  endpoint.Stop();
}

}  // namespace
}  // namespace dovetail::metrics
