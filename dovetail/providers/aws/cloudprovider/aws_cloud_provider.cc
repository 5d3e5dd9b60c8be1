#include "dovetail/providers/aws/cloudprovider/aws_cloud_provider.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_join.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/aws_node_class_capacity.h"
#include "dovetail/cloudprovider/aws_node_price.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/log.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/providers/aws/cloudprovider/fleet.h"
#include "dovetail/providers/aws/cloudprovider/user_data.h"
#include "dovetail/providers/aws/errors.h"
#include "dovetail/providers/aws/metrics.h"
#include "dovetail/scheduling/requirements.h"

namespace dovetail::providers::aws {

namespace awsv1 = apis::aws::v1;
namespace core = apis::core;
namespace v1 = apis::v1;
namespace cp = ::dovetail::cloudprovider;
using scheduling::Requirements;

namespace {

// EC2's limit on user data (before base64).
constexpr size_t kMaxUserDataBytes = size_t{16} * 1024;

bool IsLaunchTemplateNotFound(const absl::Status& status) {
  const std::string code = AwsErrorCode(status);
  return (code.starts_with("InvalidLaunchTemplateName.") ||
          code.starts_with("InvalidLaunchTemplateId.")) &&
         code.find("NotFound") != std::string::npos;
}

bool IsGone(std::string_view state) { return state == "shutting-down" || state == "terminated"; }

absl::Time ParseTime(std::string_view text) {
  absl::Time t;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, AsAbsl(text), &t, &err)) return t;
  return absl::InfinitePast();
}

// The newest listed AMI whose requirements fit `type` (non-deprecated first; status order among
// equals); "" when none.
std::string ImageFor(const awsv1::EC2NodeClass& nc, const cp::InstanceType& type) {
  const awsv1::AMI* best = nullptr;
  for (const awsv1::AMI& ami : nc.status.amis) {
    absl::StatusOr<Requirements> r = Requirements::FromNodeSelectorRequirements(ami.requirements);
    if (!r.ok() || !cp::RequirementsIntersect(type.requirements(), *r)) continue;
    if (best == nullptr || (best->deprecated && !ami.deprecated)) best = &ami;
  }
  return best == nullptr ? "" : best->id;
}

std::string FamilyName(awsv1::AMIFamily f) {
  return std::string(awsv1::EnumNames(f)[static_cast<size_t>(f)]);
}

}  // namespace

NodeClassGetter NodeClassGetterFromKube(kube::Client& client) {
  return [&client](std::string_view name) -> absl::StatusOr<awsv1::EC2NodeClass> {
    kube::TypedClient<awsv1::EC2NodeClass> typed(client, kube::resources::kEC2NodeClasses);
    absl::StatusOr<awsv1::EC2NodeClass> nc = typed.Get("", name);
    if (!nc.ok() && kube::IsNotFound(nc.status())) {
      return absl::NotFoundError(Cat("EC2NodeClass ", name, " not found"));
    }
    if (nc.ok()) awsv1::ApplyDefaults(*nc);
    return nc;
  };
}

absl::StatusOr<std::string> InstanceIdFromProviderId(std::string_view provider_id) {
  if (!provider_id.starts_with("aws://")) {
    return absl::InvalidArgumentError(
        Cat("provider id \"", provider_id, "\" is not of the form aws:///<zone>/<instance id>"));
  }
  const size_t slash = provider_id.rfind('/');
  std::string_view id = provider_id.substr(slash + 1);
  if (!id.starts_with("i-")) {
    return absl::InvalidArgumentError(Cat("provider id \"", provider_id, "\" has no instance id"));
  }
  return std::string(id);
}

std::vector<Ec2Instance> ParseDescribeInstances(const pugi::xml_node& root) {
  std::vector<Ec2Instance> out;
  for (pugi::xml_node r : root.child("reservationSet").children("item")) {
    for (pugi::xml_node i : r.child("instancesSet").children("item")) {
      Ec2Instance inst;
      inst.instance_id = Text(i, "instanceId");
      inst.instance_type = Text(i, "instanceType");
      inst.image_id = Text(i, "imageId");
      inst.state = Text(i.child("instanceState"), "name");
      inst.zone = Text(i.child("placement"), "availabilityZone");
      inst.zone_id = Text(i.child("placement"), "availabilityZoneId");
      inst.subnet_id = Text(i, "subnetId");
      inst.lifecycle = Text(i, "instanceLifecycle");
      inst.capacity_reservation_id = Text(i, "capacityReservationId");
      for (pugi::xml_node g : i.child("groupSet").children("item")) {
        inst.security_group_ids.push_back(Text(g, "groupId"));
      }
      const std::string launch = Text(i, "launchTime");
      if (!launch.empty()) {
        const absl::Time t = ParseTime(launch);
        if (t != absl::InfinitePast()) inst.launch_time = t;
      }
      inst.tags = ParseTagSet(i);
      out.push_back(std::move(inst));
    }
  }
  return out;
}

AwsCloudProvider::AwsCloudProvider(Dependencies deps, Options options)
    : ec2_(deps.ec2),
      pricing_(deps.pricing),
      unavailable_(deps.unavailable),
      clock_(deps.clock),
      get_node_class_(std::move(deps.get_node_class)),
      options_(std::move(options)) {}

// ---- catalog ----

