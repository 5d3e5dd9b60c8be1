// AwsCloudProvider against an in-process fake EC2 endpoint: what moto cannot do (per-offering
// CreateFleet errors, node class readiness variants) and the exact CreateFleet request.
#include "dovetail/providers/aws/cloudprovider/aws_cloud_provider.h"

#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/cloudprovider/errors.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/providers/aws/cloudprovider/fleet.h"
#include "dovetail/providers/aws/cloudprovider/offering_metrics.h"
#include "dovetail/providers/aws/served_client_test.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

namespace awsv1 = apis::aws::v1;
namespace core = apis::core;
namespace v1 = apis::v1;
namespace cp = ::dovetail::cloudprovider;

constexpr char kInstanceTypes[] = R"(<DescribeInstanceTypesResponse><instanceTypeSet>
<item><instanceType>m5.large</instanceType>
<supportedUsageClasses><item>on-demand</item><item>spot</item></supportedUsageClasses>
<supportedVirtualizationTypes><item>hvm</item></supportedVirtualizationTypes>
<hypervisor>nitro</hypervisor>
<processorInfo><supportedArchitectures><item>x86_64</item></supportedArchitectures>
<manufacturer>Intel</manufacturer></processorInfo>
<vCpuInfo><defaultVCpus>2</defaultVCpus></vCpuInfo><memoryInfo><sizeInMiB>8192</sizeInMiB></memoryInfo>
<networkInfo><maximumNetworkInterfaces>3</maximumNetworkInterfaces>
<ipv4AddressesPerInterface>10</ipv4AddressesPerInterface><defaultNetworkCardIndex>0</defaultNetworkCardIndex>
<networkCards><item><networkCardIndex>0</networkCardIndex><maximumNetworkInterfaces>3</maximumNetworkInterfaces></item></networkCards>
</networkInfo></item></instanceTypeSet></DescribeInstanceTypesResponse>)";

constexpr char kOfferings[] = R"(<R><instanceTypeOfferingSet>
<item><instanceType>m5.large</instanceType><locationType>availability-zone</locationType><location>us-east-1a</location></item>
<item><instanceType>m5.large</instanceType><locationType>availability-zone</locationType><location>us-east-1b</location></item>
</instanceTypeOfferingSet></R>)";

constexpr char kZones[] = R"(<R><availabilityZoneInfo>
<item><zoneName>us-east-1a</zoneName><zoneId>use1-az1</zoneId><zoneState>available</zoneState><zoneType>availability-zone</zoneType><regionName>us-east-1</regionName></item>
<item><zoneName>us-east-1b</zoneName><zoneId>use1-az2</zoneId><zoneState>available</zoneState><zoneType>availability-zone</zoneType><regionName>us-east-1</regionName></item>
</availabilityZoneInfo></R>)";

constexpr char kSpot[] = R"(<R><spotPriceHistorySet>
<item><instanceType>m5.large</instanceType><availabilityZone>us-east-1a</availabilityZone><productDescription>Linux/UNIX</productDescription><spotPrice>0.03</spotPrice><timestamp>2026-11-30T00:00:00.000Z</timestamp></item>
<item><instanceType>m5.large</instanceType><availabilityZone>us-east-1b</availabilityZone><productDescription>Linux/UNIX</productDescription><spotPrice>0.04</spotPrice><timestamp>2026-11-30T00:00:00.000Z</timestamp></item>
</spotPriceHistorySet></R>)";

class FakeEc2Test : public testing::QueryServerTest {
 protected:
  void Respond(Form& form, httplib::Response& res) override {
    const std::string& action = form["Action"];
    std::string xml = "<R/>";
    if (action == "DescribeInstanceTypes") {
      xml = kInstanceTypes;
    } else if (action == "DescribeInstanceTypeOfferings") {
      xml = kOfferings;
    } else if (action == "DescribeAvailabilityZones") {
      xml = kZones;
    } else if (action == "DescribeSpotPriceHistory") {
      xml = kSpot;
    } else if (action == "DescribeInstances") {
      xml = instances_xml_;
    } else if (action == "TerminateInstances" && terminate_fails_) {
      res.status = 400;
      xml =
          "<Response><Errors><Error><Code>UnauthorizedOperation</Code>"
          "<Message>no</Message></Error></Errors><RequestID>r</RequestID></Response>";
    } else if (action == "DescribeLaunchTemplates") {
      res.status = 400;
      xml =
          "<Response><Errors><Error><Code>InvalidLaunchTemplateName.NotFoundException</Code>"
          "<Message>no</Message></Error></Errors><RequestID>r</RequestID></Response>";
    } else if (action == "CreateFleet" && applies_fleets_) {
      xml = ApplyFleet(form, res);
    } else if (action == "CreateFleet" && !fleet_error_.empty()) {
      res.status = 400;
      xml = "<Response><Errors><Error><Code>" + fleet_error_ +
            "</Code><Message>Request token was used with other parameters</Message></Error>"
            "</Errors><RequestID>r</RequestID></Response>";
    } else if (action == "CreateFleet") {
      xml = fleet_response_;
    }
    res.set_content(xml, "text/xml");
  }

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(QueryServerTest::SetUp());
    client_ = std::make_unique<AwsClient>(
        Dependencies(),
        AwsClient::Options{
            .service = kEc2, .region = "us-east-1", .endpoint = server_.url(), .max_attempts = 1});
    ec2_ = std::make_unique<Ec2Client>(*client_);

