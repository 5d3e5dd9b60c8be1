// `dovetail catalog export`: discovers the AWS account's instance-type catalog (the EC2 API and the
// Pricing API, as `dovetail controller --cloud-provider aws` does) and writes it as a catalog
// directory (aws_catalog.h) that `dovetail simulate --catalog DIR` reads (docs/simulate.md).

#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/cli/commands.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/cloudprovider/aws_static_data.h"
#include "dovetail/common/clock.h"
#include "dovetail/providers/aws/api_catalog.h"
#include "dovetail/providers/aws/aws_client.h"
#include "dovetail/providers/aws/credentials_chain.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/endpoints.h"
#include "dovetail/providers/aws/env.h"
#include "dovetail/providers/aws/errors.h"
#include "dovetail/providers/aws/http_transport.h"
#include "dovetail/providers/aws/pricing_client.h"
#include "dovetail/providers/aws/region.h"

namespace dovetail::cli {

namespace {

namespace aws = ::dovetail::providers::aws;
namespace cp = ::dovetail::cloudprovider;

struct ExportFlags {
  std::string output;
  std::string region;
  std::string static_catalog;  // default: DOVETAIL_AWS_CATALOG
};

int Fail(std::string_view what, const absl::Status& status) {
  std::cerr << "error: " << what << ": " << status.message() << "\n";
  return 1;
}

// The clients of one export, wired as the operator wires them (dovetail/operator/aws.cc):
// endpoints from the environment, the default credentials chain, JSON errors for Pricing.
class ExportClients {
 public:
  ExportClients(const Clock& clock, aws::EnvLookup env) : clock_(clock), env_(std::move(env)) {}

  absl::Status Init(std::string_view explicit_region) {
    aws::ImdsClient imds(transport_, aws::ImdsClient::Options{}, env_);
    absl::StatusOr<std::string> region = aws::ResolveRegion(explicit_region, env_, &imds);
    if (!region.ok()) return region.status();
    region_ = *region;
    absl::StatusOr<std::unique_ptr<aws::AwsClient>> sts = NewClient(aws::kSts, false, false);
    if (!sts.ok()) return sts.status();
    sts_ = *std::move(sts);
    credentials_ = aws::DefaultCredentialsChain(*sts_, clock_, env_);
    absl::StatusOr<std::unique_ptr<aws::AwsClient>> ec2 = NewClient(aws::kEc2, false, true);
    if (!ec2.ok()) return ec2.status();
    ec2_raw_ = *std::move(ec2);
    absl::StatusOr<std::unique_ptr<aws::AwsClient>> pricing = NewClient(aws::kPricing, true, true);
    if (!pricing.ok()) return pricing.status();
    pricing_raw_ = *std::move(pricing);
    ec2_ = std::make_unique<aws::Ec2Client>(*ec2_raw_);
    pricing_ = std::make_unique<aws::PricingClient>(*pricing_raw_);
    return absl::OkStatus();
  }

  const std::string& region() const { return region_; }
  aws::CredentialsProvider& credentials() { return *credentials_; }
  aws::Ec2Client& ec2() { return *ec2_; }
  aws::PricingClient& pricing() { return *pricing_; }

 private:
  absl::StatusOr<std::unique_ptr<aws::AwsClient>> NewClient(const aws::ServiceInfo& service,
                                                            bool json, bool signed_client) {
    absl::StatusOr<std::string> endpoint = aws::ResolveEndpoint(service, region_, {}, env_);
    if (!endpoint.ok()) return endpoint.status();
    aws::AwsClient::Options o;
    o.service = service;
    o.region = aws::SigningRegion(service, region_);
    o.endpoint = *endpoint;
    if (json) o.parse_error = aws::ParseJsonError;
    return std::make_unique<aws::AwsClient>(
        aws::AwsClient::Dependencies{.transport = transport_,
                                     .credentials = signed_client ? credentials_.get() : nullptr,
                                     .clock = clock_},
        std::move(o));
  }