absl::Status AwsCloudProvider::RefreshCatalog(bool force) {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  bool changed = false;
  if (force || !inputs_.has_value() || now - types_at_ >= options_.instance_types_ttl) {
    absl::Status spot_error;
    absl::StatusOr<ApiCatalogInputs> inputs = FetchApiCatalogInputs(ec2_, now, &spot_error);
    if (inputs.ok()) {
      if (!inputs->spot_prices.has_value() && inputs_.has_value()) {
        inputs->spot_prices = inputs_->spot_prices;  // keep the last good spot prices
      }
      if (inputs->spot_prices.has_value() && spot_error.ok()) spot_at_ = now;
      inputs_ = *std::move(inputs);
      types_at_ = now;
      changed = true;
      RecordInstanceTypes(*inputs_);
    } else if (!inputs_.has_value()) {
      return inputs.status();
    }
  } else if (now - spot_at_ >= options_.spot_prices_ttl) {
    absl::StatusOr<std::vector<Ec2SpotPrice>> spot = ec2_.DescribeSpotPriceHistory(now);
    if (spot.ok()) {
      inputs_->spot_prices = *std::move(spot);
      spot_at_ = now;
      changed = true;
    }
  }
  if (force || on_demand_at_ == absl::InfinitePast() ||
      now - on_demand_at_ >= options_.on_demand_prices_ttl) {
    OnDemandPriceTable table = FetchOnDemandPrices(pricing_, options_.catalog.region,
                                                   options_.catalog.static_files.on_demand_prices);
    // A fallback to the static table after API prices were in use keeps the API prices.
    if (table.source == OnDemandPriceTable::Source::kApi || on_demand_rows_.empty()) {
      on_demand_rows_ = ToOnDemandPriceRows(options_.catalog.region, table.prices);
      changed = true;
    }
    on_demand_at_ = now;
  }
  if (changed || !catalog_.has_value()) {
    ApiCatalogOptions opts = options_.catalog;
    if (!on_demand_rows_.empty()) opts.static_files.on_demand_prices = on_demand_rows_;
    absl::StatusOr<cp::Catalog> catalog = BuildApiCatalog(*inputs_, opts);
    if (!catalog.ok()) {
      if (!catalog_.has_value()) return catalog.status();
    } else {
      catalog_ = *std::move(catalog);
      ++catalog_generation_;
    }
  }
  return absl::OkStatus();
}

// ---- metrics ----

void AwsCloudProvider::ExportMetrics(metrics::Registry& registry) {
  {
    absl::MutexLock lock(&metrics_mu_);
    metrics_.launch_failures = &registry.NewCounter(
        "karpenter_cloudprovider_instance_launch_failures_total",
        "CreateFleet errors (one per failed override), by zone, zone ID, capacity type and "
        "failure reason.",
        {"zone", "zone_id", "capacity_type", "reason"});
    metrics_.termination_failures = &registry.NewCounter(
        "karpenter_cloudprovider_instance_termination_failures_total",
        "TerminateInstances calls that failed, by zone and zone ID.", {"zone", "zone_id"});
    metrics_.cpu_cores = &registry.NewGauge(
        "karpenter_cloudprovider_instance_type_cpu_cores",
        "Default vCPUs of the instance type (EC2 DescribeInstanceTypes).", {"instance_type"});
    metrics_.memory_bytes = &registry.NewGauge(
        "karpenter_cloudprovider_instance_type_memory_bytes",
        "Memory of the instance type in bytes (EC2 DescribeInstanceTypes).", {"instance_type"});
    metrics_.user_data_bytes = &UserDataBytesGauge(registry);
  }
  absl::MutexLock lock(&mu_);
  if (inputs_.has_value()) RecordInstanceTypes(*inputs_);
}

AwsCloudProvider::Metrics AwsCloudProvider::CurrentMetrics() {
  absl::MutexLock lock(&metrics_mu_);
  return metrics_;
}

void AwsCloudProvider::RecordInstanceTypes(const ApiCatalogInputs& inputs) {
  const Metrics m = CurrentMetrics();
  if (m.cpu_cores == nullptr) return;
  std::map<metrics::LabelValues, double> cpu;
  std::map<metrics::LabelValues, double> memory;
  for (const Ec2InstanceTypeInfo& info : inputs.instance_types) {
    if (!IsSupportedInstanceType(info)) continue;
    cpu[{info.instance_type}] = static_cast<double>(info.default_vcpus);
    memory[{info.instance_type}] = static_cast<double>(info.memory_mib) * 1024 * 1024;
  }
  m.cpu_cores->Replace(std::move(cpu));
  m.memory_bytes->Replace(std::move(memory));
}

std::string AwsCloudProvider::ZoneIdOf(const std::string& zone) {
  absl::MutexLock lock(&mu_);
  if (!inputs_.has_value()) return "";
  for (const Ec2AvailabilityZone& z : inputs_->zones) {
    if (z.zone_name == zone) return z.zone_id;
  }
  return "";
}

absl::StatusOr<cp::Catalog> AwsCloudProvider::BaseCatalog() {
  RETURN_IF_ERROR(RefreshCatalog());
  absl::MutexLock lock(&mu_);
  return *catalog_;
}

absl::flat_hash_map<std::string, bool> AwsCloudProvider::PublicIpSubnets(
    const std::vector<std::string>& ids) {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&subnets_mu_);
  bool known = true;
  for (const std::string& id : ids) known = known && subnet_public_.contains(id);
  // Stale after the TTL; a subnet not seen yet is looked up at most once a minute.
  const absl::Duration since = now - subnets_described_;
  if (!ids.empty() && (since >= kSubnetFlagsTtl || (!known && since >= absl::Minutes(1)))) {
    subnets_described_ = now;
    absl::StatusOr<std::vector<Ec2Subnet>> subnets = ec2_.DescribeSubnets({}, ids);
    if (subnets.ok()) {
      for (const Ec2Subnet& s : *subnets) subnet_public_[s.subnet_id] = s.map_public_ip_on_launch;
    } else {
      log::Error("aws.cloudprovider",
                 "describing the subnets failed: node prices count no public IPv4 address for "
                 "subnets not described before",
                 {{"error", std::string(subnets.status().message())}});
    }
  }
  absl::flat_hash_map<std::string, bool> out;
  for (const std::string& id : ids) {
    auto it = subnet_public_.find(id);
    out[id] = it != subnet_public_.end() && it->second;
  }
  return out;
}

std::map<std::string, double> AwsCloudProvider::NodePrices(const awsv1::EC2NodeClass& nc) {
  std::map<std::string, bool> public_by_zone;  // any subnet of the zone gives one
  if (nc.spec.associate_public_ip_address.has_value()) {
    for (const awsv1::Subnet& s : nc.status.subnets) {
      public_by_zone[s.zone] = *nc.spec.associate_public_ip_address;
    }
  } else {
    std::vector<std::string> ids;
    ids.reserve(nc.status.subnets.size());
    for (const awsv1::Subnet& s : nc.status.subnets) ids.push_back(s.id);
    const absl::flat_hash_map<std::string, bool> flags = PublicIpSubnets(ids);
    for (const awsv1::Subnet& s : nc.status.subnets) {
      public_by_zone[s.zone] = public_by_zone[s.zone] || flags.at(s.id);
    }
  }
  std::map<std::string, double> out;
  for (const auto& [zone, gives_ip] : public_by_zone) {
    out[zone] = cp::NodePricePerHour(nc.spec, options_.catalog.region, gives_ip);
  }
  return out;
}

