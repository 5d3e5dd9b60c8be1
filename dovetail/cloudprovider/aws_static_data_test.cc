#include "dovetail/cloudprovider/aws_static_data.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace dovetail::cloudprovider {
namespace {

std::string ReadDataFile(const std::string& name) {
  std::ifstream in(std::string(DOVETAIL_AWS_DATA_DIR) + "/" + name, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(AwsStaticDataTest, TheCompiledInFilesAreThoseOfDataAws) {
  const std::string types = ReadDataFile("instance-types.csv");
  const std::string prices = ReadDataFile("on-demand-prices.csv");
  ASSERT_FALSE(types.empty());
  ASSERT_FALSE(prices.empty());
  EXPECT_EQ(BuiltInInstanceTypesCsv(), types);
  EXPECT_EQ(BuiltInOnDemandPricesCsv(), prices);
  // The digests the build compiled in are those data/aws/README.md lists.
  const std::string readme = ReadDataFile("README.md");
  const std::string_view digests = BuiltInAwsDataSha256();
  const size_t space = digests.find(' ');
  ASSERT_NE(space, std::string_view::npos);
  EXPECT_EQ(space, 64u);
  EXPECT_NE(readme.find(std::string(digests.substr(0, space))), std::string::npos);
  EXPECT_NE(readme.find(std::string(digests.substr(space + 1))), std::string::npos);
}

TEST(AwsStaticDataTest, ParsesToTheCatalogAndPricesTheDemoUses) {
  const absl::StatusOr<CatalogFiles>& files = BuiltInAwsCatalogFiles();
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->instance_types.size(), 1363u);
  EXPECT_EQ(files->on_demand_prices.size(), 2686u);
  EXPECT_FALSE(files->spot_prices.has_value());
  EXPECT_FALSE(files->offerings.has_value());
  // The same object on every call: parsed once.
  EXPECT_EQ(&BuiltInAwsCatalogFiles(), &files);

  absl::StatusOr<Catalog> catalog = BuildCatalog(*files, CatalogOptions{.region = "us-east-1"});
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  const InstanceType* m5 = catalog->Find("m5.large");
  ASSERT_NE(m5, nullptr);
  bool priced = false;
  for (const Offering& o : m5->offerings()) {
    if (o.capacity_type == "on-demand") {
      EXPECT_DOUBLE_EQ(o.price, 0.096);
      priced = true;
    }
  }
  EXPECT_TRUE(priced);
}

}  // namespace
}  // namespace dovetail::cloudprovider
