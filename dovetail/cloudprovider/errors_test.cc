#include "dovetail/cloudprovider/errors.h"

#include "absl/status/status.h"
#include "dovetail/common/status_macros.h"
#include "gtest/gtest.h"

namespace dovetail::cloudprovider {
namespace {

TEST(ErrorsTest, InsufficientCapacityIsResourceExhaustedWithMarker) {
  absl::Status status = InsufficientCapacityError("no m5.large in us-east-1a");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "no m5.large in us-east-1a");
  EXPECT_TRUE(IsInsufficientCapacity(status));
  EXPECT_FALSE(IsNodeClaimNotFound(status));
  EXPECT_FALSE(IsNodeClassNotReady(status));
  EXPECT_FALSE(IsCreateError(status));
}

TEST(ErrorsTest, PlainStatusWithSameCodeIsNotTyped) {
  EXPECT_FALSE(IsInsufficientCapacity(absl::ResourceExhaustedError("throttled")));
  EXPECT_FALSE(IsNodeClaimNotFound(absl::NotFoundError("launch template")));
  EXPECT_FALSE(IsNodeClassNotReady(absl::FailedPreconditionError("x")));
  EXPECT_FALSE(IsCreateError(absl::UnavailableError("x")));
  EXPECT_FALSE(GetCreateError(absl::UnavailableError("x")).has_value());
  EXPECT_FALSE(IsInsufficientCapacity(absl::OkStatus()));
  EXPECT_FALSE(GetCreateError(absl::OkStatus()).has_value());
}

TEST(ErrorsTest, NodeClaimNotFoundIsNotFoundWithMarker) {
  absl::Status status = NodeClaimNotFoundError("instance i-123 terminated");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(IsNodeClaimNotFound(status));
  EXPECT_FALSE(IsInsufficientCapacity(status));
}

TEST(ErrorsTest, NodeClassNotReadyIsFailedPreconditionWithMarker) {
  absl::Status status = NodeClassNotReadyError("EC2NodeClass default is not ready");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(IsNodeClassNotReady(status));
  EXPECT_FALSE(IsNodeClaimNotFound(status));
}

TEST(ErrorsTest, CreateErrorCarriesReasonAndMessage) {
  absl::Status status = CreateError("LaunchTemplateNotFound", "launch template lt-1 not found");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(IsCreateError(status));
  std::optional<CreateErrorInfo> info = GetCreateError(status);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(*info, (CreateErrorInfo{"LaunchTemplateNotFound", "launch template lt-1 not found"}));
  EXPECT_FALSE(IsInsufficientCapacity(status));
}

absl::Status Propagate(const absl::Status& inner) {
  RETURN_IF_ERROR(inner);
  return absl::OkStatus();
}

absl::StatusOr<int> PropagateOr(const absl::Status& inner) {
  ASSIGN_OR_RETURN(int value, absl::StatusOr<int>(inner));
  return value;
}

TEST(ErrorsTest, MarkersSurvivePropagationAndCopies) {
  absl::Status ice = InsufficientCapacityError("ice");
  absl::Status copy = ice;
  EXPECT_TRUE(IsInsufficientCapacity(copy));
  EXPECT_TRUE(IsInsufficientCapacity(Propagate(ice)));
  EXPECT_TRUE(IsNodeClaimNotFound(PropagateOr(NodeClaimNotFoundError("gone")).status()));
  EXPECT_EQ(GetCreateError(Propagate(CreateError("R", "m")))->reason, "R");
}

TEST(ErrorsTest, RebuildingFromMessageDropsTheMarker) {
  absl::Status ice = InsufficientCapacityError("ice");
  EXPECT_FALSE(IsInsufficientCapacity(absl::Status(ice.code(), ice.message())));
}

}  // namespace
}  // namespace dovetail::cloudprovider