    node_class_.metadata.name = "default";
    node_class_.metadata.generation = 2;
    node_class_.spec.ami_family = awsv1::AMIFamily::kAL2023;
    node_class_.status.subnets = {{"subnet-a", "us-east-1a", "use1-az1"},
                                  {"subnet-b", "us-east-1b", "use1-az2"}};
    node_class_.status.security_groups = {{"sg-1", "nodes"}};
    node_class_.status.amis = {{.id = "ami-1",
                                .requirements = {{.key = "kubernetes.io/arch",
                                                  .op = core::SelectorOperator::kIn,
                                                  .values = {"amd64"}}}}};
    node_class_.status.conditions = {
        {.type = "Ready", .status = core::ConditionStatus::kTrue, .observed_generation = 2}};

    AwsCloudProvider::Options options;
    options.cluster_name = "demo";
    options.cluster_cidr = "10.100.0.0/16";
    options.catalog.region = "us-east-1";
    auto files = cp::ReadCatalogDirectory(DOVETAIL_AWS_DATA_DIR);
    ASSERT_TRUE(files.ok()) << files.status();
    options.catalog.static_files = *std::move(files);
    provider_ = std::make_unique<AwsCloudProvider>(
        AwsCloudProvider::Dependencies{
            .ec2 = *ec2_,
            .unavailable = ice_,
            .clock = clock_,
            .get_node_class = [this](std::string_view) -> absl::StatusOr<awsv1::EC2NodeClass> {
              return node_class_;
            }},
        std::move(options));
  }

  // EC2's CreateFleet as it behaves with a ClientToken (Type instant): the first request with a
  // token launches one instance, of the first override's type in its zone and subnet; every later
  // request with that token returns the same fleet. `fleet_answers_`, while not empty, replaces
  // the answer to each request, after the fleet was applied, with an error (status, code): an
  // applied launch whose answer was lost, then throttling. Called with mu_ held.
  std::string ApplyFleet(Form& form, httplib::Response& res) {
    const std::string& token = form["ClientToken"];
    auto [fleet, fresh] = fleets_by_token_.try_emplace(token);
    if (fresh) {
      const std::string o = "LaunchTemplateConfigs.1.Overrides.1.";
      fleet->second =
          "<CreateFleetResponse><fleetId>fleet-" + std::to_string(fleets_by_token_.size()) +
          "</fleetId><fleetInstanceSet><item><launchTemplateAndOverrides><overrides>"
          "<instanceType>" +
          form[o + "InstanceType"] +
          "</instanceType>"
          "<availabilityZone>" +
          form[o + "AvailabilityZone"] + "</availabilityZone><subnetId>" + form[o + "SubnetId"] +
          "</subnetId></overrides></launchTemplateAndOverrides><lifecycle>" +
          form["TargetCapacitySpecification.DefaultTargetCapacityType"] +
          "</lifecycle><instanceIds><item>i-" + std::to_string(fleets_by_token_.size()) +
          "</item></instanceIds><instanceType>" + form[o + "InstanceType"] +
          "</instanceType></item></fleetInstanceSet></CreateFleetResponse>";
    }
    if (fleet_answers_.empty()) return fleet->second;
    const auto [status, code] = fleet_answers_.front();
    fleet_answers_.erase(fleet_answers_.begin());
    res.status = status;
    return "<Response><Errors><Error><Code>" + code + "</Code><Message>" + code +
           "</Message></Error></Errors><RequestID>r</RequestID></Response>";
  }

  v1::NodeClaim Claim() {
    v1::NodeClaim c;
    c.metadata.name = "claim-1";
    c.metadata.uid = "0b7f1c52-uid";
    c.metadata.labels = {{"karpenter.sh/nodepool", "default"}};
    c.spec.node_class_ref = v1::NodeClassReference{"karpenter.k8s.aws", "EC2NodeClass", "default"};
    c.spec.requirements = {{.key = "karpenter.sh/capacity-type",
                            .op = core::SelectorOperator::kIn,
                            .values = {"spot", "on-demand"}}};
    return c;
  }

  Form LastForm(const std::string& action) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = forms_.rbegin(); it != forms_.rend(); ++it) {
      if ((*it)["Action"] == action) return *it;
    }
    return {};
  }

  UnavailableOfferings ice_{clock_};
  std::unique_ptr<AwsClient> client_;
  std::unique_ptr<Ec2Client> ec2_;
  awsv1::EC2NodeClass node_class_;
  std::unique_ptr<AwsCloudProvider> provider_;
  std::string fleet_response_;
  std::string fleet_error_;  // non-empty: CreateFleet answers 400 with this code
  std::string instances_xml_ = "<R><reservationSet/></R>";
  bool terminate_fails_ = false;
  bool applies_fleets_ = false;  // CreateFleet goes through ApplyFleet
  std::map<std::string, std::string> fleets_by_token_;
  std::vector<std::pair<int, std::string>> fleet_answers_;
};

