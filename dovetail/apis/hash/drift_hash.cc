#include "dovetail/apis/hash/drift_hash.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <span>

#include "absl/strings/ascii.h"
#include "absl/time/time.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"

namespace dovetail::apis::hash {
namespace {

using nlohmann::json;
using Hash = std::optional<uint64_t>;  // nullopt: a zero value, which the walk skips

// The walk (hashstructure v2, FormatV2, as upstream calls it: SlicesAsSets, IgnoreZeroValue,
// ZeroNil), over JSON with the Go shape given by the tables below:
//  - a string hashes its bytes, an int32/int64 its little-endian bytes, a bool one int8 byte;
//  - Ordered(a, b) hashes the 16 little-endian bytes of a then b; Finish(a) the 8 of a;
//  - a struct starts from the hash of its Go type name; each field that is not zero, in Go
//    declaration order, does h ^= Ordered(hash(Go field name), hash(value)); h = Finish(h);
//  - a map XORs Ordered(hash(key), hash(value)) over its entries, then Finish;
//  - a slice XORs its elements (a set), without Finish.
// Zero is Go's: an absent field or JSON null (nil pointer, map or slice), and, for a field that is
// not a pointer, "", 0 or false. A present empty map or list is not zero; a pointer to a zero
// value is not zero either.

enum class Kind {
  kString,
  kInt32,
  kInt64,
  kBool,
  kStringMap,
  kStringSet,
  kDurationMap,       // map[string]metav1.Duration
  kStruct,            // an object of `type`
  kStructSet,         // a list of objects of `type`
  kMetaDuration,      // metav1.Duration: struct Duration{Duration int64}
  kNillableDuration,  // karpenter's NillableDuration: "Never" is nil
};

struct TypeDesc;
struct FieldDesc {
  std::string_view json;
  std::string_view go;
  Kind kind;
  bool pointer = false;
  const TypeDesc* type = nullptr;
};
struct TypeDesc {
  std::string_view go_name;
  std::span<const FieldDesc> fields;
};

// sigs.k8s.io/karpenter/pkg/apis/v1: NodeClaimTemplate and what it holds (corev1.Taint without
// timeAdded, which manifests do not carry). Requirements are tagged hash:"ignore".
constexpr FieldDesc kTaintFields[] = {{"key", "Key", Kind::kString},
                                      {"value", "Value", Kind::kString},
                                      {"effect", "Effect", Kind::kString}};
constexpr TypeDesc kTaint{"Taint", kTaintFields};
constexpr FieldDesc kNodeClassRefFields[] = {{"kind", "Kind", Kind::kString},
                                             {"name", "Name", Kind::kString},
                                             {"group", "Group", Kind::kString}};
constexpr TypeDesc kNodeClassRef{"NodeClassReference", kNodeClassRefFields};
constexpr FieldDesc kObjectMetaFields[] = {{"labels", "Labels", Kind::kStringMap},
                                           {"annotations", "Annotations", Kind::kStringMap}};
constexpr TypeDesc kObjectMeta{"ObjectMeta", kObjectMetaFields};
constexpr FieldDesc kTemplateSpecFields[] = {
    {"taints", "Taints", Kind::kStructSet, false, &kTaint},
    {"startupTaints", "StartupTaints", Kind::kStructSet, false, &kTaint},
    {"nodeClassRef", "NodeClassRef", Kind::kStruct, true, &kNodeClassRef},
    {"terminationGracePeriod", "TerminationGracePeriod", Kind::kMetaDuration, true},
    {"expireAfter", "ExpireAfter", Kind::kNillableDuration}};
constexpr TypeDesc kTemplateSpec{"NodeClaimTemplateSpec", kTemplateSpecFields};
constexpr FieldDesc kTemplateFields[] = {
    {"metadata", "ObjectMeta", Kind::kStruct, false, &kObjectMeta},  // embedded
    {"spec", "Spec", Kind::kStruct, false, &kTemplateSpec}};
constexpr TypeDesc kTemplate{"NodeClaimTemplate", kTemplateFields};

// github.com/aws/karpenter-provider-aws/pkg/apis/v1: EC2NodeClassSpec and what it holds. The
// selector terms, ipPrefixCount and amiFamily are tagged hash:"ignore"; volumeSize
// hash:"string" (the quantity as written).
constexpr FieldDesc kPlacementGroupFields[] = {{"name", "Name", Kind::kString, true},
                                               {"id", "ID", Kind::kString, true}};
constexpr TypeDesc kPlacementGroup{"PlacementGroupSelector", kPlacementGroupFields};
constexpr FieldDesc kKubeletFields[] = {
    {"clusterDNS", "ClusterDNS", Kind::kStringSet},
    {"maxPods", "MaxPods", Kind::kInt32, true},
    {"podsPerCore", "PodsPerCore", Kind::kInt32, true},
    {"systemReserved", "SystemReserved", Kind::kStringMap},
    {"kubeReserved", "KubeReserved", Kind::kStringMap},
    {"evictionHard", "EvictionHard", Kind::kStringMap},
    {"evictionSoft", "EvictionSoft", Kind::kStringMap},
    {"evictionSoftGracePeriod", "EvictionSoftGracePeriod", Kind::kDurationMap},
    {"evictionMaxPodGracePeriod", "EvictionMaxPodGracePeriod", Kind::kInt32, true},
    {"imageGCHighThresholdPercent", "ImageGCHighThresholdPercent", Kind::kInt32, true},
    {"imageGCLowThresholdPercent", "ImageGCLowThresholdPercent", Kind::kInt32, true},
    {"cpuCFSQuota", "CPUCFSQuota", Kind::kBool, true}};
constexpr TypeDesc kKubelet{"KubeletConfiguration", kKubeletFields};
constexpr FieldDesc kBlockDeviceFields[] = {
    {"deleteOnTermination", "DeleteOnTermination", Kind::kBool, true},
    {"encrypted", "Encrypted", Kind::kBool, true},
    {"iops", "IOPS", Kind::kInt64, true},
    {"kmsKeyID", "KMSKeyID", Kind::kString, true},
    {"snapshotID", "SnapshotID", Kind::kString, true},
    {"throughput", "Throughput", Kind::kInt64, true},
    {"volumeInitializationRate", "VolumeInitializationRate", Kind::kInt32, true},
    {"volumeSize", "VolumeSize", Kind::kString, true},
    {"volumeType", "VolumeType", Kind::kString, true}};
constexpr TypeDesc kBlockDevice{"BlockDevice", kBlockDeviceFields};
constexpr FieldDesc kBlockDeviceMappingFields[] = {
    {"deviceName", "DeviceName", Kind::kString, true},
    {"ebs", "EBS", Kind::kStruct, true, &kBlockDevice},
    {"rootVolume", "RootVolume", Kind::kBool}};
constexpr TypeDesc kBlockDeviceMapping{"BlockDeviceMapping", kBlockDeviceMappingFields};
constexpr FieldDesc kNetworkInterfaceFields[] = {
    {"networkCardIndex", "NetworkCardIndex", Kind::kInt32},
    {"deviceIndex", "DeviceIndex", Kind::kInt32},
    {"interfaceType", "InterfaceType", Kind::kString}};
constexpr TypeDesc kNetworkInterface{"NetworkInterface", kNetworkInterfaceFields};
constexpr FieldDesc kMetadataOptionsFields[] = {
    {"httpEndpoint", "HTTPEndpoint", Kind::kString, true},
    {"httpProtocolIPv6", "HTTPProtocolIPv6", Kind::kString, true},
    {"httpPutResponseHopLimit", "HTTPPutResponseHopLimit", Kind::kInt64, true},
    {"httpTokens", "HTTPTokens", Kind::kString, true}};
constexpr TypeDesc kMetadataOptions{"MetadataOptions", kMetadataOptionsFields};
constexpr FieldDesc kConnectionTrackingFields[] = {
    {"tcpEstablishedTimeout", "TCPEstablishedTimeout", Kind::kInt32, true},
    {"udpStreamTimeout", "UDPStreamTimeout", Kind::kInt32, true},
    {"udpTimeout", "UDPTimeout", Kind::kInt32, true}};
constexpr TypeDesc kConnectionTracking{"ConnectionTracking", kConnectionTrackingFields};
constexpr FieldDesc kCpuOptionsFields[] = {
    {"nestedVirtualization", "NestedVirtualization", Kind::kString, true}};
constexpr TypeDesc kCpuOptions{"CPUOptions", kCpuOptionsFields};
constexpr FieldDesc kNodeClassSpecFields[] = {
    {"placementGroupSelector", "PlacementGroupSelector", Kind::kStruct, true, &kPlacementGroup},
    {"associatePublicIPAddress", "AssociatePublicIPAddress", Kind::kBool, true},
    {"userData", "UserData", Kind::kString, true},
    {"role", "Role", Kind::kString},
    {"instanceProfile", "InstanceProfile", Kind::kString, true},
    {"tags", "Tags", Kind::kStringMap},
    {"kubelet", "Kubelet", Kind::kStruct, true, &kKubelet},
    {"blockDeviceMappings", "BlockDeviceMappings", Kind::kStructSet, false, &kBlockDeviceMapping},
    {"instanceStorePolicy", "InstanceStorePolicy", Kind::kString, true},
    {"networkInterfaces", "NetworkInterfaces", Kind::kStructSet, false, &kNetworkInterface},
    {"detailedMonitoring", "DetailedMonitoring", Kind::kBool, true},
    {"metadataOptions", "MetadataOptions", Kind::kStruct, true, &kMetadataOptions},
    {"connectionTracking", "ConnectionTracking", Kind::kStruct, true, &kConnectionTracking},
    {"context", "Context", Kind::kString, true},
    {"cpuOptions", "CPUOptions", Kind::kStruct, true, &kCpuOptions}};
constexpr TypeDesc kNodeClassSpec{"EC2NodeClassSpec", kNodeClassSpecFields};

uint64_t Le(uint64_t a) {
  std::array<char, 8> b;
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((a >> (8 * i)) & 0xff);
  return Fnv1(std::string_view(b.data(), b.size()));
}
uint64_t Le32(int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  std::array<char, 4> b;
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((u >> (8 * i)) & 0xff);
  return Fnv1(std::string_view(b.data(), b.size()));
}
uint64_t Finish(uint64_t a) { return Le(a); }
uint64_t Ordered(uint64_t a, uint64_t b) {
  std::array<char, 16> bytes;
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<char>((a >> (8 * i)) & 0xff);
    bytes[8 + i] = static_cast<char>((b >> (8 * i)) & 0xff);
  }
  return Fnv1(std::string_view(bytes.data(), bytes.size()));
}
uint64_t Str(std::string_view s) { return Fnv1(s); }

absl::Status TypeError(std::string_view path, std::string_view want) {
  return absl::InvalidArgumentError(Cat(path, ": want ", want));
}

absl::StatusOr<int64_t> DurationNanos(const json& v, std::string_view path) {
  if (!v.is_string()) return TypeError(path, "a duration string");
  absl::Duration d;
  const std::string text = v.get<std::string>();
  if (!absl::ParseDuration(text, &d) || d == absl::InfiniteDuration() ||
      d == -absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(Cat(path, ": ", text, " is not a duration"));
  }
  return absl::ToInt64Nanoseconds(d);
}

// metav1.Duration{Duration: ns}: the int64 field is zero, and skipped, at 0.
uint64_t MetaDuration(int64_t ns) {
  uint64_t h = Str("Duration");
  if (ns != 0) h = Finish(h ^ Ordered(Str("Duration"), Le(static_cast<uint64_t>(ns))));
  return h;
}

absl::StatusOr<Hash> StructHash(const TypeDesc& type, const json& obj, std::string_view path,
                                bool skip_if_zero);

absl::StatusOr<Hash> FieldHash(const FieldDesc& f, const json& parent,
                               std::string_view parent_path) {
  const auto it = parent.find(std::string(f.json));
  if (it == parent.end() || it->is_null()) return Hash();
  const json& v = *it;
  const std::string path = Cat(parent_path, ".", f.json);
  switch (f.kind) {
    case Kind::kString: {
      if (!v.is_string()) return TypeError(path, "a string");
      const std::string& s = v.get_ref<const std::string&>();
      if (!f.pointer && s.empty()) return Hash();
      return Hash(Str(s));
    }
    case Kind::kInt32:
    case Kind::kInt64: {
      if (!v.is_number_integer()) return TypeError(path, "an integer");
      const int64_t n = v.get<int64_t>();
      if (!f.pointer && n == 0) return Hash();
      if (f.kind == Kind::kInt32) {
        if (n < INT32_MIN || n > INT32_MAX) return TypeError(path, "an int32");
        return Hash(Le32(static_cast<int32_t>(n)));
      }
      return Hash(Le(static_cast<uint64_t>(n)));
    }
    case Kind::kBool: {
      if (!v.is_boolean()) return TypeError(path, "a boolean");
      if (!f.pointer && !v.get<bool>()) return Hash();
      const char byte = v.get<bool>() ? 1 : 0;
      return Hash(Fnv1(std::string_view(&byte, 1)));
    }
    case Kind::kStringMap:
    case Kind::kDurationMap: {
      if (!v.is_object()) return TypeError(path, "an object");
      uint64_t h = 0;
      for (const auto& [key, value] : v.items()) {
        uint64_t vh = 0;
        if (f.kind == Kind::kStringMap) {
          if (!value.is_string()) return TypeError(Cat(path, ".", key), "a string");
          vh = Str(value.get_ref<const std::string&>());
        } else {
          ASSIGN_OR_RETURN(const int64_t ns, DurationNanos(value, Cat(path, ".", key)));
          vh = MetaDuration(ns);
        }
        h ^= Ordered(Str(key), vh);
      }
      return Hash(Finish(h));
    }
    case Kind::kStringSet: {
      if (!v.is_array()) return TypeError(path, "a list");
      uint64_t h = 0;
      for (const json& e : v) {
        if (!e.is_string()) return TypeError(path, "a list of strings");
        h ^= Str(e.get_ref<const std::string&>());
      }
      return Hash(h);
    }
    case Kind::kStruct:
      return StructHash(*f.type, v, path, /*skip_if_zero=*/!f.pointer);
    case Kind::kStructSet: {
      if (!v.is_array()) return TypeError(path, "a list");
      uint64_t h = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        ASSIGN_OR_RETURN(const Hash e, StructHash(*f.type, v[i], Cat(path, "[", i, "]"), false));
        h ^= *e;
      }
      return Hash(h);
    }
    case Kind::kMetaDuration: {
      ASSIGN_OR_RETURN(const int64_t ns, DurationNanos(v, path));
      return Hash(MetaDuration(ns));
    }
    case Kind::kNillableDuration: {
      if (v.is_string() && v.get_ref<const std::string&>() == "Never") return Hash();
      ASSIGN_OR_RETURN(const int64_t ns, DurationNanos(v, path));
      // Its one hashed field is a *time.Duration: present, so hashed even at 0.
      return Hash(Finish(Str("NillableDuration") ^
                         Ordered(Str("Duration"), Le(static_cast<uint64_t>(ns)))));
    }
  }
  return Hash();
}

