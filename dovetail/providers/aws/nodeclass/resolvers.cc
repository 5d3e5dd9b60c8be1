#include "dovetail/providers/aws/nodeclass/resolvers.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/providers/aws/errors.h"
#include "dovetail/providers/aws/query_protocol.h"

namespace dovetail::providers::aws::nodeclass {

namespace core = apis::core;
namespace v1 = apis::v1;

namespace {

void AddTagFilters(const core::StringMap& tags, std::vector<Filter>& filters) {
  for (const auto& [key, value] : tags) {
    if (value == "*") {
      filters.push_back({"tag-key", {key}});
    } else {
      filters.push_back({Cat("tag:", key), {value}});
    }
  }
}

std::string_view VariantName(AmiVariant variant) {
  switch (variant) {
    case AmiVariant::kNvidia:
      return "nvidia";
    case AmiVariant::kNeuron:
      return "neuron";
    case AmiVariant::kStandard:
      break;
  }
  return "standard";
}

// Parses "1.34" into (1, 34).
bool ParseMinor(std::string_view version, int& major, int& minor) {
  const size_t dot = version.find('.');
  if (dot == std::string_view::npos) return false;
  return absl::SimpleAtoi(absl::string_view(version.data(), dot), &major) &&
         absl::SimpleAtoi(absl::string_view(version.data() + dot + 1, version.size() - dot - 1),
                          &minor);
}

absl::Time ParseIsoTime(const std::string& text) {
  absl::Time t;
  std::string err;
  if (absl::ParseTime("%Y-%m-%dT%H:%M:%E*S%Ez", text, &t, &err)) return t;
  if (absl::ParseTime("%Y-%m-%dT%H:%M:%E*SZ", text, &t, &err)) return t;
  return absl::InfinitePast();
}

std::string RequirementsKey(const std::vector<core::NodeSelectorRequirement>& requirements) {
  std::string key;
  for (const auto& r : requirements) {
    absl::StrAppend(&key, r.key, "|", static_cast<int>(r.op), "|");
    for (const auto& v : r.values) absl::StrAppend(&key, v, ",");
    key += ";";
  }
  return key;
}

// Whether `a` is a better pick than `b` for the same requirement set.
bool Better(const Ec2Image& a, const Ec2Image& b, absl::Time now) {
  const bool a_deprecated = IsDeprecated(a, now), b_deprecated = IsDeprecated(b, now);
  if (a_deprecated != b_deprecated) return !a_deprecated;
  const absl::Time a_created = ParseIsoTime(a.creation_date);
  const absl::Time b_created = ParseIsoTime(b.creation_date);
  if (a_created != b_created) return a_created > b_created;
  if (a.name != b.name) return a.name < b.name;
  return a.image_id < b.image_id;
}

}  // namespace

std::vector<DescribeQuery> SubnetQueries(const std::vector<awsv1::SubnetSelectorTerm>& terms) {
  std::vector<DescribeQuery> out;
  for (const auto& term : terms) {
    DescribeQuery q;
    if (!term.id.empty()) q.filters.push_back({"subnet-id", {term.id}});
    AddTagFilters(term.tags, q.filters);
    if (!q.filters.empty()) out.push_back(std::move(q));
  }
  return out;
}

std::vector<DescribeQuery> SecurityGroupQueries(
    const std::vector<awsv1::SecurityGroupSelectorTerm>& terms) {
  std::vector<DescribeQuery> out;
  for (const auto& term : terms) {
    DescribeQuery q;
    if (!term.id.empty()) q.filters.push_back({"group-id", {term.id}});
    if (!term.name.empty()) q.filters.push_back({"group-name", {term.name}});
    AddTagFilters(term.tags, q.filters);
    if (!q.filters.empty()) out.push_back(std::move(q));
  }
  return out;
}

std::vector<DescribeQuery> ImageQueries(const std::vector<awsv1::AMISelectorTerm>& terms) {
  std::vector<DescribeQuery> out;
  for (const auto& term : terms) {
    if (!term.alias.empty() || !term.ssm_parameter.empty()) continue;
    DescribeQuery q;
    if (!term.id.empty()) q.filters.push_back({"image-id", {term.id}});
    if (!term.name.empty()) q.filters.push_back({"name", {term.name}});
    AddTagFilters(term.tags, q.filters);
    if (!term.owner.empty()) {
      q.owners.push_back(term.owner);
    } else if (!term.name.empty()) {
      q.owners = {"self", "amazon"};  // no AMI squatting through a name match
    }
    if (!q.filters.empty() || !q.owners.empty()) out.push_back(std::move(q));
  }
  return out;
}

std::vector<DescribeQuery> CapacityReservationQueries(
    const std::vector<awsv1::CapacityReservationSelectorTerm>& terms) {
  std::vector<DescribeQuery> out;
  for (const auto& term : terms) {
    DescribeQuery q;
    if (!term.id.empty()) q.filters.push_back({"capacity-reservation-id", {term.id}});
    if (!term.owner_id.empty()) q.filters.push_back({"owner-id", {term.owner_id}});
    if (!term.instance_match_criteria.empty()) {
      q.filters.push_back({"instance-match-criteria", {term.instance_match_criteria}});
    }
    AddTagFilters(term.tags, q.filters);
    if (q.filters.empty()) continue;
    q.filters.push_back({"state", {"active"}});
    out.push_back(std::move(q));
  }
  return out;
}

std::vector<awsv1::CapacityReservation> ParseCapacityReservations(const pugi::xml_node& root,
                                                                  absl::Time now) {
  std::vector<awsv1::CapacityReservation> out;
  for (pugi::xml_node item : root.child("capacityReservationSet").children("item")) {
    if (Text(item, "state") != "active") continue;
    awsv1::CapacityReservation r;
    r.id = Text(item, "capacityReservationId");
    r.availability_zone = Text(item, "availabilityZone");
    r.instance_type = Text(item, "instanceType");
    r.owner_id = Text(item, "ownerId");
    r.instance_match_criteria = Text(item, "instanceMatchCriteria");
    const std::string type = Text(item, "reservationType");
    r.reservation_type = type == "capacity-block" ? "capacity-block" : "default";
    const std::string interruptible = Text(item, "interruptible");
    if (!interruptible.empty()) r.interruptible = interruptible == "true";
    const std::string end = Text(item, "endDate");
    if (!end.empty()) {
      const absl::Time t = ParseIsoTime(end);
      if (t != absl::InfinitePast()) r.end_time = t;
    }
    r.state = "active";
    if (type == "capacity-block" && r.end_time.has_value() &&
        now >= *r.end_time - absl::Minutes(40)) {
      r.state = "expiring";
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<awsv1::CapacityReservation> CapacityReservationStatus(
    std::vector<awsv1::CapacityReservation> found) {
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  found.erase(std::unique(found.begin(), found.end(),
                          [](const auto& a, const auto& b) { return a.id == b.id; }),
              found.end());
  return found;
}

std::vector<awsv1::Subnet> SubnetStatus(const std::vector<Ec2Subnet>& found) {
  std::map<std::string, const Ec2Subnet*> by_id;
  for (const Ec2Subnet& s : found) by_id.emplace(s.subnet_id, &s);
  std::vector<const Ec2Subnet*> sorted;
  for (const auto& [id, s] : by_id) sorted.push_back(s);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Ec2Subnet* a, const Ec2Subnet* b) {
    return a->available_ip_address_count > b->available_ip_address_count;
  });
  std::vector<awsv1::Subnet> out;
  for (const Ec2Subnet* s : sorted) {
    out.push_back(
        {.id = s->subnet_id, .zone = s->availability_zone, .zone_id = s->availability_zone_id});
  }
  return out;
}

std::vector<awsv1::SecurityGroup> SecurityGroupStatus(const std::vector<Ec2SecurityGroup>& found) {
  std::map<std::string, std::string> by_id;
  for (const Ec2SecurityGroup& g : found) by_id.emplace(g.group_id, g.group_name);
  std::vector<awsv1::SecurityGroup> out;
  for (const auto& [id, name] : by_id) out.push_back({.id = id, .name = name});
  return out;
}

absl::StatusOr<AmiAlias> ParseAmiAlias(std::string_view alias) {
  const size_t at = alias.find('@');
  if (at == std::string_view::npos || at + 1 == alias.size()) {
    return absl::InvalidArgumentError(
        Cat("alias \"", alias, "\" is not of the form family@version"));
  }
  const std::string family = absl::AsciiStrToLower(absl::string_view(alias.data(), at));
  AmiAlias out;
  out.version = std::string(alias.substr(at + 1));
  if (family == "al2") {
    out.family = awsv1::AMIFamily::kAL2;
  } else if (family == "al2023") {
    out.family = awsv1::AMIFamily::kAL2023;
  } else if (family == "bottlerocket") {
    out.family = awsv1::AMIFamily::kBottlerocket;
  } else if (family == "windows2019") {
    out.family = awsv1::AMIFamily::kWindows2019;
  } else if (family == "windows2022") {
    out.family = awsv1::AMIFamily::kWindows2022;
  } else if (family == "windows2025") {
    out.family = awsv1::AMIFamily::kWindows2025;
  } else {
    return absl::InvalidArgumentError(Cat("alias \"", alias, "\": unknown AMI family \"", family,
                                          "\" (al2, al2023, bottlerocket, windows2019, "
                                          "windows2022, windows2025)"));
  }
  const bool windows = out.family == awsv1::AMIFamily::kWindows2019 ||
                       out.family == awsv1::AMIFamily::kWindows2022 ||
                       out.family == awsv1::AMIFamily::kWindows2025;
  if (windows && out.version != "latest") {
    return absl::InvalidArgumentError(
        Cat("alias \"", alias, "\": Windows aliases only support the version latest"));
  }
  return out;
}

absl::StatusOr<std::vector<AliasParameter>> AliasParameters(const AmiAlias& alias,
                                                            std::string_view k8s) {
  int major = 0, minor = 0;
  if (!ParseMinor(k8s, major, minor)) {
    return absl::InvalidArgumentError(Cat("unparseable Kubernetes version \"", k8s, "\""));
  }
  const bool latest = alias.version == "latest";
  std::vector<AliasParameter> out;
  using V = AmiVariant;
  switch (alias.family) {
    case awsv1::AMIFamily::kAL2023: {
      const std::pair<std::string_view, std::vector<V>> arches[] = {
          {"x86_64", {V::kStandard, V::kNvidia, V::kNeuron}},
          {"arm64", {V::kStandard, V::kNvidia}}};
      for (const auto& [arch, variants] : arches) {
        for (V variant : variants) {
          const std::string version = latest
                                          ? std::string("recommended")
                                          : Cat("amazon-eks-node-al2023-", arch, "-",
                                                VariantName(variant), "-", k8s, "-", alias.version);
          out.push_back({Cat("/aws/service/eks/optimized-ami/", k8s, "/amazon-linux-2023/", arch,
                             "/", VariantName(variant), "/", version, "/image_id"),
                         ArchLabel(arch),
                         {variant}});
        }
      }
      break;
    }
    case awsv1::AMIFamily::kAL2: {
      if (major > 1 || (major == 1 && minor >= 33)) {
        return absl::InvalidArgumentError(
            Cat("the al2 alias is not supported on Kubernetes ", k8s, " (1.33 and later)"));
      }
      struct Flavor {
        std::string_view suffix, node;
        std::string_view arch;
        std::vector<V> variants;
      };
      const Flavor flavors[] = {
          {"", "amazon-eks-node-", "amd64", {V::kStandard}},
          {"-arm64", "amazon-eks-arm64-node-", "arm64", {V::kStandard}},
          {"-gpu", "amazon-eks-gpu-node-", "amd64", {V::kNvidia, V::kNeuron}}};
      for (const Flavor& f : flavors) {
        const std::string version =
            latest ? std::string("recommended") : Cat(f.node, k8s, "-", alias.version);
        out.push_back({Cat("/aws/service/eks/optimized-ami/", k8s, "/amazon-linux-2", f.suffix, "/",
                           version, "/image_id"),
                       std::string(f.arch), f.variants});
      }
      break;
    }
    case awsv1::AMIFamily::kBottlerocket: {
      std::string version = latest ? std::string("latest") : alias.version;
      if (!latest && absl::StartsWith(version, "v")) version.erase(0, 1);
      for (std::string_view arch : {"x86_64", "arm64"}) {
        out.push_back(
            {Cat("/aws/service/bottlerocket/aws-k8s-", k8s, "/", arch, "/", version, "/image_id"),
             ArchLabel(arch),
             {V::kStandard, V::kNeuron}});
        out.push_back({Cat("/aws/service/bottlerocket/aws-k8s-", k8s, "-nvidia/", arch, "/",
                           version, "/image_id"),
                       ArchLabel(arch),
                       {V::kNvidia}});
      }
      break;
    }
    case awsv1::AMIFamily::kWindows2019:
    case awsv1::AMIFamily::kWindows2022:
    case awsv1::AMIFamily::kWindows2025: {
      const std::string_view year = alias.family == awsv1::AMIFamily::kWindows2019   ? "2019"
                                    : alias.family == awsv1::AMIFamily::kWindows2022 ? "2022"
                                                                                     : "2025";
      out.push_back({Cat("/aws/service/ami-windows-latest/Windows_Server-", year,
                         "-English-Core-EKS_Optimized-", k8s, "/image_id"),
                     "amd64",
                     {V::kStandard}});
      break;
    }
    case awsv1::AMIFamily::kCustom:
      return absl::InvalidArgumentError("the Custom family has no alias");
  }
  return out;
}

std::vector<core::NodeSelectorRequirement> VariantRequirements(std::string_view arch,
                                                               AmiVariant variant) {
  std::vector<core::NodeSelectorRequirement> out = {{.key = std::string(v1::kLabelArch),
                                                     .op = core::SelectorOperator::kIn,
                                                     .values = {std::string(arch)}}};
  switch (variant) {
    case AmiVariant::kStandard:
      out.push_back({.key = std::string(v1::kLabelInstanceGpuCount),
                     .op = core::SelectorOperator::kDoesNotExist});
      out.push_back({.key = std::string(v1::kLabelInstanceAcceleratorCount),
                     .op = core::SelectorOperator::kDoesNotExist});
      break;
    case AmiVariant::kNvidia:
      out.push_back(
          {.key = std::string(v1::kLabelInstanceGpuCount), .op = core::SelectorOperator::kExists});
      break;
    case AmiVariant::kNeuron:
      out.push_back({.key = std::string(v1::kLabelInstanceAcceleratorCount),
                     .op = core::SelectorOperator::kExists});
      break;
  }
  return out;
}

std::string ArchLabel(std::string_view ec2_architecture) {
  if (ec2_architecture == "x86_64") return "amd64";
  if (ec2_architecture == "arm64") return "arm64";
  return "";
}

bool IsDeprecated(const Ec2Image& image, absl::Time now) {
  if (image.deprecation_time.empty()) return false;
  return ParseIsoTime(image.deprecation_time) <= now;
}

std::vector<awsv1::AMI> SelectAmis(const std::vector<AmiCandidate>& candidates, absl::Time now) {
  std::map<std::string, const AmiCandidate*> best;
  for (const AmiCandidate& c : candidates) {
    const std::string key = RequirementsKey(c.requirements);
    auto [it, inserted] = best.emplace(key, &c);
    if (!inserted && Better(c.image, it->second->image, now)) it->second = &c;
  }
  std::vector<const AmiCandidate*> sorted;
  for (const auto& [key, c] : best) sorted.push_back(c);
  std::stable_sort(sorted.begin(), sorted.end(), [](const AmiCandidate* a, const AmiCandidate* b) {
    const absl::Time ta = ParseIsoTime(a->image.creation_date);
    const absl::Time tb = ParseIsoTime(b->image.creation_date);
    if (ta != tb) return ta > tb;
    return a->image.image_id < b->image.image_id;
  });
  std::vector<awsv1::AMI> out;
  for (const AmiCandidate* c : sorted) {
    out.push_back({.id = c->image.image_id,
                   .name = c->image.name,
                   .deprecated = IsDeprecated(c->image, now),
                   .requirements = c->requirements});
  }
  return out;
}

absl::StatusOr<std::string> KubernetesMinorVersion(std::string_view major, std::string_view minor) {
  auto digits = [](std::string_view s) {
    size_t n = 0;
    while (n < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[n]))) ++n;
    return s.substr(0, n);
  };
  const std::string_view ma = digits(major), mi = digits(minor);
  if (ma.empty() || mi.empty()) {
    return absl::InvalidArgumentError(
        Cat("unparseable Kubernetes version major=\"", major, "\" minor=\"", minor, "\""));
  }
  return Cat(ma, ".", mi);
}