// upstream's launch-failure reasons; capacity errors are no reason of their own.
TEST(LaunchFailureReasonTest, MapsFleetErrorsToUpstreamsReasons) {
  EXPECT_EQ(LaunchFailureReason("InsufficientInstanceCapacity", "none left"), "LaunchFailed");
  EXPECT_EQ(LaunchFailureReason("UnfulfillableCapacity", ""), "LaunchFailed");
  EXPECT_EQ(LaunchFailureReason("VcpuLimitExceeded", "quota"), "VCPULimitExceeded");
  EXPECT_EQ(LaunchFailureReason("MaxSpotInstanceCountExceeded", ""), "SpotQuotaExceeded");
  EXPECT_EQ(LaunchFailureReason("InvalidAMIID.NotFound", ""), "AMINotFound");
  EXPECT_EQ(LaunchFailureReason("UnauthorizedOperation", "You are not authorized"), "Unauthorized");
  EXPECT_EQ(LaunchFailureReason("AuthFailure", "Not authorized for images: [ami-1]"),
            "AMIAuthorizationFailure");
  EXPECT_EQ(LaunchFailureReason("AuthFailure.ServiceLinkedRoleCreationNotPermitted", ""),
            "SpotSLRCreationFailed");
  EXPECT_EQ(LaunchFailureReason("InvalidParameterValue", "bad subnet"),
            "LaunchFailed");  // both parts needed
  EXPECT_EQ(LaunchFailureReason("InvalidParameter", "they belong to different networks"),
            "SecurityGroupSubnetVPCMismatch");
  EXPECT_EQ(LaunchFailureReason("InsufficientFreeAddressesInSubnet", ""),
            "InsufficientFreeAddressesInSubnet");
}