// A struct that is not behind a pointer is skipped when every field is zero (the types here have
// no ignored field that could be set alone where that matters).
absl::StatusOr<Hash> StructHash(const TypeDesc& type, const json& obj, std::string_view path,
                                bool skip_if_zero) {
  if (!obj.is_object()) return TypeError(path, "an object");
  uint64_t h = Str(type.go_name);
  bool any = false;
  for (const FieldDesc& f : type.fields) {
    ASSIGN_OR_RETURN(const Hash v, FieldHash(f, obj, path));
    if (!v.has_value()) continue;
    any = true;
    h = Finish(h ^ Ordered(Str(f.go), *v));
  }
  if (skip_if_zero && !any) return Hash();
  return Hash(h);
}

// The AMI family upstream mixes in: spec.amiFamily, else the first alias's family.
absl::StatusOr<std::string> AmiFamily(const json& spec) {
  if (const auto it = spec.find("amiFamily"); it != spec.end() && it->is_string()) {
    return it->get<std::string>();
  }
  if (const auto terms = spec.find("amiSelectorTerms"); terms != spec.end() && terms->is_array()) {
    for (const json& term : *terms) {
      const auto alias = term.is_object() ? term.find("alias") : term.end();
      if (alias == term.end() || !alias->is_string() ||
          alias->get_ref<const std::string&>().empty()) {
        continue;
      }
      const std::string& text = alias->get_ref<const std::string&>();
      const std::string family = absl::AsciiStrToLower(std::string(text.substr(0, text.find('@'))));
      for (std::string_view known :
           {"AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025"}) {
        if (absl::AsciiStrToLower(std::string(known)) == family) return std::string(known);
      }
      return absl::InvalidArgumentError(
          Cat("spec.amiSelectorTerms: alias ", text, " names no AMI family"));
    }
  }
  return std::string("Custom");
}

}  // namespace