cp::Catalog AwsCloudProvider::FilterCatalog(const cp::Catalog& base, const awsv1::EC2NodeClass& nc,
                                            const std::map<std::string, double>& node_prices) {
  std::set<std::string> zones;
  for (const awsv1::Subnet& s : nc.status.subnets) zones.insert(s.zone);
  std::vector<cp::InstanceTypePtr> types;
  types.reserve(base.size());
  for (const cp::InstanceTypePtr& type : base) {
    std::vector<cp::Offering> offerings = type->offerings().list();
    bool touched = false;
    for (cp::Offering& o : offerings) {
      if (auto price = node_prices.find(o.zone);
          price != node_prices.end() && price->second != o.node_price) {
        o.node_price = price->second;
        touched = true;
      }
      if (!o.available) continue;
      if (!zones.contains(o.zone) ||
          unavailable_.IsUnavailable(o.capacity_type, type->name(), o.zone)) {
        o.available = false;
        touched = true;
      }
    }
    // The type's zone (and zone-id) requirement narrowed to the node class's zones, so that
    // topology decisions never count a zone the node class cannot launch into.
    const scheduling::Requirement* zone_req = type->requirements().Find(v1::kLabelTopologyZone);
    if (zone_req != nullptr && !zone_req->complement()) {
      std::vector<std::string> kept;
      for (const std::string& z : zone_req->values()) {
        if (zones.contains(z)) kept.push_back(z);
      }
      if (kept.size() != zone_req->values().size()) {
        std::set<std::string> kept_ids;
        for (const cp::Offering& o : offerings) {
          if (!zones.contains(o.zone)) continue;
          if (const scheduling::Requirement* id = o.requirements.Find(v1::kLabelTopologyZoneId);
              id != nullptr && !id->complement()) {
            kept_ids.insert(id->values().begin(), id->values().end());
          }
        }
        Requirements requirements = type->requirements();
        requirements.Remove(v1::kLabelTopologyZone);
        requirements.Add(scheduling::Requirement::In(std::string(v1::kLabelTopologyZone), kept));
        if (requirements.Has(v1::kLabelTopologyZoneId)) {
          requirements.Remove(v1::kLabelTopologyZoneId);
          requirements.Add(scheduling::Requirement::In(
              std::string(v1::kLabelTopologyZoneId),
              std::vector<std::string>(kept_ids.begin(), kept_ids.end())));
        }
        types.push_back(std::make_shared<const cp::InstanceType>(
            type->name(), std::move(requirements), cp::Offerings(std::move(offerings)),
            type->capacity(), type->overhead()));
        continue;
      }
    }
    types.push_back(touched ? type->WithOfferings(cp::Offerings(std::move(offerings))) : type);
  }
  return cp::Catalog::Create(std::move(types)).value();
}

absl::StatusOr<cp::Catalog> AwsCloudProvider::GetInstanceTypes(const v1::NodePool& node_pool) {
  const auto& ref = node_pool.spec.template_.spec.node_class_ref;
  if (!ref.has_value()) {
    return cp::NodeClassNotReadyError(
        Cat("NodePool ", node_pool.metadata.name, " has no nodeClassRef"));
  }
  ASSIGN_OR_RETURN(const awsv1::EC2NodeClass nc, ReadyNodeClass(ref->name));
  return CatalogFor(nc);
}

absl::StatusOr<cp::Catalog> AwsCloudProvider::CatalogFor(const awsv1::EC2NodeClass& nc) {
  RETURN_IF_ERROR(RefreshCatalog());
  // The class's block devices, AMI family and kubelet settings shape capacity and overhead
  // (aws_node_class_capacity.h); a class that changes nothing uses the base catalog.
  absl::StatusOr<cp::CapacityOptions> shape =
      cp::NodeClassCapacity(nc.spec, options_.catalog.capacity);
  if (!shape.ok()) {
    return cp::NodeClassNotReadyError(
        Cat("EC2NodeClass ", nc.metadata.name, ": ", shape.status().message()));
  }
  std::set<std::string> zone_set;
  for (const awsv1::Subnet& s : nc.status.subnets) zone_set.insert(s.zone);
  const std::string zones = absl::StrJoin(zone_set, ",");
  const std::map<std::string, double> node_prices = NodePrices(nc);
  const uint64_t ice_seq = unavailable_.SeqNum();
  uint64_t generation = 0;
  {
    absl::MutexLock lock(&mu_);
    generation = catalog_generation_;
  }
  {
    absl::MutexLock lock(&filtered_mu_);
    auto it = filtered_.find(nc.metadata.name);
    if (it != filtered_.end() && it->second.generation == generation &&
        it->second.ice_seq == ice_seq && it->second.zones == zones &&
        it->second.node_prices == node_prices && it->second.shape == *shape) {
      return it->second.catalog;
    }
  }
  cp::Catalog base;
  {
    absl::MutexLock lock(&mu_);
    generation = catalog_generation_;
    if (*shape == options_.catalog.capacity) {
      base = *catalog_;
    } else {
      ApiCatalogOptions opts = options_.catalog;
      opts.capacity = *shape;
      if (!on_demand_rows_.empty()) opts.static_files.on_demand_prices = on_demand_rows_;
      ASSIGN_OR_RETURN(base, BuildApiCatalog(*inputs_, opts));
    }
  }
  cp::Catalog filtered = FilterCatalog(base, nc, node_prices);
  absl::MutexLock lock(&filtered_mu_);
  filtered_[nc.metadata.name] = {generation, ice_seq, zones, node_prices, *shape, filtered};
  return filtered;
}

// ---- node class ----