  const Clock& clock_;
  const aws::EnvLookup env_;
  aws::HttpTransport transport_;
  std::string region_;
  std::unique_ptr<aws::AwsClient> sts_, ec2_raw_, pricing_raw_;
  std::unique_ptr<aws::CredentialsProvider> credentials_;
  std::unique_ptr<aws::Ec2Client> ec2_;
  std::unique_ptr<aws::PricingClient> pricing_;
};

// The files whose BuildCatalog gives back the API catalog: its types, on-demand prices, spot
// prices and the zones (with zone ids) each type is offered in (offerings.csv).
absl::StatusOr<cp::CatalogFiles> ExportFiles(const aws::ApiCatalogInputs& inputs,
                                             const aws::ApiCatalogOptions& options,
                                             const cp::Catalog& catalog) {
  absl::flat_hash_map<std::string, const aws::Ec2InstanceTypeInfo*> infos;
  for (const auto& info : inputs.instance_types) infos[info.instance_type] = &info;
  absl::flat_hash_map<std::string, const cp::InstanceTypeRow*> static_rows;
  for (const auto& r : options.static_files.instance_types) static_rows[r.name] = &r;

  absl::flat_hash_map<std::string, std::string> zone_ids;
  for (const auto& z : inputs.zones) zone_ids[z.zone_name] = z.zone_id;

  cp::CatalogFiles files;
  files.spot_prices.emplace();
  files.offerings.emplace();
  std::set<std::string> names;
  for (const cp::InstanceTypePtr& type : catalog) {
    auto info = infos.find(type->name());
    if (info == infos.end()) continue;
    auto st = static_rows.find(type->name());
    absl::StatusOr<cp::InstanceTypeRow> row =
        aws::InstanceTypeRowFromApi(*info->second, st == static_rows.end() ? nullptr : st->second);
    if (!row.ok()) return row.status();
    files.instance_types.push_back(*std::move(row));
    names.insert(type->name());
    // Spot prices as the API catalog has them (DescribeSpotPriceHistory, or the spot model when
    // it had no data); no row where spot is unavailable.
    for (const cp::Offering& o : type->offerings().list()) {
      if (o.capacity_type == "on-demand") {
        auto id = zone_ids.find(o.zone);
        files.offerings->push_back({options.region, o.zone,
                                    id == zone_ids.end() ? std::string() : id->second,
                                    type->name()});
      }
      if (o.capacity_type == "spot" && o.available) {
        files.spot_prices->push_back({options.region, o.zone, type->name(), o.price});
      }
    }
  }
  for (const cp::OnDemandPriceRow& p : options.static_files.on_demand_prices) {
    if (p.region == options.region && names.contains(p.instance_type)) {
      files.on_demand_prices.push_back(p);
    }
  }
  return files;
}

int RunExport(const ExportFlags& f) {
  const aws::EnvLookup env = aws::ProcessEnv();
  RealClock clock;
  ExportClients clients(clock, env);
  if (absl::Status s = clients.Init(f.region); !s.ok()) {
    return Fail("AWS setup (set --region or AWS_REGION)", s);
  }
  if (absl::StatusOr<aws::AwsCredentials> c = clients.credentials().Get(); !c.ok()) {
    return Fail("AWS credentials", c.status());
  }

  aws::ApiCatalogOptions options;
  options.region = clients.region();
  std::string static_dir = f.static_catalog;
  if (static_dir.empty()) static_dir = env("DOVETAIL_AWS_CATALOG").value_or("");
  if (!static_dir.empty()) {
    absl::StatusOr<cp::CatalogFiles> files = cp::ReadCatalogDirectory(static_dir);
    if (!files.ok()) return Fail(absl::StrCat("static catalog ", static_dir), files.status());
    options.static_files = *std::move(files);
  } else {
    const absl::StatusOr<cp::CatalogFiles>& built_in = cp::BuiltInAwsCatalogFiles();
    if (!built_in.ok()) return Fail("built-in static catalog", built_in.status());
    options.static_files = *built_in;
  }

  absl::Status spot_error;
  absl::StatusOr<aws::ApiCatalogInputs> inputs =
      aws::FetchApiCatalogInputs(clients.ec2(), clock.Now(), &spot_error);
  if (!inputs.ok()) return Fail("EC2", inputs.status());
  if (!spot_error.ok()) {
    std::cerr << "warning: DescribeSpotPriceHistory failed (" << spot_error.message()
              << "); spot prices follow the spot model\n";
  }

  aws::OnDemandPriceTable table = aws::FetchOnDemandPrices(&clients.pricing(), options.region,
                                                           options.static_files.on_demand_prices);
  if (table.source == aws::OnDemandPriceTable::Source::kStatic) {
    std::cerr << "warning: Pricing API unavailable (" << table.api_error.message()
              << "); using the static on-demand price table"
              << (table.static_region.empty() ? std::string()
                                              : absl::StrCat(" of ", table.static_region))
              << (static_dir.empty() ? " compiled into dovetail" : "") << "\n";
  }
  options.static_files.on_demand_prices = aws::ToOnDemandPriceRows(options.region, table.prices);

  absl::StatusOr<cp::Catalog> catalog = aws::BuildApiCatalog(*inputs, options);
  if (!catalog.ok()) return Fail("building the catalog", catalog.status());
  absl::StatusOr<cp::CatalogFiles> files = ExportFiles(*inputs, options, *catalog);
  if (!files.ok()) return Fail("exporting the catalog", files.status());
  if (files->instance_types.empty()) {
    std::cerr << "warning: the account offers no supported instance type in " << options.region
              << "\n";
  }

  // What simulate will read must parse: check before writing anything.
  if (absl::StatusOr<std::vector<cp::InstanceTypeRow>> back = cp::ParseInstanceTypesCsv(
          cp::FormatInstanceTypesCsv(files->instance_types), cp::kInstanceTypesFile);
      !back.ok()) {
    return Fail("the exported catalog would not read back", back.status());
  }
  std::error_code ec;
  std::filesystem::create_directories(f.output, ec);
  if (ec) return Fail(absl::StrCat("creating ", f.output), absl::InternalError(ec.message()));
  if (absl::Status s = cp::WriteCatalogDirectory(f.output, *files); !s.ok()) {
    return Fail(absl::StrCat("writing ", f.output), s);
  }

  std::set<std::string> zones;
  for (const cp::OfferingRow& r : *files->offerings) zones.insert(r.zone);
  std::cout << "wrote " << files->instance_types.size() << " instance types, "
            << files->on_demand_prices.size() << " on-demand prices ("
            << (table.source == aws::OnDemandPriceTable::Source::kApi ? "Pricing API"
                                                                      : "static table")
            << ") and " << files->spot_prices->size() << " spot prices of " << options.region
            << " in zones " << absl::StrJoin(zones, ",") << " to " << f.output << "\n"
            << "simulate with: dovetail simulate --catalog " << f.output << " -f MANIFEST\n";
  return 0;
}

}  // namespace

void RegisterCatalogCommand(CLI::App& app, ExitCode& exit_code) {
  auto* cmd = app.add_subcommand("catalog", "Work with instance-type catalogs");
  cmd->require_subcommand(1);
  auto flags = std::make_shared<ExportFlags>();
  auto* exp = cmd->add_subcommand(
      "export",
      "Write the AWS account's instance types and prices to a catalog directory for simulate");
  exp->add_option("-o,--output", flags->output, "Catalog directory to write (created if missing)")
      ->required();
  exp->add_option("--region", flags->region,
                  "AWS region (default: AWS_REGION / AWS_DEFAULT_REGION / IMDS)");
  exp->add_option("--static-catalog", flags->static_catalog,
                  "Static catalog directory for the on-demand price fallback and the fields the "
                  "API lacks (default: DOVETAIL_AWS_CATALOG, else the catalog compiled into "
                  "dovetail)");
  exp->callback([flags, &exit_code] { exit_code.value = RunExport(*flags); });
}

}  // namespace dovetail::cli
