#include "dovetail/providers/aws/nodeclass/instance_profile.h"

#include <cstdint>
#include <cstdio>
#include <utility>

#include "absl/random/random.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/providers/aws/errors.h"

namespace dovetail::providers::aws::nodeclass {

namespace awsv1 = apis::aws::v1;

std::string NewUuid() {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen = nullptr;
  uint64_t hi, lo;
  {
    absl::MutexLock lock(&mu);
    if (gen == nullptr) gen = new absl::BitGen();
    hi = absl::Uniform<uint64_t>(*gen);
    lo = absl::Uniform<uint64_t>(*gen);
  }
  hi = (hi & ~uint64_t{0xF000}) | uint64_t{0x4000};            // version 4
  lo = (lo & ~(uint64_t{0xC} << 60)) | (uint64_t{0x8} << 60);  // variant 10xx
  char buf[37];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFull));
  return buf;
}

std::string InstanceProfiles::ManagedPath(const awsv1::EC2NodeClass& node_class) const {
  return InstanceProfilePath(options_.region, options_.cluster_name, node_class.metadata.uid);
}

absl::Status InstanceProfiles::Verify(std::string_view name) {
  return iam_.GetInstanceProfile(name).status();
}

absl::StatusOr<std::string> InstanceProfiles::EnsureManaged(const awsv1::EC2NodeClass& node_class) {
  const std::string role(RoleNameWithoutPath(node_class.spec.role));
  const std::string path = ManagedPath(node_class);
  const std::string& current = node_class.status.instance_profile;
  if (!current.empty()) {
    absl::StatusOr<IamInstanceProfile> profile = iam_.GetInstanceProfile(current);
    if (!profile.ok() && profile.status().code() != absl::StatusCode::kNotFound) {
      return profile.status();
    }
    if (profile.ok() && profile->path == path) {
      if (profile->roles.empty()) {
        RETURN_IF_ERROR(iam_.AddRoleToInstanceProfile(current, role));
        return current;
      }
      if (profile->roles.front().role_name == role) return current;
      // The role changed: a new profile; the old one is collected after the grace period.
      absl::MutexLock lock(&mu_);
      superseded_.emplace(current, clock_.Now());
    }
  }
  const std::string name = InstanceProfileName(options_.cluster_name, options_.region,
                                               node_class.metadata.name, NewUuid());
  ASSIGN_OR_RETURN(
      IamInstanceProfile created,
      iam_.CreateInstanceProfile(
          name, path,
          InstanceProfileTags(options_.cluster_name, options_.region, node_class.metadata.name,
                              IamTags(node_class.spec.tags.begin(), node_class.spec.tags.end()))));
  if (absl::Status added = iam_.AddRoleToInstanceProfile(name, role); !added.ok()) {
    (void)iam_.DeleteInstanceProfile(name);
    return added;
  }
  return name;
}

absl::Status InstanceProfiles::Delete(const IamInstanceProfile& profile) {
  for (const IamRole& role : profile.roles) {
    absl::Status removed = iam_.RemoveRoleFromInstanceProfile(profile.name, role.role_name);
    if (!removed.ok() && removed.code() != absl::StatusCode::kNotFound) return removed;
  }
  absl::Status deleted = iam_.DeleteInstanceProfile(profile.name);
  if (!deleted.ok() && deleted.code() != absl::StatusCode::kNotFound) return deleted;
  absl::MutexLock lock(&mu_);
  superseded_.erase(profile.name);
  return absl::OkStatus();
}

absl::Status InstanceProfiles::CollectStale(const awsv1::EC2NodeClass& node_class,
                                            std::string_view keep,
                                            const std::function<bool(std::string_view)>& in_use) {
  ASSIGN_OR_RETURN(const std::vector<IamInstanceProfile> profiles,
                   iam_.ListInstanceProfiles(ManagedPath(node_class)));
  const absl::Time now = clock_.Now();
  for (const IamInstanceProfile& p : profiles) {
    if (p.name == keep) continue;
    bool due;
    {
      absl::MutexLock lock(&mu_);
      const absl::Time since = superseded_.emplace(p.name, now).first->second;
      due = now - since >= options_.grace;
    }
    if (!due || (in_use && in_use(p.name))) continue;
    RETURN_IF_ERROR(Delete(p));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> InstanceProfiles::DeleteAll(const awsv1::EC2NodeClass& node_class) {
  ASSIGN_OR_RETURN(const std::vector<IamInstanceProfile> profiles,
                   iam_.ListInstanceProfiles(ManagedPath(node_class)));
  int deleted = 0;
  for (const IamInstanceProfile& p : profiles) {
    RETURN_IF_ERROR(Delete(p));
    ++deleted;
  }
  return deleted;
}

}  // namespace dovetail::providers::aws::nodeclass