absl::StatusOr<awsv1::EC2NodeClass> AwsCloudProvider::ReadyNodeClass(std::string_view name) {
  absl::StatusOr<awsv1::EC2NodeClass> nc = get_node_class_(name);
  if (!nc.ok()) {
    if (absl::IsNotFound(nc.status())) {
      return cp::NodeClassNotReadyError(Cat("EC2NodeClass ", name, " not found"));
    }
    return nc.status();
  }
  if (nc->metadata.deletion_timestamp.has_value()) {
    return cp::NodeClassNotReadyError(Cat("EC2NodeClass ", name, " is being deleted"));
  }
  const core::Condition* ready = v1::FindCondition(nc->status.conditions, "Ready");
  if (ready == nullptr || ready->status == core::ConditionStatus::kFalse) {
    return cp::NodeClassNotReadyError(
        Cat("EC2NodeClass ", name, " is not ready",
            ready == nullptr ? std::string() : Cat(": ", ready->reason, " ", ready->message)));
  }
  if (ready->status == core::ConditionStatus::kUnknown) {
    return cp::CreateError("NodeClassReadinessUnknown",
                           Cat("EC2NodeClass ", name, " readiness is unknown"));
  }
  if (ready->observed_generation != 0 && ready->observed_generation != nc->metadata.generation) {
    return cp::NodeClassNotReadyError(
        Cat("EC2NodeClass ", name, " status is stale (observedGeneration ",
            ready->observed_generation, ", generation ", nc->metadata.generation, ")"));
  }
  return nc;
}

// ---- instances ----

absl::StatusOr<std::vector<Ec2Instance>> AwsCloudProvider::DescribeInstances(
    const QueryParams& params) {
  std::vector<Ec2Instance> out;
  std::string token;
  for (int pages = 0; pages < 10'000; ++pages) {
    QueryParams p = params;
    if (!token.empty()) p.emplace_back("NextToken", token);
    ASSIGN_OR_RETURN(auto doc, ec2_.Query("DescribeInstances", p));
    const pugi::xml_node root = doc->document_element();
    for (Ec2Instance& i : ParseDescribeInstances(root)) out.push_back(std::move(i));
    const std::string next = Text(root, "nextToken");
    if (next.empty() || next == token) break;
    token = next;
  }
  return out;
}

bool AwsCloudProvider::Owned(const Ec2Instance& i) const {
  auto cluster = i.tags.find(Cat(v1::kTagClusterPrefix, options_.cluster_name));
  return cluster != i.tags.end() && cluster->second == "owned" &&
         i.tags.contains(std::string(v1::kTagNodePool));
}

absl::StatusOr<Ec2Instance> AwsCloudProvider::OwnedInstance(std::string_view provider_id) {
  ASSIGN_OR_RETURN(const std::string id, InstanceIdFromProviderId(provider_id));
  QueryParams params;
  AddList(params, "InstanceId", {id});
  absl::StatusOr<std::vector<Ec2Instance>> found = DescribeInstances(params);
  if (!found.ok()) {
    if (absl::IsNotFound(found.status())) {
      return cp::NodeClaimNotFoundError(Cat("instance ", id, " not found"));
    }
    return found.status();
  }
  for (const Ec2Instance& i : *found) {
    if (i.instance_id != id) continue;
    if (!Owned(i)) {
      return cp::NodeClaimNotFoundError(
          Cat("instance ", id, " is not owned by cluster ", options_.cluster_name));
    }
    if (IsGone(i.state)) return cp::NodeClaimNotFoundError(Cat("instance ", id, " is ", i.state));
    return i;
  }
  return cp::NodeClaimNotFoundError(Cat("instance ", id, " not found"));
}

v1::NodeClaim AwsCloudProvider::ToNodeClaim(const Ec2Instance& i,
                                            const cp::Catalog* catalog) const {
  v1::NodeClaim claim;
  claim.api_version = std::string(v1::kApiVersion);
  claim.kind = std::string(v1::kNodeClaimKind);
  if (auto it = i.tags.find(std::string(v1::kTagNodeClaim)); it != i.tags.end()) {
    claim.metadata.name = it->second;
  }
  if (auto it = i.tags.find(std::string(kTagNodeClaimUid)); it != i.tags.end()) {
    claim.metadata.uid = it->second;
  }
  auto& labels = claim.metadata.labels;
  const std::string capacity_type = i.lifecycle == "spot" ? std::string(v1::kCapacityTypeSpot)
                                                          : std::string(v1::kCapacityTypeOnDemand);
  if (catalog != nullptr) {
    if (const cp::InstanceType* type = catalog->Find(i.instance_type); type != nullptr) {
      for (const auto& [k, v] : type->requirements().SingleValuedLabels()) labels[k] = v;
      for (const cp::Offering& o : type->offerings()) {
        if (o.zone == i.zone && o.capacity_type == capacity_type) {
          for (const auto& [k, v] : o.requirements.SingleValuedLabels()) labels[k] = v;
        }
      }
      claim.status.capacity = type->capacity();
      claim.status.allocatable = type->Allocatable();
    }
  }
  labels[std::string(v1::kLabelInstanceType)] = i.instance_type;
  labels[std::string(v1::kLabelTopologyZone)] = i.zone;
  labels[std::string(v1::kCapacityTypeLabelKey)] = capacity_type;
  if (auto it = i.tags.find(std::string(v1::kTagNodePool)); it != i.tags.end()) {
    labels[std::string(v1::kNodePoolLabelKey)] = it->second;
  }
  if (auto it = i.tags.find(std::string(v1::kTagNodeClass)); it != i.tags.end()) {
    labels[std::string(v1::kLabelNodeClass)] = it->second;
  }
  claim.metadata.creation_timestamp = i.launch_time;
  claim.status.provider_id = Cat(kProviderIdPrefix, i.zone, "/", i.instance_id);
  claim.status.image_id = i.image_id;
  return claim;
}

absl::StatusOr<v1::NodeClaim> AwsCloudProvider::Get(std::string_view provider_id) {
  ASSIGN_OR_RETURN(const Ec2Instance i, OwnedInstance(provider_id));
  std::optional<cp::Catalog> catalog;
  if (absl::StatusOr<cp::Catalog> c = BaseCatalog(); c.ok()) catalog = *std::move(c);
  return ToNodeClaim(i, catalog.has_value() ? &*catalog : nullptr);
}

