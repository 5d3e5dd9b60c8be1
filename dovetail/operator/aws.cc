#include "dovetail/operator/aws.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/cloudprovider/aws_static_data.h"
#include "dovetail/common/log.h"
#include "dovetail/kube/resource.h"
#include "dovetail/providers/aws/aws_client.h"
#include "dovetail/providers/aws/bootstrap.h"
#include "dovetail/providers/aws/cloudprovider/aws_cloud_provider.h"
#include "dovetail/providers/aws/cloudprovider/offering_metrics.h"
#include "dovetail/providers/aws/credentials_chain.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/eks_client.h"
#include "dovetail/providers/aws/endpoints.h"
#include "dovetail/providers/aws/env.h"
#include "dovetail/providers/aws/errors.h"
#include "dovetail/providers/aws/http_transport.h"
#include "dovetail/providers/aws/iam_client.h"
#include "dovetail/providers/aws/interruption/instance_status_controller.h"
#include "dovetail/providers/aws/interruption/interruption_controller.h"
#include "dovetail/providers/aws/metrics.h"
#include "dovetail/providers/aws/nodeclass/nodeclass_controller.h"
#include "dovetail/providers/aws/pricing_client.h"
#include "dovetail/providers/aws/region.h"
#include "dovetail/providers/aws/sqs_client.h"
#include "dovetail/providers/aws/ssm_client.h"
#include "dovetail/providers/aws/unavailable_offerings.h"
#include "nlohmann/json.hpp"

namespace dovetail::op {
namespace {

namespace aws = ::dovetail::providers::aws;
constexpr std::string_view kAwsLogger = "operator.aws";

// The clusterIP of Service kube-system/kube-dns, where upstream takes the nodes' DNS IP from.
absl::StatusOr<std::string> KubeDnsIp(kube::Client& client) {
  absl::StatusOr<std::string> body =
      client.Get(kube::resources::kServices, "kube-system", "kube-dns");
  if (!body.ok()) return body.status();
  const nlohmann::json service = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
  std::string ip;
  if (service.is_object() && service.contains("spec") && service["spec"].is_object()) {
    ip = service["spec"].value("clusterIP", "");
  }
  if (ip.empty() || ip == "None") {
    return absl::NotFoundError("the Service has no clusterIP");
  }
  return ip;
}

class AwsStackImpl final : public AwsStack {
 public:
  AwsStackImpl(const Options& options, const Clock& clock, const kube::WriteGate* gate)
      : options_(options), clock_(clock), gate_(gate), unavailable_(clock) {}