absl::StatusOr<std::vector<awsv1::Subnet>> NodeClassResolver::Subnets(
    const awsv1::EC2NodeClassSpec& spec) {
  std::vector<Ec2Subnet> found;
  for (const DescribeQuery& q : SubnetQueries(spec.subnet_selector_terms)) {
    ASSIGN_OR_RETURN(std::vector<Ec2Subnet> page, ec2_.DescribeSubnets(q.filters));
    found.insert(found.end(), page.begin(), page.end());
  }
  return SubnetStatus(found);
}

absl::StatusOr<std::vector<awsv1::CapacityReservation>> NodeClassResolver::CapacityReservations(
    const awsv1::EC2NodeClassSpec& spec, absl::Time now) {
  std::vector<awsv1::CapacityReservation> found;
  for (const DescribeQuery& q :
       CapacityReservationQueries(spec.capacity_reservation_selector_terms)) {
    std::string token;
    do {
      QueryParams params;
      AddFilters(params, q.filters);
      if (!token.empty()) params.emplace_back("NextToken", token);
      ASSIGN_OR_RETURN(const std::unique_ptr<pugi::xml_document> doc,
                       ec2_.Query("DescribeCapacityReservations", params));
      const pugi::xml_node root = doc->document_element();
      std::vector<awsv1::CapacityReservation> page = ParseCapacityReservations(root, now);
      found.insert(found.end(), page.begin(), page.end());
      token = Text(root, "nextToken");
    } while (!token.empty());
  }
  return CapacityReservationStatus(std::move(found));
}

