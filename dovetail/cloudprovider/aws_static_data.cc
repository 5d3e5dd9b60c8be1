#include "dovetail/cloudprovider/aws_static_data.h"

// The assembler copies each file into read-only data (.incbin) between a start and an end symbol.
// DOVETAIL_AWS_DATA_DIR is the absolute path of data/aws (dovetail/cloudprovider/CMakeLists.txt,
// which also makes this object depend on the files).
#define DOVETAIL_INCBIN(symbol, file)             \
  asm(".section .rodata\n"                        \
      ".global " #symbol                          \
      "_begin\n"                                  \
      ".balign 16\n" #symbol                      \
      "_begin:\n"                                 \
      ".incbin \"" DOVETAIL_AWS_DATA_DIR "/" file \
      "\"\n"                                      \
      ".global " #symbol "_end\n" #symbol         \
      "_end:\n"                                   \
      ".byte 0\n"                                 \
      ".previous\n")

DOVETAIL_INCBIN(dovetail_aws_instance_types, "instance-types.csv");
DOVETAIL_INCBIN(dovetail_aws_on_demand_prices, "on-demand-prices.csv");

extern "C" {
extern const char dovetail_aws_instance_types_begin[];
extern const char dovetail_aws_instance_types_end[];
extern const char dovetail_aws_on_demand_prices_begin[];
extern const char dovetail_aws_on_demand_prices_end[];
}

namespace dovetail::cloudprovider {

std::string_view BuiltInInstanceTypesCsv() {
  return {dovetail_aws_instance_types_begin,
          static_cast<size_t>(dovetail_aws_instance_types_end - dovetail_aws_instance_types_begin)};
}

std::string_view BuiltInOnDemandPricesCsv() {
  return {
      dovetail_aws_on_demand_prices_begin,
      static_cast<size_t>(dovetail_aws_on_demand_prices_end - dovetail_aws_on_demand_prices_begin)};
}

std::string_view BuiltInAwsDataSha256() { return DOVETAIL_AWS_DATA_SHA256; }

const absl::StatusOr<CatalogFiles>& BuiltInAwsCatalogFiles() {
  static const absl::StatusOr<CatalogFiles>* const files = [] {
    auto* out = new absl::StatusOr<CatalogFiles>(CatalogFiles{});
    auto types = ParseInstanceTypesCsv(BuiltInInstanceTypesCsv(), "built-in instance-types.csv");
    if (!types.ok()) {
      *out = types.status();
      return out;
    }
    auto prices =
        ParseOnDemandPricesCsv(BuiltInOnDemandPricesCsv(), "built-in on-demand-prices.csv");
    if (!prices.ok()) {
      *out = prices.status();
      return out;
    }
    (*out)->instance_types = *std::move(types);
    (*out)->on_demand_prices = *std::move(prices);
    return out;
  }();
  return *files;
}

}  // namespace dovetail::cloudprovider
