// The AWS catalog Dovetail ships: data/aws/instance-types.csv and data/aws/on-demand-prices.csv
// (refreshed by scripts/update-aws-data; provenance in data/aws/README.md), compiled into the
// binary so that nothing outside it is needed at run time. The AWS provider uses them as its
// static catalog and on-demand price fallback when DOVETAIL_AWS_CATALOG names no directory, and
// `dovetail simulate --catalog aws` plans against them.
//
// Thread-safe: the text is read-only data; the parse runs once (the first call) and its result,
// or its error, is kept.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "dovetail/cloudprovider/aws_catalog.h"

namespace dovetail::cloudprovider {

// The files as compiled in, byte for byte.
std::string_view BuiltInInstanceTypesCsv();
std::string_view BuiltInOnDemandPricesCsv();
// The SHA-256 (hex) of instance-types.csv and of on-demand-prices.csv, space-separated, as the
// build computed them (data/aws/README.md lists the same).
std::string_view BuiltInAwsDataSha256();

// Both files parsed (aws_catalog.h's format); no spot prices and no offerings file, so offerings
// come from CatalogOptions::zones and the spot model. Errors only if the compiled-in data is
// malformed, which test/data and aws_static_data_test rule out.
const absl::StatusOr<CatalogFiles>& BuiltInAwsCatalogFiles();

}  // namespace dovetail::cloudprovider