// Every CreateFleet error is a launch failure with its zone, the zone id of the class's subnet
// there, the launch's capacity type and upstream's reason; the rendered user data's size and the
// instance types' vCPUs and memory are gauges.
TEST_F(FakeEc2Test, ExportsLaunchFailuresUserDataSizeAndInstanceTypeGauges) {
  metrics::Registry registry;
  provider_->ExportMetrics(registry);
  fleet_response_ = R"(<CreateFleetResponse><fleetId>fleet-1</fleetId><errorSet>
<item><launchTemplateAndOverrides><overrides><instanceType>m5.large</instanceType>
<availabilityZone>us-east-1a</availabilityZone></overrides></launchTemplateAndOverrides>
<lifecycle>spot</lifecycle><errorCode>InsufficientInstanceCapacity</errorCode></item>
<item><launchTemplateAndOverrides><overrides><instanceType>m5.large</instanceType>
<availabilityZone>us-east-1b</availabilityZone></overrides></launchTemplateAndOverrides>
<lifecycle>spot</lifecycle><errorCode>VcpuLimitExceeded</errorCode>
<errorMessage>vCPU quota</errorMessage></item>
</errorSet><fleetInstanceSet/></CreateFleetResponse>)";
  ASSERT_FALSE(provider_->Create(Claim()).ok());
  metrics::Counter& failures =
      registry.NewCounter("karpenter_cloudprovider_instance_launch_failures_total", "",
                          {"zone", "zone_id", "capacity_type", "reason"});
  EXPECT_EQ(failures.Value({"us-east-1a", "use1-az1", "spot", "LaunchFailed"}), 1);
  EXPECT_EQ(failures.Value({"us-east-1b", "use1-az2", "spot", "VCPULimitExceeded"}), 1);
  EXPECT_EQ(failures.Value({"us-east-1b", "use1-az2", "spot", "LaunchFailed"}), 0);

  std::string user_data;
  ASSERT_TRUE(absl::Base64Unescape(LastForm("CreateLaunchTemplate")["LaunchTemplateData.UserData"],
                                   &user_data));
  ASSERT_FALSE(user_data.empty());
  metrics::Gauge& user_data_bytes =
      registry.NewGauge("karpenter_ec2nodeclasses_userdata_bytes", "", {"nodeclass"});
  EXPECT_EQ(user_data_bytes.Value({"default"}), static_cast<double>(user_data.size()));

  metrics::Gauge& cpu =
      registry.NewGauge("karpenter_cloudprovider_instance_type_cpu_cores", "", {"instance_type"});
  metrics::Gauge& memory = registry.NewGauge("karpenter_cloudprovider_instance_type_memory_bytes",
                                             "", {"instance_type"});
  EXPECT_EQ(cpu.Value({"m5.large"}), 2);
  EXPECT_EQ(memory.Value({"m5.large"}), 8192.0 * 1024 * 1024);
  const std::string text = registry.Expose();
  EXPECT_NE(text.find("# TYPE karpenter_cloudprovider_instance_type_cpu_cores gauge"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE karpenter_cloudprovider_instance_launch_failures_total counter"),
            std::string::npos);
}

// A failed TerminateInstances counts, with the instance's zone and (when its placement lacks the
// id) the zone id from DescribeAvailabilityZones.
TEST_F(FakeEc2Test, ExportsTerminationFailures) {
  metrics::Registry registry;
  provider_->ExportMetrics(registry);
  ASSERT_TRUE(provider_->RefreshCatalog().ok());
  instances_xml_ = R"(<R><reservationSet><item><instancesSet><item>
<instanceId>i-0abc</instanceId><instanceType>m5.large</instanceType>
<instanceState><name>running</name></instanceState>
<placement><availabilityZone>us-east-1b</availabilityZone></placement>
<tagSet><item><key>kubernetes.io/cluster/demo</key><value>owned</value></item>
<item><key>karpenter.sh/nodepool</key><value>default</value></item></tagSet>
</item></instancesSet></item></reservationSet></R>)";
  v1::NodeClaim claim = Claim();
  claim.status.provider_id = "aws:///us-east-1b/i-0abc";
  ASSERT_TRUE(provider_->Delete(claim).ok());
  metrics::Counter& failures = registry.NewCounter(
      "karpenter_cloudprovider_instance_termination_failures_total", "", {"zone", "zone_id"});
  EXPECT_EQ(failures.Value({"us-east-1b", "use1-az2"}), 0);
  terminate_fails_ = true;
  EXPECT_FALSE(provider_->Delete(claim).ok());
  EXPECT_EQ(failures.Value({"us-east-1b", "use1-az2"}), 1);
}

