// AwsCloudProvider: the CloudProvider on EC2 (docs/aws-provider.md). Launches with CreateFleet
// (type instant, one instance) through content-addressed launch templates, finds and terminates
// its instances by their ownership tags, serves the instance-type catalog from the EC2 API with
// on-demand (Pricing API, static fallback) and spot (DescribeSpotPriceHistory) prices, and
// answers drift against the EC2NodeClass status that the node class controller resolves.
//
// Create(NodeClaim):
//   1. the EC2NodeClass of spec.nodeClassRef (missing, Ready not True, or a stale
//      observedGeneration => NodeClassNotReady; restricted spec.tags => CreateError InvalidTags);
//   2. an instance already tagged karpenter.sh/nodeclaim=<name> for this cluster (pending or
//      running) is returned as the launch: a retried Create never launches a second machine,
//      also where CreateFleet's ClientToken is not honoured (moto);
//   3. PlanLaunch (fleet.h) over the catalog, the subnets' zones and the ICE cache;
//   4. one launch template per AMI (the newest listed AMI whose requirements fit the type; status
//      order among equals), named by its content and created when EC2 does not have it;
//   5. CreateFleet with ClientToken = NodeClaim UID + a digest of the request (fleet.h,
//      FleetClientToken: the same launch replays its token, a changed plan gets a new one),
//      overrides type x zone (subnet with the most free IPs per zone), ownership tags; capacity
//      errors mark the ICE cache; no instance => InsufficientCapacity (or CreateError for other
//      errors); IdempotentParameterMismatch is transient (the retry finds a launched instance by
//      its tag in step 2);
//   6. the NodeClaim as launched: providerID aws:///<zone>/<id>, labels (the type's single-valued
//      requirements, zone, zone-id, capacity type), capacity/allocatable, imageID, annotations
//      (ec2nodeclass-hash and version copied from the node class, instance-profile-name).
// Get/List/Delete only see instances tagged kubernetes.io/cluster/<cluster>=owned and
// karpenter.sh/nodepool; anything else is NotFound and never terminated. shutting-down and
// terminated instances are gone.
//
// The catalog is refreshed lazily on the injected Clock: instance types and zones every hour,
// spot prices every hour, on-demand prices every 12 hours; a failed refresh keeps the last good
// data (the first one fails the call).
//
// Metrics (upstream's names and labels; after ExportMetrics):
//   karpenter_cloudprovider_instance_launch_failures_total{zone,zone_id,capacity_type,reason}:
//     one per error in a CreateFleet answer (each failed override), zone_id from the node class's
//     subnet in that zone, reason per LaunchFailureReason (fleet.h);
//   karpenter_cloudprovider_instance_termination_failures_total{zone,zone_id}: TerminateInstances
//     calls that failed, zone_id from the instance's placement (else DescribeAvailabilityZones);
//   karpenter_cloudprovider_instance_type_cpu_cores{instance_type} and
//   karpenter_cloudprovider_instance_type_memory_bytes{instance_type}: DescribeInstanceTypes'
//     default vCPUs and memory (MiB x 2^20) of every supported type, replaced on every refresh
//     of the instance types (always on: one series per type);
//   karpenter_ec2nodeclasses_userdata_bytes{nodeclass} (metrics.h): set on every user data
//     rendering of a launch, the oversized ones included.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/cloudprovider/cloud_provider.h"
#include "dovetail/common/clock.h"
#include "dovetail/kube/client.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/providers/aws/api_catalog.h"
#include "dovetail/providers/aws/cloudprovider/drift.h"
#include "dovetail/providers/aws/cloudprovider/fleet.h"
#include "dovetail/providers/aws/cloudprovider/launch_template.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/pricing_client.h"
#include "dovetail/providers/aws/unavailable_offerings.h"

