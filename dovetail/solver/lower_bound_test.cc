#include "dovetail/solver/lower_bound.h"

#include "gtest/gtest.h"

namespace dovetail::solver {
namespace {

TEST(CostLowerBoundTest, FractionalNodesOfTheOnlyColumn) {
  LpProblem p{.dimensions = 1,
              .columns = {{.price = 1.0, .capacity = {4}}},
              .demands = {{.count = 10, .request = {1}, .columns = {0}}}};
  auto r = SolveCostLowerBound(p);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->bound, 2.5, 1e-9);
}

TEST(CostLowerBoundTest, PicksTheCheapestPricePerUnit) {
  LpProblem p{.dimensions = 1,
              .columns = {{.price = 1.0, .capacity = {2}}, {.price = 1.5, .capacity = {4}}},
              .demands = {{.count = 10, .request = {1}, .columns = {0, 1}}}};
  auto r = SolveCostLowerBound(p);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->bound, 3.75, 1e-9);
}

TEST(CostLowerBoundTest, CouplesTheResourcesOfEachPod) {
  // A pod needs 1 cpu and 4 GiB. The cpu-rich column alone would need 4 nodes for memory.
  LpProblem p{.dimensions = 2,
              .columns = {{.price = 1.0, .capacity = {8, 4}}, {.price = 2.0, .capacity = {2, 16}}},
              .demands = {{.count = 4, .request = {1, 4}, .columns = {0, 1}}}};
  auto r = SolveCostLowerBound(p);
  ASSERT_TRUE(r.ok()) << r.status();
  // Each pod placed on column 0 uses a whole node's memory (cost 1), on column 1 half a node's
  // cpu (cost 1): the bound is 4. Covering only the aggregate demand per resource would allow the
  // weaker 32/15 (8a + 2b >= 4 and 4a + 16b >= 16), which no real packing reaches.
  EXPECT_NEAR(r->bound, 4.0, 1e-6);
}

TEST(CostLowerBoundTest, DistinctNodeGroupNeedsOneNodePerPod) {
  LpProblem p{.dimensions = 1,
              .columns = {{.price = 1.0, .capacity = {4}}},
              .demands = {{.count = 3, .request = {0.1}, .columns = {0}}},
              .distinct_groups = {{.count = 3, .columns = {0}}}};
  auto r = SolveCostLowerBound(p);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->bound, 3.0, 1e-9);
}

TEST(CostLowerBoundTest, FreeRoomOnExistingNodesCostsNothing) {
  LpProblem p{
      .dimensions = 1,
      .columns = {{.price = 0.0, .capacity = {3}, .max_count = 1}, {.price = 1.0, .capacity = {4}}},
      .demands = {{.count = 7, .request = {1}, .columns = {0, 1}}}};
  auto r = SolveCostLowerBound(p);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->bound, 1.0, 1e-9);
}

TEST(CostLowerBoundTest, RejectsDemandWithoutColumns) {
  LpProblem p{.dimensions = 1,
              .columns = {{.price = 1.0, .capacity = {4}}},
              .demands = {{.count = 1, .request = {1}, .columns = {}}}};
  EXPECT_EQ(SolveCostLowerBound(p).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CostLowerBoundTest, RejectsBadColumnIndex) {
  LpProblem p{.dimensions = 1,
              .columns = {{.price = 1.0, .capacity = {4}}},
              .demands = {{.count = 1, .request = {1}, .columns = {3}}}};
  EXPECT_EQ(SolveCostLowerBound(p).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CostLowerBoundTest, RejectsDimensionMismatch) {
  LpProblem p{.dimensions = 2,
              .columns = {{.price = 1.0, .capacity = {4}}},
              .demands = {{.count = 1, .request = {1, 1}, .columns = {0}}}};
  EXPECT_EQ(SolveCostLowerBound(p).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dovetail::solver