  absl::Status Init(kube::Client& client, std::string_view kube_ca_pem) {
    const aws::EnvLookup env = aws::ProcessEnv();
    aws::ImdsClient imds(transport_, aws::ImdsClient::Options{}, env);
    absl::StatusOr<std::string> region = aws::ResolveRegion(options_.aws_region, env, &imds);
    if (!region.ok()) return region.status();
    region_ = *region;
    log::Info(kAwsLogger, "region", {{"region", region_}});

    absl::StatusOr<std::unique_ptr<aws::AwsClient>> sts =
        NewClient(aws::kSts, /*json=*/false, /*signed_client=*/false, env);
    if (!sts.ok()) return sts.status();
    sts_ = *std::move(sts);
    credentials_ = aws::DefaultCredentialsChain(*sts_, clock_, env);

    auto make = [&](const aws::ServiceInfo& s, bool json,
                    std::unique_ptr<aws::AwsClient>& out) -> absl::Status {
      absl::StatusOr<std::unique_ptr<aws::AwsClient>> c = NewClient(s, json, true, env);
      if (!c.ok()) return c.status();
      out = *std::move(c);
      return absl::OkStatus();
    };
    if (auto s = make(aws::kEc2, false, ec2_raw_); !s.ok()) return s;
    if (auto s = make(aws::kSsm, true, ssm_raw_); !s.ok()) return s;
    if (auto s = make(aws::kIam, false, iam_raw_); !s.ok()) return s;
    if (auto s = make(aws::kSqs, true, sqs_raw_); !s.ok()) return s;
    // ISOLATED_VPC: the Pricing API has no VPC endpoint; on-demand prices stay static.
    if (!options_.isolated_vpc) {
      if (auto s = make(aws::kPricing, true, pricing_raw_); !s.ok()) return s;
    }
    if (auto s = make(aws::kEks, true, eks_raw_); !s.ok()) return s;
    ec2_ = std::make_unique<aws::Ec2Client>(*ec2_raw_);
    ssm_ = std::make_unique<aws::SsmClient>(*ssm_raw_);
    iam_ = std::make_unique<aws::IamClient>(*iam_raw_);
    sqs_ = std::make_unique<aws::SqsClient>(*sqs_raw_);
    if (pricing_raw_ != nullptr) pricing_ = std::make_unique<aws::PricingClient>(*pricing_raw_);
    eks_ = std::make_unique<aws::EksClient>(*eks_raw_);

    // What nodes need to join (bootstrap.h): settings first, then EKS and the cluster itself.
    absl::StatusOr<aws::BootstrapConfig> boot =
        aws::DiscoverBootstrap({.cluster_name = options_.cluster_name,
                                .endpoint = options_.cluster_endpoint,
                                .ca_bundle = options_.cluster_ca_bundle,
                                .service_cidr = options_.cluster_cidr},
                               *eks_, kube_ca_pem, [&client] { return KubeDnsIp(client); });
    if (!boot.ok()) return boot.status();
    for (const std::string& note : boot->notes) {
      log::Info(kAwsLogger, "node bootstrap", {{"source", note}});
    }
    bootstrap_ = *std::move(boot);
    // The CA bundle upstream mixes into the EC2NodeClass drift hash: CLUSTER_CA_BUNDLE, else the
    // CA this client trusts (not EKS's), base64.
    hash_ca_bundle_ = !options_.cluster_ca_bundle.empty()
                          ? options_.cluster_ca_bundle
                          : absl::Base64Escape(std::string(kube_ca_pem));

    aws::AwsCloudProvider::Options po;
    po.cluster_name = options_.cluster_name;
    po.cluster_endpoint = bootstrap_.endpoint;
    po.cluster_ca_bundle = bootstrap_.ca_bundle;
    po.cluster_cidr = bootstrap_.service_cidr;
    po.cluster_dns_ip = bootstrap_.dns_ip;
    po.catalog.region = region_;
    po.catalog.capacity.reserved_enis = options_.reserved_enis;
    po.catalog.capacity.vm_memory_overhead_percent = options_.vm_memory_overhead_percent;
    if (!options_.aws_catalog.empty()) {
      absl::StatusOr<cloudprovider::CatalogFiles> files =
          cloudprovider::ReadCatalogDirectory(options_.aws_catalog);
      if (!files.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("DOVETAIL_AWS_CATALOG: ", files.status().message()));
      }
      po.catalog.static_files = *std::move(files);
    } else {
      // The catalog and on-demand prices compiled in (data/aws/).
      const absl::StatusOr<cloudprovider::CatalogFiles>& built_in =
          cloudprovider::BuiltInAwsCatalogFiles();
      if (!built_in.ok()) return built_in.status();
      po.catalog.static_files = *built_in;
    }
    cloud_ = std::make_unique<aws::AwsCloudProvider>(
        aws::AwsCloudProvider::Dependencies{.ec2 = *ec2_,
                                            .pricing = pricing_.get(),
                                            .unavailable = unavailable_,
                                            .clock = clock_,
                                            .get_node_class = aws::NodeClassGetterFromKube(client)},
        std::move(po));
    return absl::OkStatus();
  }

  cloudprovider::CloudProvider& cloud() override { return *cloud_; }