namespace dovetail::providers::aws {

inline constexpr std::string_view kProviderIdPrefix = "aws:///";

// Reads an EC2NodeClass by name. Errors: NotFound when it does not exist; anything else
// transient.
using NodeClassGetter =
    std::function<absl::StatusOr<apis::aws::v1::EC2NodeClass>(std::string_view name)>;

// Reads EC2NodeClasses from the API server. `client` must outlive the getter.
NodeClassGetter NodeClassGetterFromKube(kube::Client& client);

// aws:///<zone>/<instance id> => instance id. Errors: InvalidArgument.
absl::StatusOr<std::string> InstanceIdFromProviderId(std::string_view provider_id);

// One instance as DescribeInstances returns it.
struct Ec2Instance {
  std::string instance_id;
  std::string instance_type;
  std::string image_id;
  std::string state;  // pending, running, shutting-down, terminated, stopping, stopped
  std::string zone;
  std::string subnet_id;
  std::string lifecycle;  // "spot" or "" (on-demand)
  std::vector<std::string> security_group_ids;
  std::string zone_id;                  // placement's availabilityZoneId; "" when not returned
  std::string capacity_reservation_id;  // "" outside a capacity reservation
  std::optional<absl::Time> launch_time;
  Tags tags;
};
std::vector<Ec2Instance> ParseDescribeInstances(const pugi::xml_node& root);

class AwsCloudProvider final : public ::dovetail::cloudprovider::CloudProvider {
 public:
  struct Options {
    std::string cluster_name;
    std::string cluster_endpoint;
    std::string cluster_ca_bundle;  // base64
    std::string cluster_cidr;       // service CIDR; required for AL2023 (else NodeClassNotReady)
    std::string cluster_dns_ip;
    // region and the static files (on-demand fallback prices, rows the API lacks).
    ApiCatalogOptions catalog;
    absl::Duration instance_types_ttl = absl::Hours(1);
    absl::Duration spot_prices_ttl = absl::Hours(1);
    absl::Duration on_demand_prices_ttl = absl::Hours(12);
  };
  struct Dependencies {
    Ec2Client& ec2;
    PricingClient* pricing = nullptr;  // null: static on-demand prices only
    UnavailableOfferings& unavailable;
    const Clock& clock;
    NodeClassGetter get_node_class;
  };

  AwsCloudProvider(Dependencies deps, Options options);

  absl::StatusOr<apis::v1::NodeClaim> Create(const apis::v1::NodeClaim& node_claim) override;
  absl::Status Delete(const apis::v1::NodeClaim& node_claim) override;
  absl::StatusOr<apis::v1::NodeClaim> Get(std::string_view provider_id) override;
  absl::StatusOr<std::vector<apis::v1::NodeClaim>> List() override;
  absl::StatusOr<::dovetail::cloudprovider::Catalog> GetInstanceTypes(
      const apis::v1::NodePool& node_pool) override;
  absl::StatusOr<std::string> IsDrifted(const apis::v1::NodeClaim& node_claim) override;
  // Upstream's AWS list: Ready False/Unknown 30 min, AcceleratedHardwareReady False 10 min,
  // StorageReady/NetworkingReady/KernelReady/ContainerRuntimeReady False 30 min.
  std::vector<::dovetail::cloudprovider::RepairPolicy> RepairPolicies() const override;
  std::string_view Name() const override { return "aws"; }

  // Refreshes what is older than its TTL (or everything when `force`). Called lazily by Create
  // and GetInstanceTypes; may be called by a background loop.
  absl::Status RefreshCatalog(bool force = false);
  // The unfiltered catalog (after a refresh).
  absl::StatusOr<::dovetail::cloudprovider::Catalog> BaseCatalog();

  // Registers the metrics above in `registry` (which must outlive this object) and records them
  // from now on; the instance type gauges are filled at once from the last refresh, if any.
  void ExportMetrics(metrics::Registry& registry);

 private:
  absl::StatusOr<apis::aws::v1::EC2NodeClass> ReadyNodeClass(std::string_view name);
  // The offerings of `base` in the class's zones and not ICE'd, each with its zone's node price
  // (`node_prices`, NodePrices) as its node_price.
  ::dovetail::cloudprovider::Catalog FilterCatalog(
      const ::dovetail::cloudprovider::Catalog& base, const apis::aws::v1::EC2NodeClass& node_class,
      const std::map<std::string, double>& node_prices);
  // The base catalog filtered for `node_class` (cached, see filtered_).
  absl::StatusOr<::dovetail::cloudprovider::Catalog> CatalogFor(
      const apis::aws::v1::EC2NodeClass& node_class);
  absl::StatusOr<std::vector<Ec2Instance>> DescribeInstances(const QueryParams& params);
  absl::StatusOr<Ec2Instance> OwnedInstance(std::string_view provider_id);
  bool Owned(const Ec2Instance& instance) const;
  apis::v1::NodeClaim ToNodeClaim(const Ec2Instance& instance,
                                  const ::dovetail::cloudprovider::Catalog* catalog) const;
  absl::Status EnsureLaunchTemplate(const std::string& name, const LaunchTemplateSpec& spec);
  // EnsureLaunchTemplate for each (name, spec), in order; the first error stops.
  absl::Status EnsureLaunchTemplates(
      const std::vector<std::pair<std::string, LaunchTemplateSpec>>& templates);