// upstream's cloudprovider.metrics pass: per NodePool catalog (the class's zones and the ICE
// cache count), reserved series of 0 with the ReservedCapacity gate.
TEST_F(FakeEc2Test, OfferingMetricsFollowTheNodePoolCatalogs) {
  metrics::Registry registry;
  const OfferingGauges gauges = RegisterOfferingGauges(registry);
  node_class_.status.subnets = {{"subnet-a", "us-east-1a", "use1-az1"}};
  v1::NodePool pool;
  pool.metadata.name = "default";
  pool.spec.template_.spec.node_class_ref =
      v1::NodeClassReference{"karpenter.k8s.aws", "EC2NodeClass", "default"};
  ASSERT_TRUE(CollectOfferingMetrics(*provider_, {pool}, true, gauges).ok());
  EXPECT_EQ(gauges.available->Value({"m5.large", "spot", "us-east-1a"}), 1);
  EXPECT_EQ(gauges.available->Value({"m5.large", "spot", "us-east-1b"}), 0);  // no subnet there
  EXPECT_DOUBLE_EQ(gauges.price->Value({"m5.large", "spot", "us-east-1a"}), 0.03);
  EXPECT_GT(gauges.price->Value({"m5.large", "on-demand", "us-east-1a"}), 0);
  EXPECT_EQ(gauges.available->Value({"m5.large", "on-demand", "us-east-1a"}), 1);
  const std::string text = registry.Expose();
  EXPECT_NE(text.find(R"(karpenter_cloudprovider_instance_type_offering_available{)"
                      R"(instance_type="m5.large",capacity_type="reserved",zone="us-east-1a"} 0)"),
            std::string::npos)
      << text;

  ice_.MarkUnavailable("InsufficientInstanceCapacity", "spot", "m5.large", "us-east-1a");
  ASSERT_TRUE(CollectOfferingMetrics(*provider_, {pool}, false, gauges).ok());
  EXPECT_EQ(gauges.available->Value({"m5.large", "spot", "us-east-1a"}), 0);
  EXPECT_EQ(registry.Expose().find(R"(capacity_type="reserved")"), std::string::npos);

  // A NodePool whose class is not ready fails the pass and leaves the gauges alone.
  node_class_.status.conditions.clear();
  EXPECT_FALSE(CollectOfferingMetrics(*provider_, {pool}, true, gauges).ok());
  EXPECT_DOUBLE_EQ(gauges.price->Value({"m5.large", "spot", "us-east-1a"}), 0.03);
}

TEST_F(FakeEc2Test, FleetCapacityErrorsMarkTheCacheAndMeanInsufficientCapacity) {
  fleet_response_ = R"(<CreateFleetResponse><fleetId>fleet-1</fleetId><errorSet>
<item><launchTemplateAndOverrides><overrides><instanceType>m5.large</instanceType>
<availabilityZone>us-east-1a</availabilityZone></overrides></launchTemplateAndOverrides>
<lifecycle>spot</lifecycle><errorCode>InsufficientInstanceCapacity</errorCode></item>
<item><launchTemplateAndOverrides><overrides><instanceType>m5.large</instanceType>
<availabilityZone>us-east-1b</availabilityZone></overrides></launchTemplateAndOverrides>
<lifecycle>spot</lifecycle><errorCode>InsufficientInstanceCapacity</errorCode></item>
</errorSet><fleetInstanceSet/></CreateFleetResponse>)";
  auto launched = provider_->Create(Claim());
  EXPECT_TRUE(cp::IsInsufficientCapacity(launched.status())) << launched.status();
  EXPECT_TRUE(ice_.IsUnavailable("spot", "m5.large", "us-east-1a"));
  EXPECT_TRUE(ice_.IsUnavailable("spot", "m5.large", "us-east-1b"));

  auto fleet = LastForm("CreateFleet");
  EXPECT_EQ(fleet["Type"], "instant");
  const std::string first_token = fleet["ClientToken"];
  EXPECT_TRUE(first_token.starts_with("0b7f1c52-uid-")) << first_token;
  EXPECT_EQ(first_token.size(), std::string("0b7f1c52-uid-").size() + 16) << first_token;
  EXPECT_EQ(fleet["TargetCapacitySpecification.DefaultTargetCapacityType"], "spot");
  EXPECT_EQ(fleet["SpotOptions.AllocationStrategy"], "price-capacity-optimized");
  EXPECT_EQ(fleet["LaunchTemplateConfigs.1.Overrides.1.InstanceType"], "m5.large");
  EXPECT_EQ(fleet["LaunchTemplateConfigs.1.Overrides.1.SubnetId"], "subnet-a");
  EXPECT_EQ(fleet["LaunchTemplateConfigs.1.Overrides.2.SubnetId"], "subnet-b");
  EXPECT_EQ(fleet["LaunchTemplateConfigs.1.Overrides.1.ImageId"], "ami-1");
  const std::string lt =
      fleet["LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName"];
  EXPECT_TRUE(lt.starts_with("karpenter.k8s.aws/")) << lt;
  EXPECT_EQ(LastForm("CreateLaunchTemplate")["LaunchTemplateName"], lt);

  // With spot ICE-cached, the next launch goes on-demand and is placed.
  fleet_response_ = R"(<CreateFleetResponse><fleetId>fleet-2</fleetId><fleetInstanceSet><item>