absl::StatusOr<std::vector<v1::NodeClaim>> AwsCloudProvider::List() {
  QueryParams params;
  AddFilters(params, {{"tag:" + Cat(v1::kTagClusterPrefix, options_.cluster_name), {"owned"}},
                      {"tag-key", {std::string(v1::kTagNodePool)}},
                      {"instance-state-name", {"pending", "running", "stopping", "stopped"}}});
  ASSIGN_OR_RETURN(const std::vector<Ec2Instance> found, DescribeInstances(params));
  std::optional<cp::Catalog> catalog;
  if (absl::StatusOr<cp::Catalog> c = BaseCatalog(); c.ok()) catalog = *std::move(c);
  std::vector<v1::NodeClaim> out;
  for (const Ec2Instance& i : found) {
    if (!Owned(i) || IsGone(i.state)) continue;  // the filters again, never trusted alone
    out.push_back(ToNodeClaim(i, catalog.has_value() ? &*catalog : nullptr));
  }
  std::sort(out.begin(), out.end(), [](const v1::NodeClaim& a, const v1::NodeClaim& b) {
    return a.status.provider_id < b.status.provider_id;
  });
  return out;
}

absl::Status AwsCloudProvider::Delete(const v1::NodeClaim& node_claim) {
  if (node_claim.status.provider_id.empty()) {
    return cp::NodeClaimNotFoundError(
        Cat("NodeClaim ", node_claim.metadata.name, " was never launched"));
  }
  ASSIGN_OR_RETURN(const Ec2Instance i, OwnedInstance(node_claim.status.provider_id));
  QueryParams params;
  AddList(params, "InstanceId", {i.instance_id});
  absl::StatusOr<std::unique_ptr<pugi::xml_document>> done =
      ec2_.Query("TerminateInstances", params);
  if (!done.ok()) {
    if (const Metrics m = CurrentMetrics(); m.termination_failures != nullptr) {
      m.termination_failures->Inc({i.zone, i.zone_id.empty() ? ZoneIdOf(i.zone) : i.zone_id});
    }
    if (absl::IsNotFound(done.status())) {
      return cp::NodeClaimNotFoundError(Cat("instance ", i.instance_id, " not found"));
    }
    return done.status();
  }
  return absl::OkStatus();  // termination requested; NotFound once it is shutting down
}

absl::StatusOr<std::string> AwsCloudProvider::IsDrifted(const v1::NodeClaim& node_claim) {
  if (!node_claim.spec.node_class_ref.has_value()) return std::string();
  absl::StatusOr<awsv1::EC2NodeClass> nc = get_node_class_(node_claim.spec.node_class_ref->name);
  if (!nc.ok()) {
    if (absl::IsNotFound(nc.status())) return std::string();  // not resolvable: no verdict
    return nc.status();
  }
  if (std::string s = StaticDrift(*nc, node_claim); !s.empty()) return s;
  ASSIGN_OR_RETURN(const Ec2Instance i, OwnedInstance(node_claim.status.provider_id));
  std::optional<cp::Catalog> catalog;
  if (absl::StatusOr<cp::Catalog> c = BaseCatalog(); c.ok()) catalog = *std::move(c);
  const cp::InstanceType* type = catalog.has_value() ? catalog->Find(i.instance_type) : nullptr;
  return DriftReason(*nc, node_claim,
                     {.image_id = i.image_id,
                      .subnet_id = i.subnet_id,
                      .security_group_ids = i.security_group_ids,
                      .capacity_reservation_id = i.capacity_reservation_id},
                     type);
}

std::vector<cp::RepairPolicy> AwsCloudProvider::RepairPolicies() const {
  using core::ConditionStatus;
  return {
      {"Ready", ConditionStatus::kFalse, absl::Minutes(30)},
      {"Ready", ConditionStatus::kUnknown, absl::Minutes(30)},
      {"AcceleratedHardwareReady", ConditionStatus::kFalse, absl::Minutes(10)},
      {"StorageReady", ConditionStatus::kFalse, absl::Minutes(30)},
      {"NetworkingReady", ConditionStatus::kFalse, absl::Minutes(30)},
      {"KernelReady", ConditionStatus::kFalse, absl::Minutes(30)},
      {"ContainerRuntimeReady", ConditionStatus::kFalse, absl::Minutes(30)},
  };
}

// ---- launch ----

absl::Status AwsCloudProvider::EnsureLaunchTemplate(const std::string& name,
                                                    const LaunchTemplateSpec& spec) {
  {
    absl::MutexLock lock(&templates_mu_);
    if (known_templates_.contains(name)) return absl::OkStatus();
  }
  QueryParams describe;
  AddList(describe, "LaunchTemplateName", {name});
  absl::StatusOr<std::unique_ptr<pugi::xml_document>> found =
      ec2_.Query("DescribeLaunchTemplates", describe);
  bool exists = false;
  if (found.ok()) {
    // Match the name: a server that ignores the name list answers with every template.
    for (pugi::xml_node item :
         (*found)->document_element().child("launchTemplates").children("item")) {
      if (Text(item, "launchTemplateName") == name) exists = true;
    }
  } else if (!absl::IsNotFound(found.status())) {
    return found.status();
  }
  if (!exists) {
    absl::StatusOr<std::unique_ptr<pugi::xml_document>> created =
        ec2_.Query("CreateLaunchTemplate", CreateLaunchTemplateParams(name, spec));
    if (!created.ok() &&
        AwsErrorCode(created.status()) != "InvalidLaunchTemplateName.AlreadyExistsException") {
      return created.status();
    }
  }
  absl::MutexLock lock(&templates_mu_);
  known_templates_.insert(name);
  return absl::OkStatus();
}