absl::StatusOr<std::vector<awsv1::SecurityGroup>> NodeClassResolver::SecurityGroups(
    const awsv1::EC2NodeClassSpec& spec) {
  std::vector<Ec2SecurityGroup> found;
  for (const DescribeQuery& q : SecurityGroupQueries(spec.security_group_selector_terms)) {
    ASSIGN_OR_RETURN(std::vector<Ec2SecurityGroup> page, ec2_.DescribeSecurityGroups(q.filters));
    found.insert(found.end(), page.begin(), page.end());
  }
  return SecurityGroupStatus(found);
}

absl::StatusOr<std::vector<awsv1::AMI>> NodeClassResolver::Amis(const awsv1::EC2NodeClassSpec& spec,
                                                                std::string_view k8s_version,
                                                                absl::Time now) {
  std::vector<AmiCandidate> candidates;
  // Image id => the requirement sets an SSM parameter gave it (aliases), then looked up at once.
  std::map<std::string, std::vector<std::vector<core::NodeSelectorRequirement>>> by_id;
  std::vector<DescribeQuery> queries = ImageQueries(spec.ami_selector_terms);
  for (const awsv1::AMISelectorTerm& term : spec.ami_selector_terms) {
    if (!term.alias.empty()) {
      ASSIGN_OR_RETURN(const AmiAlias alias, ParseAmiAlias(term.alias));
      ASSIGN_OR_RETURN(const std::vector<AliasParameter> parameters,
                       AliasParameters(alias, k8s_version));
      for (const AliasParameter& p : parameters) {
        absl::StatusOr<SsmParameter> value =
            ssm_.GetParameter(Cat(options_.ssm_path_prefix, p.path));
        if (!value.ok()) {
          if (value.status().code() == absl::StatusCode::kNotFound) continue;
          return value.status();
        }
        for (AmiVariant v : p.variants) {
          by_id[value->value].push_back(VariantRequirements(p.arch, v));
        }
      }
    } else if (!term.ssm_parameter.empty()) {
      absl::StatusOr<SsmParameter> value = ssm_.GetParameter(term.ssm_parameter);
      if (!value.ok()) {
        if (value.status().code() == absl::StatusCode::kNotFound) continue;
        return value.status();
      }
      queries.push_back({.filters = {{"image-id", {value->value}}}, .owners = {}});
    }
  }
  if (!by_id.empty()) {
    Filter ids{"image-id", {}};
    for (const auto& [id, reqs] : by_id) ids.values.push_back(id);
    ASSIGN_OR_RETURN(const std::vector<Ec2Image> images, ec2_.DescribeImages({ids}));
    for (const Ec2Image& image : images) {
      auto it = by_id.find(image.image_id);
      if (it == by_id.end()) continue;
      for (const auto& reqs : it->second) candidates.push_back({image, reqs});
    }
  }
  for (const DescribeQuery& q : queries) {
    ASSIGN_OR_RETURN(const std::vector<Ec2Image> images,
                     ec2_.DescribeImages(q.filters, {}, q.owners));
    for (const Ec2Image& image : images) {
      const std::string arch = ArchLabel(image.architecture);
      if (arch.empty()) continue;
      candidates.push_back({image,
                            {{.key = std::string(v1::kLabelArch),
                              .op = core::SelectorOperator::kIn,
                              .values = {arch}}}});
    }
  }
  return SelectAmis(candidates, now);
}

}  // namespace dovetail::providers::aws::nodeclass