  // The steps of Create that talk to EC2 or record metrics (see the header comment).
  // Step 2: the owned pending or running instance of this NodeClaim (its name, and its UID or
  // none); nullopt when there is none.
  absl::StatusOr<std::optional<Ec2Instance>> AlreadyLaunched(const apis::v1::NodeClaim& node_claim);
  // Step 4: the user data of the launch, its size recorded. Errors: NodeClassNotReady for AL2023
  // without the cluster CIDR; CreateError InvalidUserData or UserDataSizeLimitExceeded.
  absl::StatusOr<std::string> UserDataFor(const apis::v1::NodeClaim& node_claim,
                                          const apis::aws::v1::EC2NodeClass& node_class,
                                          const std::string& capacity_type);
  // Step 5: CreateFleet, once more after ensuring `templates` again when a template is missing.
  // Errors: Unavailable for IdempotentParameterMismatch, InsufficientCapacity for
  // ResourceExhausted, else EC2's.
  absl::StatusOr<FleetResult> CreateFleet(
      const FleetRequest& request,
      const std::vector<std::pair<std::string, LaunchTemplateSpec>>& templates,
      std::string_view node_claim_name);
  // Step 5: counts each fleet error as a launch failure and marks the ICE cache.
  void RecordFleetErrors(const apis::aws::v1::EC2NodeClass& node_class,
                         const std::string& capacity_type, const std::vector<FleetError>& errors);
  // Step 6: the fleet's instance with `tags`; zone, type and subnet from DescribeInstances when
  // the fleet answer lacks the zone or the type.
  absl::StatusOr<Ec2Instance> LaunchedInstance(const FleetInstance& instance,
                                               const std::map<std::string, std::string>& tags);
  // Replaces the instance type gauges with `inputs`' types (no-op before ExportMetrics).
  void RecordInstanceTypes(const ApiCatalogInputs& inputs);
  // The zone id of `zone` from the last DescribeAvailabilityZones; "" when unknown.
  std::string ZoneIdOf(const std::string& zone);

  struct Metrics {
    metrics::Counter* launch_failures = nullptr;
    metrics::Counter* termination_failures = nullptr;
    metrics::Gauge* cpu_cores = nullptr;
    metrics::Gauge* memory_bytes = nullptr;
    metrics::Gauge* user_data_bytes = nullptr;
  };
  Metrics CurrentMetrics();

  Ec2Client& ec2_;
  PricingClient* pricing_;
  UnavailableOfferings& unavailable_;
  const Clock& clock_;
  NodeClassGetter get_node_class_;
  const Options options_;

  absl::Mutex mu_;
  std::optional<ApiCatalogInputs> inputs_ ABSL_GUARDED_BY(mu_);
  std::vector<::dovetail::cloudprovider::OnDemandPriceRow> on_demand_rows_ ABSL_GUARDED_BY(mu_);
  absl::Time types_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time spot_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time on_demand_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::optional<::dovetail::cloudprovider::Catalog> catalog_ ABSL_GUARDED_BY(mu_);
  uint64_t catalog_generation_ ABSL_GUARDED_BY(mu_) = 0;  // bumped on every rebuild

  // The catalog of a node class (shaped by its block devices, AMI family and kubelet settings,
  // filtered to its zones), reused while the base catalog, the class's zones and shape and the
  // ICE cache are unchanged.
  struct Filtered {
    uint64_t generation = 0;
    uint64_t ice_seq = 0;
    std::string zones;
    std::map<std::string, double> node_prices;  // by zone
    ::dovetail::cloudprovider::CapacityOptions shape;
    ::dovetail::cloudprovider::Catalog catalog;
  };
  absl::Mutex filtered_mu_;
  std::map<std::string, Filtered> filtered_ ABSL_GUARDED_BY(filtered_mu_);

  // What a node of the class costs per hour beyond its instance, per zone of its subnets
  // (cloudprovider/aws_node_price.h): its volumes, and a public IPv4 address where the class's
  // associatePublicIPAddress, else the zone's subnet (mapPublicIpOnLaunch), gives one.
  std::map<std::string, double> NodePrices(const apis::aws::v1::EC2NodeClass& node_class);
  // mapPublicIpOnLaunch per subnet id, described again after kSubnetFlagsTtl (subnets rarely
  // change it). A subnet EC2 did not describe (yet) gives no public address.
  absl::flat_hash_map<std::string, bool> PublicIpSubnets(const std::vector<std::string>& ids);
  absl::Mutex subnets_mu_;
  absl::flat_hash_map<std::string, bool> subnet_public_ ABSL_GUARDED_BY(subnets_mu_);
  absl::Time subnets_described_ ABSL_GUARDED_BY(subnets_mu_) = absl::InfinitePast();
  static constexpr absl::Duration kSubnetFlagsTtl = absl::Minutes(10);

  absl::Mutex templates_mu_;
  std::set<std::string> known_templates_ ABSL_GUARDED_BY(templates_mu_);

  absl::Mutex metrics_mu_;  // taken after mu_ when both are held
  Metrics metrics_ ABSL_GUARDED_BY(metrics_mu_);
};

}  // namespace dovetail::providers::aws
