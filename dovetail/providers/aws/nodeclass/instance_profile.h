// InstanceProfiles: the instance profile of an EC2NodeClass (docs/aws-provider.md).
//  - spec.instanceProfile: used as is; Verify checks that it exists.
//  - spec.role: a managed profile named, placed and tagged as upstream does (iam_client.h:
//    InstanceProfileName with a fresh UUID suffix, InstanceProfilePath with the class's UID,
//    InstanceProfileTags), holding the role. EnsureManaged keeps the profile in status when it is
//    managed and holds the role (adding the role when the profile has none); otherwise (no
//    profile yet, it vanished, or spec.role changed) it creates a new one, so instances being
//    launched with the old one are not pulled from under them.
//  - CollectStale deletes the class's managed profiles (found by the IAM path, which carries the
//    class's UID) other than the current one, once they have been superseded for `grace` and no
//    NodeClaim still names them; DeleteAll deletes every one of them (class deletion).
// Deleting a profile first removes its role (IAM refuses otherwise); NoSuchEntity is success.
// Thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/common/clock.h"
#include "dovetail/providers/aws/iam_client.h"

namespace dovetail::providers::aws::nodeclass {

// A random RFC 4122 version 4 UUID ("xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx").
std::string NewUuid();

class InstanceProfiles {
 public:
  struct Options {
    std::string cluster_name;
    std::string region;
    // How long a superseded managed profile is kept (upstream: 1 h).
    absl::Duration grace = absl::Hours(1);
  };
  InstanceProfiles(IamClient& iam, const Clock& clock, Options options)
      : iam_(iam), clock_(clock), options_(std::move(options)) {}

  // Errors: NotFound when the profile does not exist; the IAM errors.
  absl::Status Verify(std::string_view name);
  // The managed profile's name for status.instanceProfile. Errors: NotFound when the role does
  // not exist (the half-made profile is deleted again); the IAM errors.
  absl::StatusOr<std::string> EnsureManaged(const apis::aws::v1::EC2NodeClass& node_class);
  // `in_use(name)`: whether a NodeClaim still names the profile.
  absl::Status CollectStale(const apis::aws::v1::EC2NodeClass& node_class, std::string_view keep,
                            const std::function<bool(std::string_view)>& in_use);
  // Returns how many profiles were deleted.
  absl::StatusOr<int> DeleteAll(const apis::aws::v1::EC2NodeClass& node_class);

  std::string ManagedPath(const apis::aws::v1::EC2NodeClass& node_class) const;

 private:
  absl::Status Delete(const IamInstanceProfile& profile);

  IamClient& iam_;
  const Clock& clock_;
  const Options options_;
  absl::Mutex mu_;
  // Profile name -> when this process first saw it superseded.
  absl::flat_hash_map<std::string, absl::Time> superseded_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dovetail::providers::aws::nodeclass