namespace {

// The tags of a launch: the instance's (ownership tags with the NodeClaim's name and UID over
// the node class's spec.tags) and its launch templates' (without the per-NodeClaim ones, so
// NodeClaims share a template).
struct LaunchTagSet {
  std::map<std::string, std::string> instance;
  std::map<std::string, std::string> launch_template;
};

// The AMI of each candidate type and the candidates grouped by AMI; types without an image
// cannot launch and are left out.
struct LaunchImages {
  std::map<std::string, std::string> per_type;
  std::map<std::string, std::vector<LaunchCandidate>> candidates_per_image;
};

// The launch templates of one launch (name and content) and the fleet request over them, before
// its client token.
struct FleetLaunch {
  std::vector<std::pair<std::string, LaunchTemplateSpec>> templates;
  FleetRequest request;
};

// Errors: CreateError InvalidTags for restricted spec.tags.
absl::StatusOr<LaunchTagSet> TagsFor(std::string_view cluster_name, const v1::NodeClaim& node_claim,
                                     const awsv1::EC2NodeClass& nc) {
  const std::map<std::string, std::string> user_tags(nc.spec.tags.begin(), nc.spec.tags.end());
  if (absl::Status s = ValidateUserTags(user_tags); !s.ok()) {
    return cp::CreateError("InvalidTags", AsStd(s.message()));
  }
  std::string node_pool;
  if (auto it = node_claim.metadata.labels.find(std::string(v1::kNodePoolLabelKey));
      it != node_claim.metadata.labels.end()) {
    node_pool = it->second;
  }
  return LaunchTagSet{
      .instance = LaunchTags(user_tags, cluster_name, node_pool, node_claim.metadata.name,
                             node_claim.metadata.uid, nc.metadata.name),
      .launch_template = LaunchTags(user_tags, cluster_name, node_pool, "", "", nc.metadata.name),
  };
}

// `node_claim` as launched on `machine` (ToNodeClaim of its instance): the machine's labels,
// provider id, capacity and image (`image_id` when set), and the node class's hash and instance
// profile annotations.
v1::NodeClaim LaunchedNodeClaim(const v1::NodeClaim& node_claim, const awsv1::EC2NodeClass& nc,
                                const v1::NodeClaim& machine, const std::string& image_id) {
  v1::NodeClaim out = node_claim;
  for (const auto& [k, v] : machine.metadata.labels) out.metadata.labels[k] = v;
  out.status.provider_id = machine.status.provider_id;
  out.status.capacity = machine.status.capacity;
  out.status.allocatable = machine.status.allocatable;
  out.status.image_id = image_id.empty() ? machine.status.image_id : image_id;
  for (std::string_view key :
       {v1::kEC2NodeClassHashAnnotationKey, v1::kEC2NodeClassHashVersionAnnotationKey}) {
    if (auto it = nc.metadata.annotations.find(std::string(key));
        it != nc.metadata.annotations.end()) {
      out.metadata.annotations[std::string(key)] = it->second;
    }
  }
  if (!nc.status.instance_profile.empty()) {
    out.metadata.annotations[std::string(v1::kInstanceProfileNameAnnotationKey)] =
        nc.status.instance_profile;
  }
  return out;
}

// PlanLaunch over the zones of the node class's subnets. Errors: CreateError NoSubnets without
// subnets; PlanLaunch's.
absl::StatusOr<LaunchPlan> PlanOverSubnets(const cp::Catalog& catalog,
                                           const v1::NodeClaim& node_claim,
                                           const awsv1::EC2NodeClass& nc,
                                           const UnavailableOfferings* unavailable) {
  std::vector<std::string> zones;
  for (const awsv1::Subnet& s : nc.status.subnets) zones.push_back(s.zone);
  if (zones.empty()) {
    return cp::CreateError("NoSubnets", Cat("EC2NodeClass ", nc.metadata.name, " has no subnets"));
  }
  return PlanLaunch(catalog, node_claim, zones, unavailable);
}

// Errors: CreateError NoCompatibleAMI when no candidate has an image.
absl::StatusOr<LaunchImages> ImagesFor(const awsv1::EC2NodeClass& nc, const LaunchPlan& plan) {
  LaunchImages images;
  for (const LaunchCandidate& c : plan.candidates) {
    const std::string image = ImageFor(nc, *c.instance_type);
    if (image.empty()) continue;
    images.per_type[c.instance_type->name()] = image;
    images.candidates_per_image[image].push_back(c);
  }
  if (images.candidates_per_image.empty()) {
    return cp::CreateError("NoCompatibleAMI",
                           Cat("EC2NodeClass ", nc.metadata.name,
                               " lists no AMI compatible with the candidate instance types"));
  }
  return images;
}

// Free IPs per subnet of the node class, for the subnet choice; empty when EC2 does not answer
// (best effort: the status order then decides).
std::map<std::string, int64_t> FreeIpsPerSubnet(Ec2Client& ec2, const awsv1::EC2NodeClass& nc) {
  std::map<std::string, int64_t> free_ips;
  std::vector<std::string> ids;
  for (const awsv1::Subnet& s : nc.status.subnets) ids.push_back(s.id);
  if (absl::StatusOr<std::vector<Ec2Subnet>> subnets = ec2.DescribeSubnets({}, ids); subnets.ok()) {
    for (const Ec2Subnet& s : *subnets) free_ips[s.subnet_id] = s.available_ip_address_count;
  }
  return free_ips;
}

awsv1::AMIFamily FamilyOf(const awsv1::EC2NodeClass& nc) {
  return awsv1::EffectiveAMIFamily(nc.spec).value_or(awsv1::AMIFamily::kCustom);
}

// The bootstrap inputs shared by every template of a launch: the cluster, the NodeClaim's labels
// and single-valued requirements, the capacity type, its taints plus the unregistered taint, and
// the node class's kubelet, instance store policy and user data.
BootstrapInputs BootstrapInputsFor(const AwsCloudProvider::Options& options,
                                   const v1::NodeClaim& node_claim, const awsv1::EC2NodeClass& nc,
                                   awsv1::AMIFamily family, const std::string& capacity_type) {
  BootstrapInputs boot;
  boot.cluster_name = options.cluster_name;
  boot.cluster_endpoint = options.cluster_endpoint;
  boot.ca_bundle = options.cluster_ca_bundle;
  boot.cluster_cidr = options.cluster_cidr;
  boot.cluster_dns_ip = options.cluster_dns_ip;
  for (const auto& [k, v] : node_claim.metadata.labels) boot.labels[k] = v;
  if (absl::StatusOr<Requirements> r =
          Requirements::FromNodeSelectorRequirements(node_claim.spec.requirements);
      r.ok()) {
    for (const auto& [k, v] : r->SingleValuedLabels()) boot.labels[k] = v;
  }
  boot.labels[std::string(v1::kCapacityTypeLabelKey)] = capacity_type;
  if (family != awsv1::AMIFamily::kCustom) {
    boot.labels[std::string(v1::kNodeDoNotSyncTaintsLabelKey)] = "true";
  }
  boot.taints = node_claim.spec.taints;
  for (const core::Taint& t : node_claim.spec.startup_taints) boot.taints.push_back(t);
  boot.taints.push_back(
      {.key = std::string(v1::kUnregisteredTaintKey), .effect = core::TaintEffect::kNoExecute});
  boot.kubelet = nc.spec.kubelet;
  if (nc.spec.kubelet.has_value() && nc.spec.kubelet->max_pods.has_value()) {
    boot.max_pods = *nc.spec.kubelet->max_pods;
  }
  boot.raid0 = nc.spec.instance_store_policy.has_value();
  boot.user_data = nc.spec.user_data;
  return boot;
}

// One launch template per AMI and the fleet request over them: overrides type x zone per
// template (templates without an override add no config), the instance tags, the node class's
// context. The client token is left empty.
FleetLaunch PlanFleet(const awsv1::EC2NodeClass& nc, const LaunchPlan& plan,
                      const LaunchImages& images,
                      const std::map<std::string, std::string>& subnet_per_zone,
                      const std::string& user_data, const LaunchTagSet& tags) {
  FleetLaunch launch;
  launch.request.capacity_type = plan.capacity_type;
  launch.request.tags = tags.instance;
  launch.request.context = nc.spec.context;
  std::vector<std::string> sgs;
  for (const awsv1::SecurityGroup& sg : nc.status.security_groups) sgs.push_back(sg.id);
  std::sort(sgs.begin(), sgs.end());
  for (const auto& [image, candidates] : images.candidates_per_image) {
    LaunchTemplateSpec spec;
    spec.image_id = image;
    spec.user_data = user_data;
    spec.block_device_mappings = BlockDeviceMappingsFor(FamilyOf(nc), nc.spec);
    spec.metadata_options = MetadataOptionsFor(nc.spec);
    spec.security_group_ids = sgs;
    spec.instance_profile = nc.status.instance_profile;
    spec.detailed_monitoring = nc.spec.detailed_monitoring.value_or(false);
    spec.associate_public_ip_address = nc.spec.associate_public_ip_address;
    spec.tags = tags.launch_template;
    const std::string name = LaunchTemplateName(spec);
    launch.templates.emplace_back(name, std::move(spec));
    FleetLaunchTemplateConfig config;
    config.launch_template_name = name;
    config.overrides = BuildOverrides(candidates, subnet_per_zone, images.per_type);
    if (!config.overrides.empty()) launch.request.configs.push_back(std::move(config));
  }
  return launch;
}

}  // namespace