uint64_t Fnv1(std::string_view bytes) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : bytes) {
    h *= 1099511628211ULL;
    h ^= c;
  }
  return h;
}

absl::StatusOr<std::string> NodePoolHash(const nlohmann::json& node_pool) {
  const json* tmpl = nullptr;
  if (node_pool.is_object()) {
    if (const auto spec = node_pool.find("spec"); spec != node_pool.end() && spec->is_object()) {
      if (const auto t = spec->find("template"); t != spec->end()) tmpl = &*t;
    }
  }
  if (tmpl == nullptr) return absl::InvalidArgumentError("spec.template: missing");
  ASSIGN_OR_RETURN(const Hash h, StructHash(kTemplate, *tmpl, "spec.template", false));
  return Cat(*h);
}

absl::StatusOr<std::string> EC2NodeClassHash(const nlohmann::json& node_class,
                                             std::string_view ca_bundle) {
  const json* spec = nullptr;
  if (node_class.is_object()) {
    if (const auto s = node_class.find("spec"); s != node_class.end()) spec = &*s;
  }
  if (spec == nullptr) return absl::InvalidArgumentError("spec: missing");
  ASSIGN_OR_RETURN(const Hash h, StructHash(kNodeClassSpec, *spec, "spec", false));
  ASSIGN_OR_RETURN(const std::string family, AmiFamily(*spec));
  // []any{spec, family, caBundle} hashed as a set.
  return Cat(*h ^ Str(family) ^ Str(ca_bundle));
}

std::vector<std::string> PresentEmpty(const json& object, std::span<const Collection> collections) {
  std::vector<std::string> out;
  for (const Collection& c : collections) {
    const json::json_pointer at{std::string(c.pointer)};
    if (!object.contains(at)) continue;
    const json& value = object.at(at);
    if ((value.is_object() || value.is_array()) && value.empty()) out.emplace_back(c.pointer);
  }
  return out;
}

void RestorePresentEmpty(json& object, std::span<const Collection> collections,
                         const std::vector<std::string>& present_empty) {
  for (const Collection& c : collections) {
    if (std::find(present_empty.begin(), present_empty.end(), c.pointer) == present_empty.end()) {
      continue;
    }
    const json::json_pointer at{std::string(c.pointer)};
    if (object.contains(at)) continue;
    object[at] = c.list ? json::array() : json::object();
  }
}

}  // namespace dovetail::apis::hash
