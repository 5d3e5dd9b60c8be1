#include "dovetail/providers/aws/pricing_client.h"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "dovetail/providers/aws/served_client_test.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws {
namespace {

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(DOVETAIL_AWS_TESTDATA_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string AwsDataDir() { return DOVETAIL_AWS_DATA_DIR; }

// A Price List endpoint serving recorded GetProducts pages: shared tenancy in two pages (the
// second only for the first page's NextToken), dedicated tenancy in one.
class PricingClientTest : public testing::ServedClientTest {
 protected:
  void SetUp() override {
    page1_ = ReadTestdata("pricing_get_products_page1.json");
    page2_ = ReadTestdata("pricing_get_products_page2.json");
    dedicated_ = ReadTestdata("pricing_get_products_dedicated.json");
    ASSERT_FALSE(page1_.empty());
    ASSERT_FALSE(page2_.empty());
    ASSERT_FALSE(dedicated_.empty());
    const std::string token = nlohmann::json::parse(page1_)["NextToken"];
    server_.server().Post("/", [this, token](const httplib::Request& req, httplib::Response& res) {
      ++requests_;
      if (fail_ || req.get_header_value("X-Amz-Target") != "AWSPriceListService.GetProducts" ||
          req.get_header_value("Content-Type") != "application/x-amz-json-1.1" ||
          req.get_header_value("Authorization").find("/us-east-1/pricing/aws4_request") ==
              std::string::npos) {
        res.status = fail_ ? fail_.load() : 400;
        res.set_content(res.status >= 500 ? R"({"__type":"InternalFailure"})"
                                          : R"({"__type":"AccessDeniedException","message":"x"})",
                        "application/x-amz-json-1.1");
        return;
      }
      nlohmann::json body = nlohmann::json::parse(req.body);
      std::map<std::string, std::string> filters;
      for (const auto& f : body["Filters"]) {
        EXPECT_EQ(f["Type"], "TERM_MATCH");
        filters[f["Field"]] = f["Value"];
      }
      EXPECT_EQ(body["ServiceCode"], "AmazonEC2");
      EXPECT_EQ(filters["regionCode"], "eu-west-1");
      EXPECT_EQ(filters["operatingSystem"], "Linux");
      EXPECT_EQ(filters["preInstalledSw"], "NA");
      EXPECT_EQ(filters["capacitystatus"], "Used");
      EXPECT_EQ(filters["marketoption"], "OnDemand");
      EXPECT_EQ(filters["serviceCode"], "AmazonEC2");
      if (filters["tenancy"] == "Dedicated") {
        res.set_content(dedicated_, "application/x-amz-json-1.1");
      } else if (!body.contains("NextToken")) {
        EXPECT_EQ(filters["tenancy"], "Shared");
        res.set_content(page1_, "application/x-amz-json-1.1");
      } else {
        EXPECT_EQ(body["NextToken"], token);
        res.set_content(page2_, "application/x-amz-json-1.1");
      }
    });
    ASSERT_TRUE(server_.Start());
    client_ = std::make_unique<AwsClient>(
        AwsClient::Dependencies{.transport = transport_,
                                .credentials = &credentials_,
                                .clock = clock_,
                                .sleep = [this](absl::Duration d) { clock_.Advance(d); }},
        AwsClient::Options{.service = kPricing,
                           .region = "eu-west-1",
                           .endpoint = server_.url(),
                           .parse_error = ParseJsonError,
                           .max_attempts = 2,
                           .jitter_seed = 7});
  }

  std::unique_ptr<AwsClient> client_;
  std::string page1_, page2_, dedicated_;
  std::atomic<int> requests_{0};
  std::atomic<int> fail_{0};
};

TEST_F(PricingClientTest, ParsesOnDemandPriceFromAPriceListDocument) {
  nlohmann::json page = nlohmann::json::parse(page1_);
  auto item = ParseOnDemandPriceItem(page["PriceList"][0].get<std::string>());
  ASSERT_TRUE(item.ok()) << item.status();
  EXPECT_EQ(item->first, "m5.large");
  EXPECT_DOUBLE_EQ(item->second, 0.107);
}

TEST_F(PricingClientTest, RejectsDocumentsWithoutTypeOrPositivePrice) {
  EXPECT_EQ(ParseOnDemandPriceItem("{").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseOnDemandPriceItem(R"({"product":{"attributes":{}}})").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseOnDemandPriceItem(R"({"product":{"attributes":{"instanceType":"m5.large"}},
      "terms":{"OnDemand":{"a":{"priceDimensions":{"b":{"pricePerUnit":{"USD":"0.0000000000"}}}}}}})")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseOnDemandPriceItem(R"({"product":{"attributes":{"instanceType":"m5.large"}},
      "terms":{"OnDemand":[1,2]}})")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  auto ok = ParseOnDemandPriceItem(R"({"product":{"attributes":{"instanceType":"x1.large"}},
      "terms":{"OnDemand":{"a":{"priceDimensions":{"b":{"pricePerUnit":{"USD":"1.5"}}}}}}})");
  ASSERT_TRUE(ok.ok());
  EXPECT_DOUBLE_EQ(ok->second, 1.5);
}

TEST_F(PricingClientTest, FollowsNextTokenAndAddsBareMetalFromDedicatedTenancy) {
  PricingClient pricing(*client_);
  auto prices = pricing.OnDemandLinuxPrices("eu-west-1");
  ASSERT_TRUE(prices.ok()) << prices.status();
  EXPECT_EQ(requests_.load(), 3);
  EXPECT_EQ(prices->size(), 5u);
  EXPECT_DOUBLE_EQ(prices->at("m5.large"), 0.107);  // shared, not the dedicated 0.118
  EXPECT_DOUBLE_EQ(prices->at("c5.xlarge"), 0.192);
  EXPECT_DOUBLE_EQ(prices->at("t3.micro"), 0.0114);
  EXPECT_DOUBLE_EQ(prices->at("r5.2xlarge"), 0.564);  // from the second page
  EXPECT_DOUBLE_EQ(prices->at("m5.metal"), 5.136);    // from the dedicated query
  EXPECT_FALSE(prices->contains("m5.xlarge"));        // zero-priced entry skipped
  EXPECT_EQ(client_->Stats("GetProducts").calls, 3);

  auto rows = ToOnDemandPriceRows("eu-west-1", *prices);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].instance_type, "c5.xlarge");
  EXPECT_EQ(rows[0].region, "eu-west-1");