absl::Status AwsCloudProvider::EnsureLaunchTemplates(
    const std::vector<std::pair<std::string, LaunchTemplateSpec>>& templates) {
  for (const auto& [name, spec] : templates) RETURN_IF_ERROR(EnsureLaunchTemplate(name, spec));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Ec2Instance>> AwsCloudProvider::AlreadyLaunched(
    const v1::NodeClaim& node_claim) {
  QueryParams params;
  AddFilters(params, {{"tag:" + Cat(v1::kTagClusterPrefix, options_.cluster_name), {"owned"}},
                      {"tag:" + std::string(v1::kTagNodeClaim), {node_claim.metadata.name}},
                      {"instance-state-name", {"pending", "running"}}});
  ASSIGN_OR_RETURN(const std::vector<Ec2Instance> existing, DescribeInstances(params));
  for (const Ec2Instance& i : existing) {
    if (!Owned(i) || IsGone(i.state)) continue;
    const auto uid = i.tags.find(std::string(kTagNodeClaimUid));
    if (uid != i.tags.end() && uid->second != node_claim.metadata.uid) continue;
    return i;
  }
  return std::nullopt;
}

absl::StatusOr<std::string> AwsCloudProvider::UserDataFor(const v1::NodeClaim& node_claim,
                                                          const awsv1::EC2NodeClass& nc,
                                                          const std::string& capacity_type) {
  const awsv1::AMIFamily family = FamilyOf(nc);
  if (family == awsv1::AMIFamily::kAL2023 && options_.cluster_cidr.empty()) {
    // nodeadm needs the service CIDR; without it the node could not join.
    return cp::NodeClassNotReadyError(
        Cat("EC2NodeClass ", nc.metadata.name, " uses AL2023 but the cluster CIDR is unknown"));
  }
  absl::StatusOr<std::string> user_data =
      GenerateUserData(family, BootstrapInputsFor(options_, node_claim, nc, family, capacity_type));
  if (!user_data.ok()) {
    return cp::CreateError("InvalidUserData",
                           Cat("EC2NodeClass ", nc.metadata.name, " (", FamilyName(family),
                               "): ", AsStd(user_data.status().message())));
  }
  if (const Metrics m = CurrentMetrics(); m.user_data_bytes != nullptr) {
    m.user_data_bytes->Set({nc.metadata.name}, static_cast<double>(user_data->size()));
  }
  if (user_data->size() > kMaxUserDataBytes) {
    return cp::CreateError("UserDataSizeLimitExceeded",
                           Cat("EC2NodeClass ", nc.metadata.name, ": user data of ",
                               user_data->size(), " bytes exceeds EC2's ", kMaxUserDataBytes));
  }
  return user_data;
}

absl::StatusOr<FleetResult> AwsCloudProvider::CreateFleet(
    const FleetRequest& request,
    const std::vector<std::pair<std::string, LaunchTemplateSpec>>& templates,
    std::string_view node_claim_name) {
  absl::StatusOr<std::unique_ptr<pugi::xml_document>> response =
      ec2_.Query("CreateFleet", CreateFleetParams(request));
  if (!response.ok() && IsLaunchTemplateNotFound(response.status())) {
    // A template deleted behind our back: forget what we know, ensure them again, retry once.
    {
      absl::MutexLock lock(&templates_mu_);
      known_templates_.clear();
    }
    RETURN_IF_ERROR(EnsureLaunchTemplates(templates));
    response = ec2_.Query("CreateFleet", CreateFleetParams(request));
  }
  if (!response.ok()) {
    if (AwsErrorCode(response.status()) == "IdempotentParameterMismatch") {
      // Transient: the next attempt looks for an instance launched with this token by its tag
      // (step 2) before it launches anything.
      return absl::UnavailableError(Cat(
          "CreateFleet for NodeClaim ", node_claim_name, ": IdempotentParameterMismatch: token ",
          request.client_token, " was used with other parameters; the launch is retried"));
    }
    if (absl::IsResourceExhausted(response.status())) {
      return cp::InsufficientCapacityError(AsStd(response.status().message()));
    }
    return response.status();
  }
  return ParseCreateFleetResponse((*response)->document_element());
}

void AwsCloudProvider::RecordFleetErrors(const awsv1::EC2NodeClass& nc,
                                         const std::string& capacity_type,
                                         const std::vector<FleetError>& errors) {
  if (const Metrics m = CurrentMetrics(); m.launch_failures != nullptr) {
    for (const FleetError& e : errors) {
      std::string zone_id;  // the answer names the zone only: the subnet the launch used there
      for (const awsv1::Subnet& s : nc.status.subnets) {
        if (s.zone == e.zone) zone_id = s.zone_id;
      }
      m.launch_failures->Inc(
          {e.zone, zone_id, capacity_type, LaunchFailureReason(e.code, e.message)});
    }
  }
  MarkFleetErrors(errors, capacity_type, unavailable_);
}

absl::StatusOr<Ec2Instance> AwsCloudProvider::LaunchedInstance(
    const FleetInstance& fi, const std::map<std::string, std::string>& tags) {
  Ec2Instance instance;
  instance.instance_id = fi.instance_id;
  instance.instance_type = fi.instance_type;
  instance.zone = fi.zone;
  instance.subnet_id = fi.subnet_id;
  instance.lifecycle = fi.lifecycle == "spot" ? "spot" : "";
  instance.tags = tags;
  if (instance.zone.empty() || instance.instance_type.empty()) {
    // Fill what the fleet answer lacks from the instance itself.
    QueryParams params;
    AddList(params, "InstanceId", {fi.instance_id});
    ASSIGN_OR_RETURN(const std::vector<Ec2Instance> described, DescribeInstances(params));
    if (!described.empty()) {
      instance.zone = described.front().zone;
      instance.instance_type = described.front().instance_type;
      instance.subnet_id = described.front().subnet_id;
    }
  }
  return instance;
}

// The steps of the header's Create, one per numbered comment.
absl::StatusOr<v1::NodeClaim> AwsCloudProvider::Create(const v1::NodeClaim& node_claim) {
  // 1. The ready node class of the NodeClaim, the launch's tags and the class's catalog.
  if (!node_claim.spec.node_class_ref.has_value()) {
    return cp::NodeClassNotReadyError(
        Cat("NodeClaim ", node_claim.metadata.name, " has no nodeClassRef"));
  }
  ASSIGN_OR_RETURN(const awsv1::EC2NodeClass nc,
                   ReadyNodeClass(node_claim.spec.node_class_ref->name));
  ASSIGN_OR_RETURN(const LaunchTagSet tags, TagsFor(options_.cluster_name, node_claim, nc));
  ASSIGN_OR_RETURN(const cp::Catalog catalog, CatalogFor(nc));

  // 2. A machine already launched for this NodeClaim (a retry after a lost answer) is the launch:
  // one tagged with its name and its UID, or with its name and no UID (launched by a version that
  // did not tag UIDs). One tagged with another UID belongs to an earlier NodeClaim of that name.
  ASSIGN_OR_RETURN(const std::optional<Ec2Instance> existing, AlreadyLaunched(node_claim));
  if (existing.has_value()) {
    return LaunchedNodeClaim(node_claim, nc, ToNodeClaim(*existing, &catalog), existing->image_id);
  }

  // 3. The plan: candidate types and offerings, the AMI of each type, the subnet of each zone.
  ASSIGN_OR_RETURN(const LaunchPlan plan, PlanOverSubnets(catalog, node_claim, nc, &unavailable_));
  ASSIGN_OR_RETURN(const LaunchImages images, ImagesFor(nc, plan));
  const std::map<std::string, std::string> subnet_per_zone =
      SubnetPerZone(nc.status.subnets, FreeIpsPerSubnet(ec2_, nc));

  // 4. The user data, one launch template per AMI (ensured in EC2) and the fleet request.
  ASSIGN_OR_RETURN(const std::string user_data, UserDataFor(node_claim, nc, plan.capacity_type));
  FleetLaunch launch = PlanFleet(nc, plan, images, subnet_per_zone, user_data, tags);
  RETURN_IF_ERROR(EnsureLaunchTemplates(launch.templates));
  if (launch.request.configs.empty()) {
    return cp::InsufficientCapacityError(
        Cat("no offering of NodeClaim ", node_claim.metadata.name, " has a subnet"));
  }
  launch.request.client_token = FleetClientToken(node_claim.metadata.uid, launch.request);

  // 5. CreateFleet; its errors count as launch failures and mark the ICE cache.
  ASSIGN_OR_RETURN(const FleetResult result,
                   CreateFleet(launch.request, launch.templates, node_claim.metadata.name));
  RecordFleetErrors(nc, plan.capacity_type, result.errors);
  if (result.instances.empty()) return NoInstanceError(result.errors);

  // 6. The NodeClaim as launched on the fleet's instance.
  ASSIGN_OR_RETURN(const Ec2Instance instance,
                   LaunchedInstance(result.instances.front(), tags.instance));
  auto image = images.per_type.find(instance.instance_type);
  return LaunchedNodeClaim(node_claim, nc, ToNodeClaim(instance, &catalog),
                           image == images.per_type.end() ? "" : image->second);
}

}  // namespace dovetail::providers::aws
