#include "dovetail/providers/aws/pricing_client.h"

#include <algorithm>
#include <exception>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/providers/aws/json_member.h"
#include "dovetail/providers/aws/json_protocol.h"

namespace dovetail::providers::aws {
namespace {

using nlohmann::json;

using internal::Member;

std::vector<PricingFilter> LinuxFilters(std::string_view region, std::string_view tenancy) {
  return {{"regionCode", std::string(region)}, {"serviceCode", "AmazonEC2"},
          {"operatingSystem", "Linux"},        {"preInstalledSw", "NA"},
          {"capacitystatus", "Used"},          {"marketoption", "OnDemand"},
          {"tenancy", std::string(tenancy)}};
}

absl::StatusOr<std::pair<std::string, double>> ParsePriceListDocument(const json& doc) {
  const json* attributes = Member(doc, "product");
  if (attributes != nullptr) attributes = Member(*attributes, "attributes");
  const json* type = attributes == nullptr ? nullptr : Member(*attributes, "instanceType");
  if (type == nullptr || !type->is_string() || type->get<std::string>().empty()) {
    return absl::InvalidArgumentError("price item has no product.attributes.instanceType");
  }
  const std::string instance_type = type->get<std::string>();
  const json* terms = Member(doc, "terms");
  const json* on_demand = terms == nullptr ? nullptr : Member(*terms, "OnDemand");
  if (on_demand != nullptr && on_demand->is_object()) {
    for (const auto& [offer_key, offer] : on_demand->items()) {
      const json* dims = Member(offer, "priceDimensions");
      if (dims == nullptr || !dims->is_object()) continue;
      for (const auto& [dim_key, dim] : dims->items()) {
        const json* per_unit = Member(dim, "pricePerUnit");
        const json* usd = per_unit == nullptr ? nullptr : Member(*per_unit, "USD");
        if (usd == nullptr || !usd->is_string()) continue;
        double price = 0;
        if (absl::SimpleAtod(usd->get<std::string>(), &price) && price > 0) {
          return std::make_pair(instance_type, price);
        }
      }
    }
  }
  return absl::InvalidArgumentError(
      Cat("price item for ", instance_type, " has no positive OnDemand USD price"));
}

}  // namespace

absl::StatusOr<std::pair<std::string, double>> ParseOnDemandPriceItem(std::string_view item) {
  try {
    json doc = json::parse(item.begin(), item.end(), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return absl::InvalidArgumentError("price item is not JSON");
    return ParsePriceListDocument(doc);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat("price item is malformed: ", e.what()));
  }
}

absl::StatusOr<json> PricingClient::Call(std::string_view action, const json& body) {
  ASSIGN_OR_RETURN(HttpResponse response,
                   SendJson(client_, "1.1", "AWSPriceListService", action, body));
  json parsed = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InternalError(Cat("pricing:", action, ": response is not a JSON object"));
  }
  return parsed;
}

absl::StatusOr<std::vector<std::string>> PricingClient::GetProducts(
    std::string_view service_code, const std::vector<PricingFilter>& filters) {
  json filter_list = json::array();
  for (const PricingFilter& f : filters) {
    filter_list.push_back({{"Type", "TERM_MATCH"}, {"Field", f.field}, {"Value", f.value}});
  }
  std::vector<std::string> out;
  std::string token;
  for (int pages = 0;; ++pages) {
    if (pages > 10'000) return absl::InternalError("pricing:GetProducts: too many pages");
    json body = {{"ServiceCode", std::string(service_code)},
                 {"Filters", filter_list},
                 {"FormatVersion", "aws_v1"},
                 {"MaxResults", page_size_}};
    if (!token.empty()) body["NextToken"] = token;
    ASSIGN_OR_RETURN(json page, Call("GetProducts", body));
    if (const json* list = Member(page, "PriceList"); list != nullptr && list->is_array()) {
      for (const json& item : *list) {
        // The API returns each document as a string; accept an embedded object as well.
        if (item.is_string()) {
          out.push_back(item.get<std::string>());
        } else if (item.is_object()) {
          out.push_back(item.dump());
        }
      }
    }
    const json* next = Member(page, "NextToken");
    std::string next_token = next != nullptr && next->is_string() ? next->get<std::string>() : "";
    if (next_token.empty() || next_token == token) return out;
    token = std::move(next_token);
  }
}

absl::StatusOr<OnDemandPrices> PricingClient::OnDemandLinuxPrices(std::string_view region) {
  OnDemandPrices prices;
  ASSIGN_OR_RETURN(std::vector<std::string> shared,
                   GetProducts("AmazonEC2", LinuxFilters(region, "Shared")));
  for (const std::string& item : shared) {
    auto parsed = ParseOnDemandPriceItem(item);
    if (parsed.ok()) prices.try_emplace(parsed->first, parsed->second);
  }
  ASSIGN_OR_RETURN(std::vector<std::string> dedicated,
                   GetProducts("AmazonEC2", LinuxFilters(region, "Dedicated")));
  for (const std::string& item : dedicated) {
    auto parsed = ParseOnDemandPriceItem(item);
    // m5.metal, u-6tb1.metal, r8i.metal-48xl, ...
    if (parsed.ok() && absl::StrContains(parsed->first, ".metal")) {
      prices.try_emplace(parsed->first, parsed->second);
    }
  }
  if (prices.empty()) {
    return absl::NotFoundError(Cat("pricing:GetProducts: no on-demand prices for ", region));
  }
  return prices;
}

OnDemandPriceTable FetchOnDemandPrices(
    PricingClient* pricing, std::string_view region,
    const std::vector<cloudprovider::OnDemandPriceRow>& fallback) {
  OnDemandPriceTable table;
  if (pricing != nullptr) {
    auto prices = pricing->OnDemandLinuxPrices(region);
    if (prices.ok()) {
      table.source = OnDemandPriceTable::Source::kApi;
      table.prices = std::move(*prices);
      return table;
    }
    table.api_error = prices.status();
  }
  table.source = OnDemandPriceTable::Source::kStatic;
  for (std::string_view r : {region, std::string_view("us-east-1")}) {
    for (const auto& row : fallback) {
      if (row.region == r) table.prices.try_emplace(row.instance_type, row.usd_per_hour);
    }
    if (!table.prices.empty()) {
      table.static_region = std::string(r);
      break;
    }
  }
  return table;
}

std::vector<cloudprovider::OnDemandPriceRow> ToOnDemandPriceRows(std::string_view region,
                                                                 const OnDemandPrices& prices) {
  std::vector<cloudprovider::OnDemandPriceRow> rows;
  rows.reserve(prices.size());
  for (const auto& [type, price] : prices) {
    rows.push_back({.region = std::string(region), .instance_type = type, .usd_per_hour = price});
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.instance_type < b.instance_type; });
  return rows;
}

}  // namespace dovetail::providers::aws
