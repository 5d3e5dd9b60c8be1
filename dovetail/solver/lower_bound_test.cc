#include "dovetail/solver/lower_bound.h"

#include <algorithm>
#include <random>

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

TEST(CostLowerBoundTest, DropsOnlyColumnsThatCannotLowerTheBound) {
  // Column 1 is column 0 at a worse price per unit, usable by the same demand: it cannot lower
  // the bound and gets no nodes. Column 2 is the cheapest per unit but only the second demand may
  // use it, so it stays.
  LpProblem p{.dimensions = 2,
              .columns = {{.price = 1.0, .capacity = {4, 8}},
                          {.price = 0.6, .capacity = {2, 4}},
                          {.price = 1.5, .capacity = {8, 16}}},
              .demands = {{.count = 8, .request = {1, 2}, .columns = {0, 1}},
                          {.count = 8, .request = {1, 2}, .columns = {0, 1, 2}}}};
  auto r = SolveCostLowerBound(p);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->bound, 2.0 + 1.5, 1e-9);
  ASSERT_EQ(r->column_counts.size(), 3u);
  EXPECT_EQ(r->column_counts[1], 0.0);
  EXPECT_NEAR(r->column_counts[2], 1.0, 1e-9);
}

TEST(CostLowerBoundTest, KeepsSmallColumnsForDistinctNodeGroups) {
  // Per unit the big column is as cheap, but each anti-affine pod needs a node of its own: three
  // small nodes (3) beat three big ones (6).
  LpProblem p{.dimensions = 1,
              .columns = {{.price = 2.0, .capacity = {8}}, {.price = 1.0, .capacity = {4}}},
              .demands = {{.count = 3, .request = {1}, .columns = {0, 1}}},
              .distinct_groups = {{.count = 3, .columns = {0, 1}}}};
  auto r = SolveCostLowerBound(p);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->bound, 3.0, 1e-9);
}

TEST(CostLowerBoundTest, DroppingRedundantColumnsLeavesRandomBoundsUnchanged) {
  // Random problems with, for every column, a twin that is worse per unit and usable by a subset
  // of its rows. Columns with a finite (if huge) max_count are never dropped, so the same problem
  // with every max_count at 1e9 is the reference the pruned solve must match.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.5, 4.0);
  for (int round = 0; round < 60; ++round) {
    LpProblem p{.dimensions = 2};
    const int ncols = 3 + round % 5;
    for (int j = 0; j < ncols; ++j) {
      p.columns.push_back({.price = u(rng), .capacity = {u(rng) * 4, u(rng) * 8}});
    }
    for (int d = 0; d < 3; ++d) {
      LpDemand dem{.count = static_cast<double>(1 + rng() % 9),
                   .request = {u(rng) / 4, u(rng) / 4}};
      for (int j = 0; j < ncols; ++j) {
        if (j == d || rng() % 2 == 0) dem.columns.push_back(j);
      }
      p.demands.push_back(std::move(dem));
    }
    for (int j = 0; j < ncols; ++j) {
      const double f = 0.5 + 0.5 * (rng() % 2);  // half or the same size
      p.columns.push_back(
          {.price = p.columns[j].price * f * (0.9 + 0.2 * (rng() % 3)),
           .capacity = {p.columns[j].capacity[0] * f, p.columns[j].capacity[1] * f}});
      for (auto& dem : p.demands) {
        if (std::find(dem.columns.begin(), dem.columns.end(), j) != dem.columns.end() &&
            rng() % 3 != 0) {
          dem.columns.push_back(ncols + j);
        }
      }
    }
    if (round % 2 == 1) p.distinct_groups.push_back({.count = 4, .columns = p.demands[0].columns});
    LpProblem reference = p;
    for (auto& c : reference.columns) c.max_count = 1e9;
    auto got = SolveCostLowerBound(p);
    auto want = SolveCostLowerBound(reference);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_NEAR(got->bound, want->bound, 1e-6 * (1 + want->bound)) << "round " << round;
  }
}

}  // namespace
}  // namespace dovetail::solver
