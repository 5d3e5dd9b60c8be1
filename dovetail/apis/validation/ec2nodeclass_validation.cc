// EC2NodeClass validation (karpenter.k8s.aws/v1), upstream's rules (see validation.h).

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_join.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/validation/internal.h"
#include "dovetail/apis/validation/validation.h"
#include "dovetail/common/duration.h"

namespace dovetail::apis::validation {
namespace {

using aws::v1::AMIFamily;
using aws::v1::EC2NodeClass;
using aws::v1::EC2NodeClassSpec;
using internal::Child;
using internal::ErrorList;
using internal::Item;
using internal::Quote;

constexpr size_t kMaxSelectorTerms = 30;
constexpr size_t kMaxSelectorTags = 20;
constexpr size_t kMaxAliasLength = 30;
constexpr size_t kMaxBlockDeviceMappings = 50;
constexpr size_t kMaxNetworkInterfaces = 150;
constexpr size_t kMaxPlacementGroupNameLength = 255;
constexpr int64_t kMinHopLimit = 1;
constexpr int64_t kMaxHopLimit = 64;
constexpr int32_t kMinVolumeInitializationRate = 100;
constexpr int32_t kMaxVolumeInitializationRate = 300;
constexpr int64_t kMaxVolumeSizeBytes = 64'000'000'000'000;  // 64000G = 64T
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kGB = 1'000'000'000;

constexpr std::array<std::string_view, 7> kVolumeTypes = {"standard", "io1", "io2", "gp2",
                                                          "sc1",      "st1", "gp3"};
constexpr std::array<std::string_view, 2> kInstanceMatchCriteria = {"open", "targeted"};
constexpr std::array<std::string_view, 4> kReservedResources = {"cpu", "memory",
                                                                "ephemeral-storage", "pid"};
constexpr std::array<std::string_view, 6> kEvictionSignals = {
    "memory.available",  "nodefs.available",   "nodefs.inodesFree",
    "imagefs.available", "imagefs.inodesFree", "pid.available"};

struct AliasFamily {
  std::string_view alias;  // as written before '@'
  AMIFamily family;
  bool latest_only;
};
constexpr std::array<AliasFamily, 6> kAliasFamilies = {{
    {"al2", AMIFamily::kAL2, false},
    {"al2023", AMIFamily::kAL2023, false},
    {"bottlerocket", AMIFamily::kBottlerocket, false},
    {"windows2019", AMIFamily::kWindows2019, true},
    {"windows2022", AMIFamily::kWindows2022, true},
    {"windows2025", AMIFamily::kWindows2025, true},
}};

// Tag keys Karpenter sets on the resources it creates.
constexpr std::array<std::string_view, 4> kRestrictedTagKeys = {
    v1::kTagNodePool, v1::kTagNodeClaim, v1::kTagNodeClass, v1::kTagEksClusterName};

template <size_t N>
bool OneOf(std::string_view value, const std::array<std::string_view, N>& allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

template <size_t N>
std::string List(const std::array<std::string_view, N>& values) {
  return absl::StrJoin(values.begin(), values.end(), ", ", StdStringViewFormatter());
}

// ^<prefix>[0-9a-z]+$
bool IsResourceId(std::string_view text, std::string_view prefix) {
  if (!text.starts_with(prefix) || text.size() == prefix.size()) return false;
  return std::all_of(text.begin() + static_cast<ptrdiff_t>(prefix.size()), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'); });
}

void CheckId(const std::string& id, std::string_view prefix, std::string_view path,
             ErrorList& errors) {
  if (id.empty() || IsResourceId(id, prefix)) return;
  errors.Add(Child(path, "id"),
             Cat("must look like ", prefix, "0123456789abcdef0 (", prefix,
                 " followed by lowercase letters and digits), got ", Quote(id)),
             id);
}

void CheckSelectorTags(const core::StringMap& tags, std::string_view path, ErrorList& errors) {
  const std::string at = Child(path, "tags");
  if (tags.size() > kMaxSelectorTags) {
    errors.Add(at, Cat("must have at most ", kMaxSelectorTags, " items, got ", tags.size()));
  }
  for (const auto& [key, value] : tags) {
    if (key.empty() || value.empty()) {
      errors.Add(key.empty() ? at : Child(at, key),
                 "empty tag keys or values aren't supported (use \"*\" to match any value)", key);
    }
  }
}

// Checks the size of a selector-term list; `required` lists need at least one term.
void CheckTermCount(size_t count, bool required, std::string_view path, ErrorList& errors) {
  if (required && count == 0) {
    errors.Add(std::string(path), "must have at least 1 item");
  } else if (count > kMaxSelectorTerms) {
    errors.Add(std::string(path),
               Cat("must have at most ", kMaxSelectorTerms, " items, got ", count));
  }
}

void ValidateSubnetTerms(const EC2NodeClassSpec& spec, ErrorList& errors) {
  const std::string path = "spec.subnetSelectorTerms";
  CheckTermCount(spec.subnet_selector_terms.size(), /*required=*/true, path, errors);
  for (size_t i = 0; i < spec.subnet_selector_terms.size(); ++i) {
    const aws::v1::SubnetSelectorTerm& term = spec.subnet_selector_terms[i];
    const std::string at = Item(path, i);
    if (term.tags.empty() && term.id.empty()) {
      errors.Add(at, "expected at least one of 'tags' or 'id' in a subnet selector term");
    }
    if (!term.id.empty() && !term.tags.empty()) {
      errors.Add(at,
                 "'id' is mutually exclusive, cannot be set with a combination of other fields "
                 "in a subnet selector term");
    }
    CheckId(term.id, "subnet-", at, errors);
    CheckSelectorTags(term.tags, at, errors);
  }
}

void ValidateSecurityGroupTerms(const EC2NodeClassSpec& spec, ErrorList& errors) {
  const std::string path = "spec.securityGroupSelectorTerms";
  CheckTermCount(spec.security_group_selector_terms.size(), /*required=*/true, path, errors);
  for (size_t i = 0; i < spec.security_group_selector_terms.size(); ++i) {
    const aws::v1::SecurityGroupSelectorTerm& term = spec.security_group_selector_terms[i];
    const std::string at = Item(path, i);
    const bool tags = !term.tags.empty();
    const bool id = !term.id.empty();
    const bool name = !term.name.empty();
    if (!tags && !id && !name) {
      errors.Add(at,
                 "expected at least one of 'tags', 'id' or 'name' in a security group selector "
                 "term");
    }
    if (id && (tags || name)) {
      errors.Add(at,
                 "'id' is mutually exclusive, cannot be set with a combination of other fields "
                 "in a security group selector term");
    } else if (name && tags) {
      errors.Add(at,
                 "'name' is mutually exclusive, cannot be set with a combination of other fields "
                 "in a security group selector term");
    }
    CheckId(term.id, "sg-", at, errors);
    CheckSelectorTags(term.tags, at, errors);
  }
}

void ValidateCapacityReservationTerms(const EC2NodeClassSpec& spec, ErrorList& errors) {
  const std::string path = "spec.capacityReservationSelectorTerms";
  CheckTermCount(spec.capacity_reservation_selector_terms.size(), /*required=*/false, path, errors);
  for (size_t i = 0; i < spec.capacity_reservation_selector_terms.size(); ++i) {
    const aws::v1::CapacityReservationSelectorTerm& term =
        spec.capacity_reservation_selector_terms[i];
    const std::string at = Item(path, i);
    const bool tags = !term.tags.empty();
    const bool id = !term.id.empty();
    const bool owner = !term.owner_id.empty();
    const bool criteria = !term.instance_match_criteria.empty();
    if (!tags && !id && !criteria) {
      errors.Add(at,
                 "expected at least one of 'tags', 'id' or 'instanceMatchCriteria' in a capacity "
                 "reservation selector term ('ownerID' alone selects nothing)");
    }
    if (id && (tags || owner || criteria)) {
      errors.Add(at,
                 "'id' is mutually exclusive, cannot be set with a combination of other fields "
                 "in a capacity reservation selector term");
    }
    CheckId(term.id, "cr-", at, errors);
    if (owner &&
        (term.owner_id.size() != 12 || !std::all_of(term.owner_id.begin(), term.owner_id.end(),
                                                    [](char c) { return c >= '0' && c <= '9'; }))) {
      errors.Add(Child(at, "ownerID"),
                 Cat("must be a 12-digit AWS account ID, got ", Quote(term.owner_id)),
                 term.owner_id);
    }
    if (criteria && !OneOf(term.instance_match_criteria, kInstanceMatchCriteria)) {
      errors.Add(Child(at, "instanceMatchCriteria"),
                 Cat("unsupported value ", Quote(term.instance_match_criteria),
                     ": supported values: ", List(kInstanceMatchCriteria)),
                 term.instance_match_criteria);
    }
    CheckSelectorTags(term.tags, at, errors);
  }
}

// Checks one alias ("family@version"); returns its family when well formed.
std::optional<AMIFamily> CheckAlias(const std::string& alias, std::string_view path,
                                    ErrorList& errors) {
  const std::string at = Child(path, "alias");
  if (alias.size() > kMaxAliasLength) {
    errors.Add(at, Cat("may not be more than ", kMaxAliasLength, " characters, got ", alias.size()),
               alias);
  }
  const size_t at_sign = alias.find('@');
  const std::string_view family =
      std::string_view(alias).substr(0, std::min(at_sign, alias.size()));
  const bool family_ok = !family.empty() && std::all_of(family.begin(), family.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  });
  if (at_sign == std::string::npos || !family_ok || at_sign + 1 == alias.size() ||
      alias.find('@', at_sign + 1) != std::string::npos) {
    errors.Add(at,
               Cat("'alias' is improperly formatted, must match the format 'family@version' "
                   "(e.g. al2023@latest), got ",
                   Quote(alias)),
               alias);
    return std::nullopt;
  }
  const std::string_view version = std::string_view(alias).substr(at_sign + 1);
  for (const AliasFamily& f : kAliasFamilies) {
    if (f.alias != family) continue;
    if (f.latest_only && version != "latest") {
      errors.Add(at, Cat("windows families may only specify version 'latest', got ", Quote(alias)),
                 alias);
    }
    return f.family;
  }
  errors.Add(at,
             Cat("family ", Quote(family),
                 " is not supported, must be one of al2, al2023, bottlerocket, windows2019, "
                 "windows2022, windows2025"),
             alias);
  return std::nullopt;
}

void ValidateAMISelection(const EC2NodeClassSpec& spec, ErrorList& errors) {
  const std::string path = "spec.amiSelectorTerms";
  CheckTermCount(spec.ami_selector_terms.size(), /*required=*/true, path, errors);
  bool has_alias = false;
  std::optional<AMIFamily> alias_family;
  std::string alias_text;
  for (size_t i = 0; i < spec.ami_selector_terms.size(); ++i) {
    const aws::v1::AMISelectorTerm& term = spec.ami_selector_terms[i];
    const std::string at = Item(path, i);
    const bool alias = !term.alias.empty();
    const bool tags = !term.tags.empty();
    const bool id = !term.id.empty();
    const bool name = !term.name.empty();
    const bool owner = !term.owner.empty();
    const bool ssm = !term.ssm_parameter.empty();
    if (!alias && !tags && !id && !name && !ssm) {
      errors.Add(at,
                 "expected at least one of 'alias', 'tags', 'id', 'name' or 'ssmParameter' in an "
                 "ami selector term ('owner' alone selects nothing)");
    }
    if (id && (alias || tags || name || owner || ssm)) {
      errors.Add(at,
                 "'id' is mutually exclusive, cannot be set with a combination of other fields "
                 "in amiSelectorTerms");
    }
    if (alias && (id || tags || name || owner || ssm)) {
      errors.Add(at,
                 "'alias' is mutually exclusive, cannot be set with a combination of other "
                 "fields in amiSelectorTerms");
    }
    CheckId(term.id, "ami-", at, errors);
    CheckSelectorTags(term.tags, at, errors);
    if (alias) {
      if (!has_alias) alias_text = term.alias;
      has_alias = true;
      std::optional<AMIFamily> family = CheckAlias(term.alias, at, errors);
      if (!alias_family) alias_family = family;
    }
  }
  if (has_alias && spec.ami_selector_terms.size() != 1) {
    errors.Add(path,
               "'alias' is mutually exclusive, cannot be set with a combination of other "
               "amiSelectorTerms: an alias must be the only term");
  }
  if (!spec.ami_family.has_value()) {
    if (!has_alias) {
      errors.Add("spec.amiFamily",
                 "must specify amiFamily if amiSelectorTerms does not contain an alias (it "
                 "decides the user data format and default block devices)");
    }
  } else if (alias_family.has_value() && *spec.ami_family != AMIFamily::kCustom &&
             *spec.ami_family != *alias_family) {
    const std::string family(core::EnumName(*spec.ami_family));
    errors.Add("spec.amiFamily",
               Cat("amiFamily ", Quote(family),
                   " must be 'Custom' or match the family of the alias ", Quote(alias_text)),
               family);
  }
}

void ValidateTags(const core::StringMap& tags, ErrorList& errors) {
  const std::string path = "spec.tags";
  for (const auto& [key, value] : tags) {
    if (key.empty()) {
      errors.Add(path, "empty tag keys aren't supported");
      continue;
    }
    std::string_view restricted;
    if (std::string_view(key).starts_with(v1::kTagClusterPrefix)) {
      restricted = v1::kTagClusterPrefix;
    } else if (OneOf(key, kRestrictedTagKeys)) {
      restricted = key;
    }
    if (!restricted.empty()) {
      errors.Add(Child(path, key),
                 Cat("tag contains a restricted tag matching ", restricted,
                     ": Karpenter sets this tag itself"),
                 key);
    }
  }
}

// A percentage (0-100 with up to two decimals) or a non-negative quantity.
bool IsEvictionThreshold(std::string_view value) {
  if (value.ends_with('%')) {
    value.remove_suffix(1);
    const size_t dot = value.find('.');
    const std::string_view whole = value.substr(0, dot);
    const std::string_view fraction =
        dot == std::string_view::npos ? std::string_view() : value.substr(dot + 1);
    auto digits = [](std::string_view s) {
      return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dot != std::string_view::npos && (fraction.empty() || fraction.size() > 2)) return false;
    if (!digits(fraction)) return false;
    if (whole == "100") return fraction.find_first_not_of('0') == std::string_view::npos;
    return !whole.empty() && whole.size() <= 2 && digits(whole);
  }
  if (value.empty() || value.front() == '+' || value.front() == '-') return false;
  return Quantity::Parse(value).ok();
}

template <size_t N>
void CheckKeys(const core::StringMap& map, const std::array<std::string_view, N>& allowed,
               std::string_view path, std::string_view field, ErrorList& errors) {
  for (const auto& [key, value] : map) {
    if (!OneOf(key, allowed)) {
      errors.Add(Child(path, key),
                 Cat("valid keys for ", field, " are [", List(allowed), "], got ", Quote(key)),
                 key);
    }
  }
}

void ValidateKubelet(const aws::v1::KubeletConfiguration& kubelet, ErrorList& errors) {
  const std::string path = "spec.kubelet";
  if (kubelet.max_pods && *kubelet.max_pods < 0) {
    errors.Add(Child(path, "maxPods"),
               Cat("must be greater than or equal to 0, got ", *kubelet.max_pods),
               Cat(*kubelet.max_pods));
  }
  if (kubelet.pods_per_core && *kubelet.pods_per_core < 0) {
    errors.Add(Child(path, "podsPerCore"),
               Cat("must be greater than or equal to 0, got ", *kubelet.pods_per_core),
               Cat(*kubelet.pods_per_core));
  }
  const std::pair<const core::StringMap*, std::string_view> reserved[] = {
      {&kubelet.system_reserved, "systemReserved"}, {&kubelet.kube_reserved, "kubeReserved"}};
  for (const auto& [map, field] : reserved) {
    const std::string at = Child(path, field);
    CheckKeys(*map, kReservedResources, at, field, errors);
    for (const auto& [key, value] : *map) {
      if (!Quantity::Parse(value).ok()) {
        errors.Add(Child(at, key),
                   Cat("must be a resource quantity such as 100m or 1Gi, got ", Quote(value)),
                   value);
      } else if (std::string_view(value).starts_with('-')) {
        errors.Add(Child(at, key),
                   Cat(field, " value cannot be a negative resource quantity, got ", Quote(value)),
                   value);
      }
    }
  }
  const std::pair<const core::StringMap*, std::string_view> eviction[] = {
      {&kubelet.eviction_hard, "evictionHard"}, {&kubelet.eviction_soft, "evictionSoft"}};
  for (const auto& [map, field] : eviction) {
    const std::string at = Child(path, field);
    CheckKeys(*map, kEvictionSignals, at, field, errors);
    for (const auto& [key, value] : *map) {
      if (!IsEvictionThreshold(value)) {
        errors.Add(Child(at, key),
                   Cat("must be a percentage from 0% to 100% or a non-negative quantity such as "
                       "500Mi, got ",
                       Quote(value)),
                   value);
      }
    }
  }
  const std::string grace = Child(path, "evictionSoftGracePeriod");
  CheckKeys(kubelet.eviction_soft_grace_period, kEvictionSignals, grace, "evictionSoftGracePeriod",
            errors);
  for (const auto& [key, value] : kubelet.eviction_soft_grace_period) {
    if (!ParseGoDuration(value).ok()) {
      errors.Add(Child(grace, key), Cat("must be a duration such as 1m30s, got ", Quote(value)),
                 value);
    }
  }
  for (const auto& [key, value] : kubelet.eviction_soft) {
    if (!kubelet.eviction_soft_grace_period.contains(key)) {
      errors.Add(
          Child(path, "evictionSoft"),
          Cat("evictionSoft key ", Quote(key), " does not have a matching evictionSoftGracePeriod"),
          key);
    }
  }
  for (const auto& [key, value] : kubelet.eviction_soft_grace_period) {
    if (!kubelet.eviction_soft.contains(key)) {
      errors.Add(
          grace,
          Cat("evictionSoftGracePeriod key ", Quote(key), " does not have a matching evictionSoft"),
          key);
    }
  }
  const std::pair<const std::optional<int32_t>*, std::string_view> percents[] = {
      {&kubelet.image_gc_high_threshold_percent, "imageGCHighThresholdPercent"},
      {&kubelet.image_gc_low_threshold_percent, "imageGCLowThresholdPercent"}};
  for (const auto& [value, field] : percents) {
    if (value->has_value() && (**value < 0 || **value > 100)) {
      errors.Add(Child(path, field), Cat("must be between 0 and 100, got ", **value), Cat(**value));
    }
  }
  if (kubelet.image_gc_high_threshold_percent && kubelet.image_gc_low_threshold_percent &&
      *kubelet.image_gc_high_threshold_percent <= *kubelet.image_gc_low_threshold_percent) {
    errors.Add(Child(path, "imageGCHighThresholdPercent"),
               Cat("imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent, "
                   "got ",
                   *kubelet.image_gc_high_threshold_percent,
                   " <= ", *kubelet.image_gc_low_threshold_percent));
  }
}

// 1-16384 Gi-ish bounds are per volume type and left to EC2; the CRD only bounds the total size
// (at most 64T) and the unit (whole Gi, G, Ti or T).
void CheckVolumeSize(const Quantity& size, std::string_view path, ErrorList& errors) {
  const int64_t milli = size.MilliValue();
  const bool whole_bytes = milli % 1000 == 0;
  const int64_t bytes = milli / 1000;
  if (!whole_bytes || bytes <= 0 || bytes > kMaxVolumeSizeBytes ||
      (bytes % kGiB != 0 && bytes % kGB != 0)) {
    errors.Add(std::string(path),
               Cat("must be a whole number of Gi, G, Ti or T between 1G and 64T (e.g. 20Gi), "
                   "got ",
                   Quote(size.ToString())),
               size.ToString());
  }
}

void ValidateBlockDeviceMappings(const EC2NodeClassSpec& spec, ErrorList& errors) {
  const std::string path = "spec.blockDeviceMappings";
  const auto& mappings = spec.block_device_mappings;
  if (mappings.size() > kMaxBlockDeviceMappings) {
    errors.Add(path,
               Cat("must have at most ", kMaxBlockDeviceMappings, " items, got ", mappings.size()));
  }
  const auto roots =
      std::count_if(mappings.begin(), mappings.end(),
                    [](const aws::v1::BlockDeviceMapping& m) { return m.root_volume; });
  if (roots > 1) {
    errors.Add(path, Cat("must have only one blockDeviceMappings with rootVolume, got ", roots));
  }
  for (size_t i = 0; i < mappings.size(); ++i) {
    if (!mappings[i].ebs.has_value()) continue;
    const aws::v1::BlockDevice& ebs = *mappings[i].ebs;
    const std::string at = Child(Item(path, i), "ebs");
    const bool has_snapshot = ebs.snapshot_id.has_value() && !ebs.snapshot_id->empty();
    if (!ebs.snapshot_id.has_value() && !ebs.volume_size.has_value()) {
      errors.Add(at, "snapshotID or volumeSize must be defined");
    }
    if (ebs.volume_size.has_value())
      CheckVolumeSize(*ebs.volume_size, Child(at, "volumeSize"), errors);
    if (ebs.volume_type.has_value() && !OneOf(*ebs.volume_type, kVolumeTypes)) {
      errors.Add(Child(at, "volumeType"),
                 Cat("unsupported value ", Quote(*ebs.volume_type),
                     ": supported values: ", List(kVolumeTypes)),
                 *ebs.volume_type);
    }
    if (ebs.volume_initialization_rate.has_value()) {
      const int32_t rate = *ebs.volume_initialization_rate;
      if (rate < kMinVolumeInitializationRate || rate > kMaxVolumeInitializationRate) {
        errors.Add(Child(at, "volumeInitializationRate"),
                   Cat("must be between ", kMinVolumeInitializationRate, " and ",
                       kMaxVolumeInitializationRate, " MiB/s, got ", rate),
                   Cat(rate));
      }
      if (!has_snapshot) {
        errors.Add(Child(at, "volumeInitializationRate"),
                   "snapshotID must be set when volumeInitializationRate is set");
      }
    }
    if (ebs.iops.has_value() && *ebs.iops < 0) {
      errors.Add(Child(at, "iops"), Cat("must not be negative, got ", *ebs.iops), Cat(*ebs.iops));
    }
    if (ebs.throughput.has_value() && *ebs.throughput < 0) {
      errors.Add(Child(at, "throughput"), Cat("must not be negative, got ", *ebs.throughput),
                 Cat(*ebs.throughput));
    }
  }
}

void ValidateNetworkInterfaces(const EC2NodeClassSpec& spec, ErrorList& errors) {
  const std::string path = "spec.networkInterfaces";
  const auto& nics = spec.network_interfaces;
  if (nics.empty()) return;
  if (nics.size() > kMaxNetworkInterfaces) {
    errors.Add(path, Cat("must have at most ", kMaxNetworkInterfaces, " items, got ", nics.size()));
  }
  bool primary = false;
  std::map<std::pair<int32_t, int32_t>, size_t> slots;
  std::map<int32_t, size_t> efa_only_by_card;
  for (size_t i = 0; i < nics.size(); ++i) {
    const aws::v1::NetworkInterface& nic = nics[i];
    const std::string at = Item(path, i);
    if (nic.network_card_index < 0) {
      errors.Add(Child(at, "networkCardIndex"),
                 Cat("must be greater than or equal to 0, got ", nic.network_card_index));
    }
    if (nic.device_index < 0) {
      errors.Add(Child(at, "deviceIndex"),
                 Cat("must be greater than or equal to 0, got ", nic.device_index));
    }
    const bool efa_only = nic.interface_type == aws::v1::NetworkInterfaceType::kEfaOnly;
    if (nic.network_card_index == 0 && nic.device_index == 0 && !efa_only) primary = true;
    const auto [slot, fresh] =
        slots.emplace(std::make_pair(nic.network_card_index, nic.device_index), i);
    if (!fresh) {
      errors.Add(path,
                 Cat("networkInterfaces must have unique (networkCardIndex, deviceIndex) pairs: "
                     "items ",
                     slot->second, " and ", i, " both use (", nic.network_card_index, ", ",
                     nic.device_index, ")"));
    }
    if (efa_only) {
      const auto [card, first] = efa_only_by_card.emplace(nic.network_card_index, i);
      if (!first) {
        errors.Add(path,
                   Cat("at most one efa-only interface per network card: items ", card->second,
                       " and ", i, " are both on card ", nic.network_card_index));
      }
    }
  }
  if (!primary) {
    errors.Add(path,
               "networkInterfaces must include the primary interface (networkCardIndex 0, "
               "deviceIndex 0, interfaceType interface)");
  }
}

void CheckRange(const std::optional<int32_t>& value, int32_t min, int32_t max,
                std::string_view path, ErrorList& errors) {
  if (!value.has_value() || (*value >= min && *value <= max)) return;
  errors.Add(std::string(path), Cat("must be between ", min, " and ", max, ", got ", *value),
             Cat(*value));
}

}  // namespace

std::vector<FieldError> ValidateEC2NodeClass(const EC2NodeClass& node_class) {
  ErrorList errors;
  internal::ValidateObjectMeta(node_class.metadata, "metadata", errors);
  const EC2NodeClassSpec& spec = node_class.spec;

  ValidateSubnetTerms(spec, errors);
  ValidateSecurityGroupTerms(spec, errors);
  ValidateCapacityReservationTerms(spec, errors);
  ValidateAMISelection(spec, errors);

  const bool role = !spec.role.empty();
  const bool profile = spec.instance_profile.has_value();
  if (role == profile) {
    errors.Add("spec", role ? "must specify exactly one of ['role', 'instanceProfile'], got both"
                            : "must specify exactly one of ['role', 'instanceProfile'], got "
                              "neither");
  }
  if (profile && spec.instance_profile->empty()) {
    errors.Add("spec.instanceProfile", "instanceProfile cannot be empty");
  }
  ValidateTags(spec.tags, errors);
  if (spec.kubelet.has_value()) ValidateKubelet(*spec.kubelet, errors);
  ValidateBlockDeviceMappings(spec, errors);
  ValidateNetworkInterfaces(spec, errors);

  if (spec.ip_prefix_count && *spec.ip_prefix_count < 0) {
    errors.Add("spec.ipPrefixCount",
               Cat("must be greater than or equal to 0, got ", *spec.ip_prefix_count),
               Cat(*spec.ip_prefix_count));
  }
  if (spec.metadata_options.has_value()) {
    const auto& hops = spec.metadata_options->http_put_response_hop_limit;
    if (hops.has_value() && (*hops < kMinHopLimit || *hops > kMaxHopLimit)) {
      errors.Add("spec.metadataOptions.httpPutResponseHopLimit",
                 Cat("must be between ", kMinHopLimit, " and ", kMaxHopLimit, ", got ", *hops),
                 Cat(*hops));
    }
  }
  if (spec.connection_tracking.has_value()) {
    const aws::v1::ConnectionTracking& ct = *spec.connection_tracking;
    const std::string path = "spec.connectionTracking";
    if (!ct.tcp_established_timeout && !ct.udp_stream_timeout && !ct.udp_timeout) {
      errors.Add(path,
                 "connectionTracking must set at least one timeout (tcpEstablishedTimeout, "
                 "udpStreamTimeout or udpTimeout)");
    }
    CheckRange(ct.tcp_established_timeout, 60, 432000, Child(path, "tcpEstablishedTimeout"),
               errors);
    CheckRange(ct.udp_stream_timeout, 60, 180, Child(path, "udpStreamTimeout"), errors);
    CheckRange(ct.udp_timeout, 30, 60, Child(path, "udpTimeout"), errors);
  }
  if (spec.placement_group_selector.has_value()) {
    const aws::v1::PlacementGroupSelector& pg = *spec.placement_group_selector;
    const std::string path = "spec.placementGroupSelector";
    if (pg.name.empty() == pg.id.empty()) {
      errors.Add(path, "exactly one of 'name' or 'id' must be set in placementGroupSelector");
    }
    CheckId(pg.id, "pg-", path, errors);
    if (pg.name.size() > kMaxPlacementGroupNameLength) {
      errors.Add(Child(path, "name"),
                 Cat("may not be more than ", kMaxPlacementGroupNameLength, " characters, got ",
                     pg.name.size()),
                 pg.name);
    }
  }
  return std::move(errors).Take();
}

std::vector<FieldError> ValidateEC2NodeClassUpdate(const EC2NodeClass& old_class,
                                                   const EC2NodeClass& updated) {
  ErrorList errors;
  errors.Append(ValidateEC2NodeClass(updated));
  const bool had_role = !old_class.spec.role.empty();
  const bool has_role = !updated.spec.role.empty();
  const bool had_profile = old_class.spec.instance_profile.has_value();
  const bool has_profile = updated.spec.instance_profile.has_value();
  if (!((had_role && has_role) || (had_profile && has_profile)) && (had_role || had_profile)) {
    errors.Add("spec", had_role ? "changing from 'role' to 'instanceProfile' is not supported: "
                                  "delete and recreate the node class"
                                : "changing from 'instanceProfile' to 'role' is not supported: "
                                  "delete and recreate the node class");
  }
  return std::move(errors).Take();
}

}  // namespace dovetail::apis::validation