  std::vector<std::unique_ptr<controllers::Controller>> Controllers(
      const controllers::Dependencies& deps, controllers::disruption::Replacer* replacer) override {
    std::vector<std::unique_ptr<controllers::Controller>> out;
    if (deps.metrics != nullptr) {
      // dovetail_aws_api_*_total{service,api}: every client's per-API counters (metrics.h).
      for (aws::AwsClient* c : {sts_.get(), ec2_raw_.get(), ssm_raw_.get(), iam_raw_.get(),
                                sqs_raw_.get(), pricing_raw_.get(), eks_raw_.get()}) {
        if (c != nullptr) aws::ExportAwsApiMetrics(*c, *deps.metrics);
      }
      // Launch/termination failures, instance type vCPUs and memory, user data size.
      cloud_->ExportMetrics(*deps.metrics);
      if (options_.instance_type_metrics) {
        // DOVETAIL_INSTANCE_TYPE_METRICS: the per-offering gauges (high cardinality).
        auto gate = options_.feature_gates.find("ReservedCapacity");
        out.push_back(std::make_unique<aws::OfferingMetricsController>(
            deps, aws::OfferingMetricsController::Options{
                      .reserved_capacity = gate != options_.feature_gates.end() && gate->second}));
      }
    }
    aws::nodeclass::NodeClassOptions nco;
    nco.cluster_name = options_.cluster_name;
    nco.hash_ca_bundle = hash_ca_bundle_;
    nco.region = region_;
    nco.cluster_cidr = bootstrap_.service_cidr;
    // Every resolve refreshes AMIs, subnets and security groups together, so at the shortest of
    // upstream's three intervals.
    nco.resolve_interval =
        std::min({options_.ami_refresh_interval, options_.subnet_refresh_interval,
                  options_.security_group_refresh_interval});
    nco.delete_instance_profiles = !options_.isolated_vpc;
    if (options_.eks_control_plane) {
      // EKS_CONTROL_PLANE: the Kubernetes version from eks:DescribeCluster, not /version.
      nco.kubernetes_version_source = [this]() -> absl::StatusOr<std::string> {
        absl::StatusOr<aws::EksCluster> cluster = eks_->DescribeCluster(options_.cluster_name);
        if (!cluster.ok()) return cluster.status();
        if (cluster->version.empty()) {
          return absl::InternalError("eks:DescribeCluster returned no version");
        }
        return cluster->version;
      };
    }
    out.push_back(
        std::make_unique<aws::nodeclass::NodeClassController>(deps, *ec2_, *ssm_, *iam_, nco));
    // interruption.instancestatus: always on, as upstream (EC2 status checks and scheduled
    // events need no queue).
    out.push_back(std::make_unique<aws::interruption::InstanceStatusController>(deps, *ec2_));
    if (!options_.interruption_queue.empty()) {
      aws::interruption::ControllerOptions io;
      io.queue_name = options_.interruption_queue;
      out.push_back(std::make_unique<aws::interruption::InterruptionController>(
          deps, *sqs_, &unavailable_, replacer, std::move(io)));
    }
    return out;
  }

 private:
  absl::StatusOr<std::unique_ptr<aws::AwsClient>> NewClient(const aws::ServiceInfo& service,
                                                            bool json, bool signed_client,
                                                            const aws::EnvLookup& env) {
    absl::StatusOr<std::string> endpoint = aws::ResolveEndpoint(service, region_, {}, env);
    if (!endpoint.ok()) return endpoint.status();
    aws::AwsClient::Options o;
    o.service = service;
    o.region = aws::SigningRegion(service, region_);
    o.endpoint = *endpoint;
    if (json) o.parse_error = aws::ParseJsonError;
    return std::make_unique<aws::AwsClient>(
        aws::AwsClient::Dependencies{
            .transport = transport_,
            .credentials = signed_client ? credentials_.get() : nullptr,
            .clock = clock_,
            .write_fence = gate_ == nullptr ? std::function<absl::Status()>()
                                            : [gate = gate_]() -> absl::Status {
              if (gate->is_open()) return absl::OkStatus();
              return absl::FailedPreconditionError("cloud writes are disabled: not the leader");
            }},
        std::move(o));
  }

  const Options options_;
  const Clock& clock_;
  const kube::WriteGate* const gate_;  // fences AWS writes; may be null
  aws::HttpTransport transport_;
  std::string region_;
  std::unique_ptr<aws::AwsClient> sts_;
  std::unique_ptr<aws::CredentialsProvider> credentials_;
  std::unique_ptr<aws::AwsClient> ec2_raw_, ssm_raw_, iam_raw_, sqs_raw_, pricing_raw_, eks_raw_;
  std::unique_ptr<aws::Ec2Client> ec2_;
  std::unique_ptr<aws::SsmClient> ssm_;
  std::unique_ptr<aws::IamClient> iam_;
  std::unique_ptr<aws::SqsClient> sqs_;
  std::unique_ptr<aws::PricingClient> pricing_;
  std::unique_ptr<aws::EksClient> eks_;
  aws::BootstrapConfig bootstrap_;
  std::string hash_ca_bundle_;  // see Init
  aws::UnavailableOfferings unavailable_;
  std::unique_ptr<aws::AwsCloudProvider> cloud_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<AwsStack>> BuildAwsStack(const Options& options,
                                                        kube::Client& client,
                                                        std::string_view kube_ca_pem,
                                                        const Clock& clock,
                                                        const kube::WriteGate* gate) {
  auto stack = std::make_unique<AwsStackImpl>(options, clock, gate);
  if (absl::Status s = stack->Init(client, kube_ca_pem); !s.ok()) return s;
  return stack;
}

}  // namespace dovetail::op
