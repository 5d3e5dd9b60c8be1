#include "dovetail/cloudprovider/catalog.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace dovetail::cloudprovider {
namespace {

InstanceTypePtr Type(std::string name) {
  return std::make_shared<const InstanceType>(std::move(name), scheduling::Requirements(),
                                              Offerings(), ResourceList(), InstanceTypeOverhead());
}

TEST(CatalogTest, SortsByNameAndIndexesByName) {
  absl::StatusOr<Catalog> catalog =
      Catalog::Create({Type("m5.large"), Type("c5.large"), Type("r5.large"), Type("c5.xlarge")});
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  ASSERT_EQ(catalog->size(), 4u);
  std::vector<std::string> names;
  for (const InstanceTypePtr& type : *catalog) names.push_back(type->name());
  EXPECT_EQ(names, (std::vector<std::string>{"c5.large", "c5.xlarge", "m5.large", "r5.large"}));
  EXPECT_EQ(catalog->IndexOf("m5.large"), 2u);
  EXPECT_EQ(catalog->IndexOf("m6.large"), std::nullopt);
  ASSERT_NE(catalog->Find("r5.large"), nullptr);
  EXPECT_EQ(catalog->Find("r5.large")->name(), "r5.large");
  EXPECT_EQ(catalog->Find("nope"), nullptr);
  EXPECT_EQ((*catalog)[0]->name(), "c5.large");
}

TEST(CatalogTest, CopiesKeepAWorkingIndex) {
  Catalog copy;
  {
    absl::StatusOr<Catalog> catalog = Catalog::Create({Type("b"), Type("a")});
    ASSERT_TRUE(catalog.ok());
    copy = *catalog;
  }
  EXPECT_EQ(copy.IndexOf("b"), 1u);
  ASSERT_NE(copy.Find("a"), nullptr);
  EXPECT_EQ(copy.Find("a")->name(), "a");
}

TEST(CatalogTest, RejectsDuplicateNames) {
  absl::StatusOr<Catalog> catalog = Catalog::Create({Type("a"), Type("b"), Type("a")});
  EXPECT_EQ(catalog.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(catalog.status().message().find("\"a\""), std::string_view::npos);
}

TEST(CatalogTest, RejectsNullEntries) {
  EXPECT_EQ(Catalog::Create({Type("a"), nullptr}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CatalogTest, EmptyCatalog) {
  absl::StatusOr<Catalog> catalog = Catalog::Create({});
  ASSERT_TRUE(catalog.ok());
  EXPECT_TRUE(catalog->empty());
  EXPECT_EQ(catalog->Find("a"), nullptr);
}

}  // namespace
}  // namespace dovetail::cloudprovider