<launchTemplateAndOverrides><overrides><instanceType>m5.large</instanceType>
<availabilityZone>us-east-1b</availabilityZone><subnetId>subnet-b</subnetId></overrides>
</launchTemplateAndOverrides><lifecycle>on-demand</lifecycle>
<instanceIds><item>i-0abc</item></instanceIds><instanceType>m5.large</instanceType>
</item></fleetInstanceSet></CreateFleetResponse>)";
  launched = provider_->Create(Claim());
  ASSERT_TRUE(launched.ok()) << launched.status();
  EXPECT_EQ(LastForm("CreateFleet")["TargetCapacitySpecification.DefaultTargetCapacityType"],
            "on-demand");
  EXPECT_EQ(LastForm("CreateFleet")["OnDemandOptions.AllocationStrategy"], "lowest-price");
  // The plan changed (spot is cached unavailable): a new token, not EC2's
  // IdempotentParameterMismatch for reusing the first one.
  EXPECT_NE(LastForm("CreateFleet")["ClientToken"], first_token);
  EXPECT_TRUE(LastForm("CreateFleet")["ClientToken"].starts_with("0b7f1c52-uid-"));
  EXPECT_EQ(launched->status.provider_id, "aws:///us-east-1b/i-0abc");
  EXPECT_EQ(launched->status.image_id, "ami-1");
  EXPECT_EQ(launched->metadata.labels.at("karpenter.sh/capacity-type"), "on-demand");
  EXPECT_EQ(launched->metadata.labels.at("topology.kubernetes.io/zone"), "us-east-1b");
  EXPECT_EQ(launched->metadata.labels.at("topology.k8s.aws/zone-id"), "use1-az2");
  EXPECT_EQ(launched->metadata.labels.at("node.kubernetes.io/instance-type"), "m5.large");
  EXPECT_EQ(launched->status.capacity.at("cpu").ToString(), "2");
}

TEST_F(FakeEc2Test, InstanceTypesFollowTheNodeClassZones) {
  node_class_.status.subnets = {{"subnet-a", "us-east-1a", "use1-az1"}};
  v1::NodePool pool;
  pool.spec.template_.spec.node_class_ref =
      v1::NodeClassReference{"karpenter.k8s.aws", "EC2NodeClass", "default"};
  auto catalog = provider_->GetInstanceTypes(pool);
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  ASSERT_EQ(catalog->size(), 1u);
  const cp::InstanceType& m5 = *(*catalog)[0];
  const auto zone = m5.requirements().Get("topology.kubernetes.io/zone");
  EXPECT_TRUE(zone.Has("us-east-1a"));
  EXPECT_FALSE(zone.Has("us-east-1b"));
  EXPECT_FALSE(m5.requirements().Get("topology.k8s.aws/zone-id").Has("use1-az2"));
  for (const cp::Offering& o : m5.offerings()) {
    EXPECT_EQ(o.available, o.zone == "us-east-1a") << o.zone << " " << o.capacity_type;
  }
  // Cached: the same answer without another DescribeInstanceTypes.
  const size_t calls = forms_.size();
  ASSERT_TRUE(provider_->GetInstanceTypes(pool).ok());
  EXPECT_EQ(forms_.size(), calls);
  // The ICE cache moves: re-filtered.
  ice_.MarkUnavailable("InsufficientInstanceCapacity", "spot", "m5.large", "us-east-1a");
  catalog = provider_->GetInstanceTypes(pool);
  for (const cp::Offering& o : (*catalog)[0]->offerings()) {
    if (o.capacity_type == "spot") {
      EXPECT_FALSE(o.available);
    }
  }
}