  OnDemandPriceTable table = FetchOnDemandPrices(&pricing, "eu-west-1", {});
  EXPECT_EQ(table.source, OnDemandPriceTable::Source::kApi);
  EXPECT_TRUE(table.api_error.ok());
  EXPECT_EQ(table.prices.size(), 5u);
}

TEST_F(PricingClientTest, FallsBackToTheStaticPricesWhenTheApiFails) {
  auto files = cloudprovider::ReadCatalogDirectory(AwsDataDir());
  ASSERT_TRUE(files.ok()) << files.status();
  fail_ = 403;
  PricingClient pricing(*client_);
  OnDemandPriceTable table = FetchOnDemandPrices(&pricing, "eu-west-1", files->on_demand_prices);
  EXPECT_EQ(table.source, OnDemandPriceTable::Source::kStatic);
  EXPECT_EQ(table.api_error.code(), absl::StatusCode::kPermissionDenied) << table.api_error;
  EXPECT_EQ(AwsErrorCode(table.api_error), "AccessDeniedException");
  // The shared data has no eu-west-1 rows: us-east-1's, as upstream falls back.
  EXPECT_EQ(table.static_region, "us-east-1");
  EXPECT_DOUBLE_EQ(table.prices.at("m5.large"), 0.096);
  EXPECT_GT(table.prices.size(), 500u);

  // A region of its own in the static data is used as is; no client means static.
  OnDemandPriceTable gov = FetchOnDemandPrices(nullptr, "us-gov-west-1", files->on_demand_prices);
  EXPECT_EQ(gov.source, OnDemandPriceTable::Source::kStatic);
  EXPECT_EQ(gov.static_region, "us-gov-west-1");
  EXPECT_TRUE(gov.api_error.ok());

  // Throttling and 5xx are retried by AwsClient before the fallback.
  fail_ = 500;
  requests_ = 0;
  OnDemandPriceTable after_5xx =
      FetchOnDemandPrices(&pricing, "eu-west-1", files->on_demand_prices);
  EXPECT_EQ(after_5xx.source, OnDemandPriceTable::Source::kStatic);
  EXPECT_EQ(requests_.load(), 2);  // max_attempts
}

TEST_F(PricingClientTest, AnEmptyPriceListFallsBack) {
  server_.Stop();
  testing::TestServer empty;
  empty.server().Post("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"FormatVersion":"aws_v1","PriceList":[]})", "application/x-amz-json-1.1");
  });
  ASSERT_TRUE(empty.Start());
  AwsClient client({.transport = transport_, .credentials = &credentials_, .clock = clock_},
                   {.service = kPricing,
                    .region = "eu-west-1",
                    .endpoint = empty.url(),
                    .parse_error = ParseJsonError});
  PricingClient pricing(client);
  auto prices = pricing.OnDemandLinuxPrices("eu-west-1");
  EXPECT_EQ(prices.status().code(), absl::StatusCode::kNotFound);
  OnDemandPriceTable table =
      FetchOnDemandPrices(&pricing, "eu-west-1", {{"us-east-1", "m5.large", 0.096}});
  EXPECT_EQ(table.source, OnDemandPriceTable::Source::kStatic);
  EXPECT_EQ(table.prices.size(), 1u);
}

}  // namespace
}  // namespace dovetail::providers::aws
