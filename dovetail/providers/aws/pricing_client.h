// PricingClient: on-demand EC2 prices from the AWS Price List Query API (GetProducts, AWS JSON 1.1:
// POST /, X-Amz-Target: AWSPriceListService.GetProducts; the endpoint lives in us-east-1 for every
// commercial region, endpoints.h). Upstream refreshes these every 12 h and keeps its compiled-in
// static prices until a refresh succeeds; FetchOnDemandPrices does the same with the static table
// it is given (the copy of data/aws compiled in, cloudprovider/aws_static_data.h, or the directory
// DOVETAIL_AWS_CATALOG names).
//
// The query is upstream's: ServiceCode AmazonEC2 with TERM_MATCH filters regionCode=<region>,
// serviceCode=AmazonEC2, operatingSystem=Linux, preInstalledSw=NA, capacitystatus=Used,
// marketoption=OnDemand, tenancy=Shared; then the same with tenancy=Dedicated for the bare-metal
// types (.metal), which the price list files under dedicated tenancy. Each page's PriceList is an
// array of JSON documents encoded as strings; the price is
// terms.OnDemand.<offer>.priceDimensions.<dimension>.pricePerUnit.USD (USD per hour).
//
// The AwsClient must parse JSON errors (Options::parse_error = ParseJsonError). Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/providers/aws/aws_client.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws {

struct PricingFilter {
  std::string field;  // "regionCode", "operatingSystem", ...
  std::string value;  // TERM_MATCH
};

// USD per hour by instance type.
using OnDemandPrices = absl::flat_hash_map<std::string, double>;

// One PriceList entry's (instance type, USD per hour). Errors: InvalidArgument when the document
// is not JSON, has no product.attributes.instanceType, or no positive OnDemand USD price (the
// price list has zero-priced entries, which upstream skips too).
absl::StatusOr<std::pair<std::string, double>> ParseOnDemandPriceItem(std::string_view item);

class PricingClient {
 public:
  explicit PricingClient(AwsClient& client) : client_(client) {}

  // One JSON call: `action` without the "AWSPriceListService." prefix.
  absl::StatusOr<nlohmann::json> Call(std::string_view action, const nlohmann::json& body);

  // Every PriceList document (as its JSON string), following NextToken.
  absl::StatusOr<std::vector<std::string>> GetProducts(std::string_view service_code,
                                                       const std::vector<PricingFilter>& filters);

  // On-demand Linux prices in `region` (shared tenancy, plus bare-metal types from dedicated
  // tenancy). Entries that do not parse are skipped. Errors: those of GetProducts, and
  // NotFound when the API returned no price at all (an unknown region, or a partial outage).
  absl::StatusOr<OnDemandPrices> OnDemandLinuxPrices(std::string_view region);

  void set_page_size(int n) { page_size_ = n; }

 private:
  AwsClient& client_;
  int page_size_ = 100;
};

// Where a price table came from.
struct OnDemandPriceTable {
  enum class Source { kApi, kStatic };
  Source source = Source::kStatic;
  OnDemandPrices prices;
  std::string static_region;  // kStatic: the region of the static rows used
  absl::Status api_error;     // kStatic: why the API was not used (OK when pricing was null)
};

// The API's prices, or, when `pricing` is null or the API fails, the static rows for `region`
// (us-east-1's when the region has none, as upstream falls back).
OnDemandPriceTable FetchOnDemandPrices(
    PricingClient* pricing, std::string_view region,
    const std::vector<cloudprovider::OnDemandPriceRow>& fallback);

// The table as catalog rows for `region`, sorted by type (CatalogFiles::on_demand_prices).
std::vector<cloudprovider::OnDemandPriceRow> ToOnDemandPriceRows(std::string_view region,
                                                                 const OnDemandPrices& prices);

}  // namespace dovetail::providers::aws