// The class shapes its types (aws_node_class_capacity.h): a 100Gi root volume and kubelet
// maxPods, kubeReserved and evictionHard reach capacity and allocatable; the cache follows the
// class, and a class that changes nothing gets the base catalog's types.
TEST_F(FakeEc2Test, InstanceTypesFollowTheNodeClassKubeletAndBlockDevices) {
  v1::NodePool pool;
  pool.spec.template_.spec.node_class_ref =
      v1::NodeClassReference{"karpenter.k8s.aws", "EC2NodeClass", "default"};
  auto plain = provider_->GetInstanceTypes(pool);
  ASSERT_TRUE(plain.ok()) << plain.status();
  const cp::InstanceType& base = *(*plain)[0];
  EXPECT_EQ(base.capacity().at("ephemeral-storage").Value(), int64_t{20} << 30);
  EXPECT_EQ(base.capacity().at("pods").Value(), 29);

  awsv1::BlockDeviceMapping root;
  root.device_name = "/dev/xvda";
  root.root_volume = true;
  root.ebs = awsv1::BlockDevice{.volume_size = *Quantity::Parse("100Gi")};
  node_class_.spec.block_device_mappings = {root};
  node_class_.spec.kubelet = awsv1::KubeletConfiguration{};
  node_class_.spec.kubelet->max_pods = 8;
  node_class_.spec.kubelet->kube_reserved = {{"cpu", "200m"}};
  node_class_.spec.kubelet->eviction_hard = {{"memory.available", "5%"}};
  auto shaped = provider_->GetInstanceTypes(pool);
  ASSERT_TRUE(shaped.ok()) << shaped.status();
  const cp::InstanceType& m5 = *(*shaped)[0];
  EXPECT_EQ(m5.capacity().at("ephemeral-storage").Value(), int64_t{100} << 30);
  EXPECT_EQ(m5.capacity().at("pods").Value(), 8);
  EXPECT_EQ(m5.overhead().kube_reserved.at("cpu").MilliValue(), 200);
  // kube-reserved memory keeps the ENI-limited 29 pods (AL2023), as upstream.
  EXPECT_EQ(m5.overhead().kube_reserved.at("memory").Value(), (11 * 29 + 255) * (int64_t{1} << 20));
  const int64_t memory = m5.capacity().at("memory").Value();
  EXPECT_EQ(m5.overhead().eviction_threshold.at("memory").Value(),
            static_cast<int64_t>(std::ceil(static_cast<double>(memory) / 100 * 5)));
  // 100Gi - 1Gi kube-reserved - 10Gi eviction.
  EXPECT_EQ(m5.Allocatable().at("ephemeral-storage").Value(), int64_t{89} << 30);
  // Offerings and zones are filtered as for any class.
  EXPECT_EQ(m5.offerings().size(), base.offerings().size());

  node_class_.spec.kubelet->kube_reserved = {{"cpu", "a lot"}};
  EXPECT_FALSE(provider_->GetInstanceTypes(pool).ok());
  node_class_.spec.kubelet.reset();
  node_class_.spec.block_device_mappings.clear();
  auto again = provider_->GetInstanceTypes(pool);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)[0]->capacity(), base.capacity());
}

// The same launch again replays its token (EC2 then returns the fleet it made); should EC2 still
// answer IdempotentParameterMismatch, the launch is retried (transient), never a CreateError
// that would delete the NodeClaim while an instance may exist for it.
TEST_F(FakeEc2Test, SameLaunchSameTokenAndIdempotentParameterMismatchIsTransient) {
  fleet_response_ = R"(<CreateFleetResponse><fleetId>fleet-2</fleetId><fleetInstanceSet><item>
<launchTemplateAndOverrides><overrides><instanceType>m5.large</instanceType>
<availabilityZone>us-east-1b</availabilityZone><subnetId>subnet-b</subnetId></overrides>
</launchTemplateAndOverrides><lifecycle>spot</lifecycle>
<instanceIds><item>i-0abc</item></instanceIds><instanceType>m5.large</instanceType>
</item></fleetInstanceSet></CreateFleetResponse>)";
  ASSERT_TRUE(provider_->Create(Claim()).ok());
  const std::string token = LastForm("CreateFleet")["ClientToken"];
  ASSERT_TRUE(provider_->Create(Claim()).ok());
  EXPECT_EQ(LastForm("CreateFleet")["ClientToken"], token);

  fleet_error_ = "IdempotentParameterMismatch";
  auto launched = provider_->Create(Claim());
  ASSERT_FALSE(launched.ok());
  EXPECT_FALSE(cp::IsCreateError(launched.status())) << launched.status();
  EXPECT_FALSE(cp::IsInsufficientCapacity(launched.status())) << launched.status();
  EXPECT_EQ(launched.status().code(), absl::StatusCode::kUnavailable) << launched.status();
  EXPECT_NE(launched.status().message().find("IdempotentParameterMismatch"),
            absl::string_view::npos)
      << launched.status();
}

// Fault test 2 of docs/reliability.md: EC2 applies a CreateFleet and the answer is lost (503),
// then three RequestLimitExceeded. The client retries the same request, token included, with a
// bounded backoff, so EC2 launches one instance and the NodeClaim gets it: never a second
// instance, zone or type.
TEST_F(FakeEc2Test, AnAppliedLaunchAnsweredWith503ThenThrottledMakesOneInstance) {
  applies_fleets_ = true;
  fleet_answers_ = {{503, "Unavailable"},
                    {503, "RequestLimitExceeded"},
                    {503, "RequestLimitExceeded"},
                    {503, "RequestLimitExceeded"}};
  std::vector<absl::Duration> sleeps;
  AwsClient retrying(
      AwsClient::Dependencies{.transport = transport_,
                              .credentials = &credentials_,
                              .clock = clock_,
                              .sleep = [&](absl::Duration d) { sleeps.push_back(d); }},
      AwsClient::Options{.service = kEc2,
                         .region = "us-east-1",
                         .endpoint = server_.url(),
                         .max_attempts = 5,
                         .jitter_seed = 7});
  Ec2Client ec2(retrying);
  AwsCloudProvider provider(
      AwsCloudProvider::Dependencies{
          .ec2 = ec2,
          .unavailable = ice_,
          .clock = clock_,
          .get_node_class = [this](std::string_view) -> absl::StatusOr<awsv1::EC2NodeClass> {
            return node_class_;
          }},
      [] {
        AwsCloudProvider::Options options;
        options.cluster_name = "demo";
        options.cluster_cidr = "10.100.0.0/16";
        options.catalog.region = "us-east-1";
        options.catalog.static_files = *cp::ReadCatalogDirectory(DOVETAIL_AWS_DATA_DIR);
        return options;
      }());

  absl::StatusOr<v1::NodeClaim> launched = provider.Create(Claim());
  ASSERT_TRUE(launched.ok()) << launched.status();
  EXPECT_EQ(launched->status.provider_id, "aws:///us-east-1a/i-1");
  std::vector<std::map<std::string, std::string>> fleets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& form : forms_) {
      if (form.at("Action") == "CreateFleet") fleets.push_back(form);
    }
    EXPECT_EQ(fleets_by_token_.size(), 1u) << "EC2 launched more than one instance";
  }
  ASSERT_EQ(fleets.size(), 5u);
  for (const auto& form : fleets) EXPECT_EQ(form, fleets[0]) << "a retry changed the request";
  // Four full-jitter backoffs, each within its doubling cap (AwsClient::Backoff: 50 ms for the
  // 5xx after the first attempt, then the throttling base of 500 ms doubled per attempt).
  ASSERT_EQ(sleeps.size(), 4u);
  const absl::Duration caps[] = {absl::Milliseconds(50), absl::Milliseconds(1000),
                                 absl::Milliseconds(2000), absl::Milliseconds(4000)};
  for (size_t i = 0; i < sleeps.size(); ++i) {
    EXPECT_GE(sleeps[i], absl::ZeroDuration());
    EXPECT_LE(sleeps[i], caps[i]) << "backoff " << i;
  }
  EXPECT_FALSE(ice_.IsUnavailable("spot", "m5.large", "us-east-1a"));
}

TEST_F(FakeEc2Test, OtherFleetErrorsAreCreateErrors) {
  fleet_response_ =
      R"(<CreateFleetResponse><errorSet><item><errorCode>InvalidParameterValue</errorCode>
<errorMessage>bad</errorMessage></item></errorSet></CreateFleetResponse>)";
  auto launched = provider_->Create(Claim());
  ASSERT_TRUE(cp::IsCreateError(launched.status())) << launched.status();
  EXPECT_EQ(cp::GetCreateError(launched.status())->reason, "InvalidParameterValue");
}

TEST_F(FakeEc2Test, NodeClassReadiness) {
  node_class_.status.conditions[0].status = core::ConditionStatus::kFalse;
  EXPECT_TRUE(cp::IsNodeClassNotReady(provider_->Create(Claim()).status()));
  node_class_.status.conditions[0].status = core::ConditionStatus::kUnknown;
  EXPECT_TRUE(cp::IsCreateError(provider_->Create(Claim()).status()));
  node_class_.status.conditions[0].status = core::ConditionStatus::kTrue;
  node_class_.status.conditions[0].observed_generation = 1;  // stale
  EXPECT_TRUE(cp::IsNodeClassNotReady(provider_->Create(Claim()).status()));
  node_class_.status.conditions.clear();
  EXPECT_TRUE(cp::IsNodeClassNotReady(provider_->Create(Claim()).status()));
  node_class_.status.conditions = {
      {.type = "Ready", .status = core::ConditionStatus::kTrue, .observed_generation = 2}};
  node_class_.spec.tags = {{"karpenter.sh/nodepool", "mine"}};
  auto restricted = provider_->Create(Claim());
  ASSERT_TRUE(cp::IsCreateError(restricted.status())) << restricted.status();
  EXPECT_EQ(cp::GetCreateError(restricted.status())->reason, "InvalidTags");
  EXPECT_TRUE(LastForm("CreateFleet").empty());  // nothing launched
}

}  // namespace
}  // namespace dovetail::providers::aws
