// `dovetail explain pod NS/NAME | node NAME`: why a pod is pending or a node is (not) disrupted,
// read from the live cluster. Builds the same objects `dovetail controller` runs (cluster state
// and informers, the provisioner, the disruption controller) over a client whose write gate stays
// closed, so explain never writes; the provisioner's solver question (scenario/solver_input.h) and
// the disruption decisions (disruption.h) answer on a fresh snapshot. Events (Dovetail's
// FailedScheduling, Nominated, DisruptionDecision) are listed from events.k8s.io/v1 with their
// decision IDs (docs/explain.md).

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cli/cluster_provider.h"
#include "dovetail/cli/commands.h"
#include "dovetail/cloudprovider/aws_node_class_capacity.h"
#include "dovetail/cloudprovider/kwok/kwok_cloud_provider.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/clock.h"
#include "dovetail/common/log.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/controllers/disruption/disruption_controller.h"
#include "dovetail/controllers/launch/decision_id.h"
#include "dovetail/controllers/provisioning/provisioner.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/config.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/resource.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/operator/options.h"
#include "dovetail/scenario/solver_input.h"
#include "dovetail/simulate/simulation.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "dovetail/state/pod_conversion.h"
#include "nlohmann/json.hpp"

namespace dovetail::cli {
namespace {

using json = nlohmann::json;

// kube::EventRecorderOptions' default reporting controller: the controller's events.
const std::string kReportingController = kube::EventRecorderOptions{}.reporting_controller;
namespace provisioning = controllers::provisioning;
namespace disruption = controllers::disruption;

struct ExplainFlags {
  std::string kubeconfig;
  std::string cloud_provider;  // empty: the cluster's (cluster_provider.h)
  std::string catalog;         // aws: a catalog directory, as `simulate --catalog`
  std::string output = "text";
  std::string target;
  int timeout_seconds = 30;
};

// `explain` with the AWS catalog: each NodePool gets the instance types its EC2NodeClass (read
// from the cluster) gives, as the controller computes them (cloudprovider/
// aws_node_class_capacity.h); the rest is the static provider's. Read-only, like explain.
class NodeClassCatalogs final : public cloudprovider::CloudProvider {
 public:
  NodeClassCatalogs(kube::Client& client, simulate::CatalogSpec spec,
                    std::unique_ptr<cloudprovider::CloudProvider> base)
      : client_(client), spec_(std::move(spec)), base_(std::move(base)) {}

  absl::StatusOr<apis::v1::NodeClaim> Create(const apis::v1::NodeClaim& c) override {
    return base_->Create(c);
  }
  absl::Status Delete(const apis::v1::NodeClaim& c) override { return base_->Delete(c); }
  absl::StatusOr<apis::v1::NodeClaim> Get(std::string_view id) override { return base_->Get(id); }
  absl::StatusOr<std::vector<apis::v1::NodeClaim>> List() override { return base_->List(); }
  absl::StatusOr<std::string> IsDrifted(const apis::v1::NodeClaim& c) override {
    return base_->IsDrifted(c);
  }
  std::vector<cloudprovider::RepairPolicy> RepairPolicies() const override {
    return base_->RepairPolicies();
  }
  std::string_view Name() const override { return "aws"; }

  absl::StatusOr<cloudprovider::Catalog> GetInstanceTypes(const apis::v1::NodePool& pool) override {
    const auto& ref = pool.spec.template_.spec.node_class_ref;
    if (!ref.has_value() || ref->kind != "EC2NodeClass") return base_->GetInstanceTypes(pool);
    absl::StatusOr<apis::aws::v1::EC2NodeClass> nc =
        kube::TypedClient<apis::aws::v1::EC2NodeClass>(client_, kube::resources::kEC2NodeClasses)
            .Get("", ref->name);
    if (!nc.ok()) return base_->GetInstanceTypes(pool);  // as the controller: no class, no shape
    ASSIGN_OR_RETURN(const cloudprovider::CapacityOptions shape,
                     cloudprovider::NodeClassCapacity(nc->spec));
    if (shape == cloudprovider::CapacityOptions{}) return base_->GetInstanceTypes(pool);
    auto it = shaped_.find(ref->name);
    if (it == shaped_.end() || !(it->second.first == shape)) {
      ASSIGN_OR_RETURN(cloudprovider::Catalog catalog, simulate::LoadCatalog(spec_, shape));
      it = shaped_.insert_or_assign(ref->name, std::pair{shape, std::move(catalog)}).first;
    }
    return it->second.second;
  }

 private:
  kube::Client& client_;
  const simulate::CatalogSpec spec_;
  std::unique_ptr<cloudprovider::CloudProvider> base_;
  std::map<std::string, std::pair<cloudprovider::CapacityOptions, cloudprovider::Catalog>> shaped_;
};

// The controller's objects over the live cluster, read-only.
class Live {
 public:
  static absl::StatusOr<std::unique_ptr<Live>> Connect(const ExplainFlags& flags) {
    std::unique_ptr<Live> live(new Live());
    absl::StatusOr<kube::RestConfig> config = flags.kubeconfig.empty()
                                                  ? kube::LoadDefaultConfig()
                                                  : kube::LoadKubeconfigFile(flags.kubeconfig);
    if (!config.ok()) return config.status();
    auto rest = kube::RestClient::Create(*config);
    if (!rest.ok()) return rest.status();
    live->rest_ = std::move(*rest);
    live->gate_.Close();  // explain never writes
    live->client_ = std::make_unique<kube::Client>(*live->rest_, &live->gate_);
    live->events_ = std::make_unique<kube::EventRecorder>(*live->client_, live->clock_,
                                                          kube::EventRecorderOptions{});
    live->cluster_ = std::make_unique<state::Cluster>(live->clock_);
    live->informers_ = std::make_unique<state::ClusterInformers>(*live->client_, *live->cluster_);
    std::string provider = flags.cloud_provider;
    if (provider.empty()) {
      absl::StatusOr<std::vector<apis::v1::NodePool>> pools =
          kube::TypedClient<apis::v1::NodePool>(*live->client_, kube::resources::kNodePools)
              .List("");
      if (!pools.ok()) return pools.status();
      provider = CloudProviderOfNodePools(*pools);
    }
    if (provider.empty()) {
      absl::StatusOr<op::Options> options = op::OptionsFromEnvironment();
      if (!options.ok()) return options.status();
      provider = options->cloud_provider;
    }
    absl::StatusOr<cloudprovider::Catalog> catalog;
    if (provider == "kwok") {
      catalog = flags.catalog.empty() ? cloudprovider::kwok::SyntheticCatalog()
                                      : cloudprovider::kwok::LoadCatalog(flags.catalog);
    } else if (provider == "aws") {
      // Without --catalog: the AWS catalog and on-demand prices compiled in.
      catalog = simulate::LoadCatalog({.catalog = flags.catalog.empty() ? "aws" : flags.catalog});
    } else {
      return absl::InvalidArgumentError(
          Cat("unknown --cloud-provider ", provider, " (kwok or aws)"));
    }
    if (!catalog.ok()) {
      return absl::InvalidArgumentError(Cat("catalog: ", catalog.status().message()));
    }
    // Only GetInstanceTypes is used: the kwok provider serves the catalog as it is (for aws,
    // shaped per EC2NodeClass).
    live->cloud_ = std::make_unique<cloudprovider::kwok::KwokCloudProvider>(*live->client_,
                                                                            std::move(*catalog));
    if (provider == "aws") {
      live->cloud_ = std::make_unique<NodeClassCatalogs>(
          *live->client_,
          simulate::CatalogSpec{.catalog = flags.catalog.empty() ? "aws" : flags.catalog},
          std::move(live->cloud_));
    }
    live->deps_ = std::make_unique<controllers::Dependencies>(
        controllers::Dependencies{*live->client_, *live->cluster_, *live->informers_, *live->cloud_,
                                  live->clock_, *live->events_, nullptr});
    live->provisioner_ = std::make_unique<provisioning::Provisioner>(*live->deps_);
    live->disruption_ = std::make_unique<disruption::DisruptionController>(*live->deps_);
    const absl::Time deadline = absl::Now() + absl::Seconds(flags.timeout_seconds);
    live->informers_->Start();
    if (!live->informers_->WaitForSync(deadline)) {
      return absl::DeadlineExceededError(
          "the informers did not sync: is the API server reachable and are the karpenter.sh CRDs "
          "installed?");
    }
    return live;
  }
  ~Live() {
    disruption_.reset();
    provisioner_.reset();
    if (informers_ != nullptr) informers_->Stop();
  }

  kube::Client& client() { return *client_; }
  state::Cluster& cluster() { return *cluster_; }
  state::ClusterInformers& informers() { return *informers_; }
  provisioning::Provisioner& provisioner() { return *provisioner_; }
  disruption::DisruptionController& disruption() { return *disruption_; }

 private:
  Live() = default;
  RealClock clock_;
  std::unique_ptr<kube::RestClient> rest_;
  kube::WriteGate gate_{&clock_};
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<state::Cluster> cluster_;
  std::unique_ptr<state::ClusterInformers> informers_;
  std::unique_ptr<cloudprovider::CloudProvider> cloud_;
  std::unique_ptr<controllers::Dependencies> deps_;
  std::unique_ptr<provisioning::Provisioner> provisioner_;
  std::unique_ptr<disruption::DisruptionController> disruption_;
};

std::string EventTime(const json& e) {
  if (e.contains("series") && e["series"].is_object()) {
    return e["series"].value("lastObservedTime", "");
  }
  std::string t = e.value("eventTime", "");
  if (t.empty() && e.contains("metadata")) t = e["metadata"].value("creationTimestamp", "");
  return t;
}

// Dovetail's latest event with one of `reasons` about the objects named `names`, as JSON
// {reason, type, note, time, decisionId}; null when there is none.
json LatestEvent(kube::Client& client, const std::string& ns, const std::vector<std::string>& names,
                 const std::vector<std::string>& reasons) {
  absl::StatusOr<kube::ListPage> page = client.List(kube::resources::kEvents, ns);
  if (!page.ok()) return nullptr;
  const json list = json::parse(page->body, nullptr, false);
  if (list.is_discarded() || !list.contains("items")) return nullptr;
  json best = nullptr;
  std::string best_time;
  for (const json& e : list["items"]) {
    if (!e.contains("regarding")) continue;
    // Dovetail's own events only (the kube-scheduler records FailedScheduling too).
    if (e.value("reportingController", "") != kReportingController) continue;
    const std::string name = e["regarding"].value("name", "");
    const std::string reason = e.value("reason", "");
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    if (std::find(reasons.begin(), reasons.end(), reason) == reasons.end()) continue;
    const std::string time = EventTime(e);
    if (!best.is_null() && time < best_time) continue;
    best_time = time;
    const std::string note = e.value("note", "");
    best = {{"reason", reason},
            {"type", e.value("type", "")},
            {"regarding", Cat(e["regarding"].value("kind", ""), "/", name)},
            {"note", note},
            {"time", time},
            {"decisionId", controllers::launch::DecisionIdOf(note)}};
  }
  return best;
}

std::string ResourcesText(const ResourceList& list) {
  std::string out;
  for (const auto& [name, q] : list) {
    if (name != "cpu" && name != "memory" && name != "pods") continue;
    CatTo(&out, out.empty() ? "" : ", ", name, "=", q.ToString());
  }
  return out;
}

absl::StatusOr<json> ExplainPod(Live& live, const std::string& target) {
  std::vector<std::string> parts = absl::StrSplit(target, '/');
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
    return absl::InvalidArgumentError(Cat("expected NAMESPACE/NAME, got \"", target, "\""));
  }
  const std::string& ns = parts[0];
  const std::string& name = parts[1];
  std::shared_ptr<const kube::PodInfo> info;
  for (const auto& p : live.informers().pods().store().List()) {
    if (p->meta.namespace_ != nullptr && *p->meta.namespace_ == ns && p->meta.name == name) {
      info = p;
    }
  }
  if (info == nullptr) return absl::NotFoundError(Cat("pod ", ns, "/", name, " not found"));
  json out = {{"pod", Cat(ns, "/", name)}};
  out["failedScheduling"] = LatestEvent(live.client(), ns, {name}, {"FailedScheduling"});
  out["nominated"] = LatestEvent(live.client(), ns, {name}, {"Nominated"});
  if (!info->node_name.empty()) {
    out["status"] = "bound";
    out["node"] = info->node_name;
    if (std::optional<state::StateNode> node = live.cluster().GetByNodeName(info->node_name)) {
      out["nodePool"] = node->NodePool();
      if (node->node_claim != nullptr) out["nodeClaim"] = node->node_claim->metadata.name;
    }
    return out;
  }
  const apis::core::Pod pod = state::ToPod(*info);
  // The provisioner's question, asked of this one pod.
  ASSIGN_OR_RETURN(scenario::Scenario scenario, live.provisioner().ReadScenario());
  scenario.pending_pods.clear();
  scenario::SolverQuestion pass =
      scenario::BuildSolverInput(scenario, live.provisioner().InputOptions());
  pass.input.pods = {&pod};
  pass.input.options.improve = false;
  ASSIGN_OR_RETURN(solver::Plan plan, solver::Solve(pass.input));
  out["status"] = "pending";
  json pools = json::array();
  for (const solver::PoolTemplate& t : pass.input.pools) {
    ResourceList largest;
    for (const auto& type : t.instance_types) {
      for (const auto& [res, q] : type->Allocatable()) {
        if (largest.find(res) == largest.end() || largest[res] < q) largest[res] = q;
      }
    }
    pools.push_back({{"nodePool", t.name},
                     {"instanceTypes", t.instance_types.size()},
                     {"largestAllocatable", ResourcesText(largest)}});
  }
  json skipped = json::array();
  for (const scenario::SkippedNodePool& s : pass.skipped) {
    skipped.push_back({{"nodePool", s.name}, {"reason", s.reason}});
  }
  out["nodePools"] = pools;
  out["skippedNodePools"] = skipped;
  if (!plan.existing.empty()) {
    out["verdict"] = "fits";
    out["existingNode"] = plan.existing.front().node;
  } else if (!plan.node_claims.empty()) {
    const solver::NewNodeClaim& c = plan.node_claims.front();
    out["verdict"] = "launchable";
    out["newNodeClaim"] = {{"nodePool", c.pool},
                           {"instanceType", c.instance_type},
                           {"zone", c.zone},
                           {"capacityType", c.capacity_type},
                           {"price", c.price}};
  } else {
    out["verdict"] = "unschedulable";
    json reasons = json::array();
    for (const solver::Unschedulable& u : plan.unschedulable) {
      for (absl::string_view r : absl::StrSplit(u.reason, "; ")) reasons.push_back(std::string(r));
    }
    out["reasons"] = reasons;
  }
  return out;
}

absl::StatusOr<json> ExplainNode(Live& live, const std::string& name) {
  ASSIGN_OR_RETURN(disruption::ClusterView view, live.disruption().BuildViewForExplain());
  const state::StateNode* node = nullptr;
  for (const state::StateNode& n : view.snapshot.nodes) {
    if (n.Name() == name) node = &n;
  }
  if (node == nullptr) return absl::NotFoundError(Cat("node ", name, " not found"));
  json out = {{"node", name}, {"nodePool", node->NodePool()}};
  std::string claim;
  if (node->node_claim != nullptr) {
    claim = node->node_claim->metadata.name;
    out["nodeClaim"] = claim;
    const auto& annotations = node->node_claim->metadata.annotations;
    auto it = annotations.find(std::string(controllers::launch::kDecisionIdAnnotationKey));
    if (it != annotations.end()) out["nodeClaimDecisionId"] = it->second;
  }
  if (node->marked_for_deletion) out["markedForDeletion"] = true;
  const disruption::Options options;
  json methods = json::array();
  for (disruption::Method method : disruption::kMethodOrder) {
    std::vector<disruption::Explanation> explanations;
    std::vector<disruption::Candidate> candidates =
        disruption::GetCandidates(view, method, options, &explanations);
    json m = {{"method", std::string(disruption::MethodName(method))}};
    bool candidate = false;
    for (const disruption::Candidate& c : candidates) candidate |= c.name == name;
    m["candidate"] = candidate;
    if (candidate) {
      const disruption::BudgetMapping budgets =
          disruption::BuildBudgetMapping(view, disruption::ReasonOf(method));
      const int64_t remaining = budgets.Remaining(node->NodePool());
      m["budgetRemaining"] = remaining;
      if (remaining <= 0) {
        m["blocked"] = Cat("the disruption budget of nodepool \"", node->NodePool(),
                           "\" allows 0 more disruptions for this reason now");
      }
    } else {
      for (const disruption::Explanation& e : explanations) {
        if (e.node == name) m["blocked"] = e.message;
      }
      if (!m.contains("blocked")) m["blocked"] = "not a candidate";
    }
    methods.push_back(m);
  }
  out["methods"] = methods;
  std::vector<std::string> names = {name};
  if (!claim.empty()) names.push_back(claim);
  out["lastDecision"] = LatestEvent(live.client(), "", names, {"DisruptionDecision"});
  out["lastBlocked"] =
      LatestEvent(live.client(), "", names, {"DisruptionBlocked", "Unconsolidatable"});
  return out;
}

void PrintEvent(const json& e, std::string_view label) {
  if (e.is_null()) return;
  std::cout << label << ": " << e.value("note", "") << "\n";
  if (!e.value("decisionId", "").empty()) std::cout << "  decision: " << e["decisionId"] << "\n";
}

void PrintPod(const json& o) {
  std::cout << "pod " << o["pod"].get<std::string>() << ": " << o["status"].get<std::string>();
  if (o["status"] == "bound") {
    std::cout << " to node " << o["node"].get<std::string>();
    if (o.contains("nodeClaim")) std::cout << " (nodeclaim " << o["nodeClaim"].get<std::string>();
    if (o.contains("nodePool")) std::cout << ", nodepool " << o["nodePool"].get<std::string>();
    if (o.contains("nodeClaim")) std::cout << ")";
    std::cout << "\n";
    return;
  }
  std::cout << "\n";
  const std::string verdict = o.value("verdict", "");
  if (verdict == "fits") {
    std::cout << "fits on existing node " << o["existingNode"].get<std::string>()
              << " (the kube-scheduler should bind it)\n";
  } else if (verdict == "launchable") {
    const json& c = o["newNodeClaim"];
    std::cout << "a new NodeClaim of nodepool \"" << c["nodePool"].get<std::string>()
              << "\" can host it (" << c["instanceType"].get<std::string>() << ", "
              << c["capacityType"].get<std::string>() << ", " << c["zone"].get<std::string>()
              << ")\n";
  } else {
    std::cout << "no nodepool can host it:\n";
    for (const json& r : o["reasons"]) std::cout << "  " << r.get<std::string>() << "\n";
  }
  for (const json& p : o["nodePools"]) {
    std::cout << "  nodepool \"" << p["nodePool"].get<std::string>()
              << "\": " << p["instanceTypes"].get<size_t>()
              << " instance types, largest allocatable "
              << p["largestAllocatable"].get<std::string>() << "\n";
  }
  for (const json& s : o["skippedNodePools"]) {
    std::cout << "  nodepool \"" << s["nodePool"].get<std::string>()
              << "\" not used: " << s["reason"].get<std::string>() << "\n";
  }
  PrintEvent(o["nominated"], "latest Nominated event");
  PrintEvent(o["failedScheduling"], "latest FailedScheduling event");
}

void PrintNode(const json& o) {
  std::cout << "node " << o["node"].get<std::string>();
  if (o.contains("nodeClaim")) std::cout << " (nodeclaim " << o["nodeClaim"].get<std::string>();
  std::cout << ", nodepool \"" << o["nodePool"].get<std::string>() << "\"";
  if (o.contains("nodeClaim")) std::cout << ")";
  std::cout << "\n";
  if (o.value("markedForDeletion", false)) std::cout << "  marked for deletion\n";
  for (const json& m : o["methods"]) {
    std::cout << "  " << m["method"].get<std::string>() << ": ";
    if (m["candidate"].get<bool>()) {
      std::cout << "candidate";
      if (m.contains("blocked")) std::cout << ", blocked: " << m["blocked"].get<std::string>();
    } else {
      std::cout << "not a candidate: " << m["blocked"].get<std::string>();
    }
    std::cout << "\n";
  }
  if (o.contains("nodeClaimDecisionId")) {
    std::cout << "nodeclaim decision: " << o["nodeClaimDecisionId"].get<std::string>() << "\n";
  }
  PrintEvent(o["lastDecision"], "last DisruptionDecision");
  PrintEvent(o["lastBlocked"], "last blocked event");
}

void Run(const ExplainFlags& flags, bool pod, ExitCode& exit_code) {
  if (flags.output != "text" && flags.output != "json") {
    std::cerr << "error: -o must be text or json\n";
    exit_code.value = 2;
    return;
  }
  (void)log::SetLevel("error");
  absl::StatusOr<std::unique_ptr<Live>> live = Live::Connect(flags);
  if (!live.ok()) {
    std::cerr << "error: " << live.status().message() << "\n";
    exit_code.value = 1;
    return;
  }
  absl::StatusOr<json> out =
      pod ? ExplainPod(**live, flags.target) : ExplainNode(**live, flags.target);
  if (!out.ok()) {
    std::cerr << "error: " << out.status().message() << "\n";
    exit_code.value = 1;
    return;
  }
  if (flags.output == "json") {
    std::cout << out->dump(2) << "\n";
  } else if (pod) {
    PrintPod(*out);
  } else {
    PrintNode(*out);
  }
}

void AddCommon(CLI::App* cmd, ExplainFlags* flags) {
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)");
  cmd->add_option("--cloud-provider", flags->cloud_provider,
                  "aws or kwok (default: the provider the NodePools' node classes belong to, else "
                  "DOVETAIL_CLOUD_PROVIDER)");
  cmd->add_option("--catalog", flags->catalog,
                  "instance-type catalog directory (aws: default the AWS catalog built in; kwok: "
                  "default synthetic)");
  cmd->add_option("-o,--output", flags->output, "text (default) or json");
  cmd->add_option("--timeout", flags->timeout_seconds, "seconds to wait for the informers");
}

}  // namespace

void RegisterExplainCommand(CLI::App& app, ExitCode& exit_code) {
  CLI::App* explain =
      app.add_subcommand("explain", "Why a pod is pending or a node is (not) disrupted");
  explain->require_subcommand(1);
  auto pod_flags = std::make_shared<ExplainFlags>();
  CLI::App* pod = explain->add_subcommand("pod", "Why a pod is pending (NAMESPACE/NAME)");
  pod->add_option("pod", pod_flags->target, "NAMESPACE/NAME")->required();
  AddCommon(pod, pod_flags.get());
  pod->callback([pod_flags, &exit_code] { Run(*pod_flags, true, exit_code); });
  auto node_flags = std::make_shared<ExplainFlags>();
  CLI::App* node =
      explain->add_subcommand("node", "Why a node is or is not a disruption candidate");
  node->add_option("node", node_flags->target, "node name")->required();
  AddCommon(node, node_flags.get());
  node->callback([node_flags, &exit_code] { Run(*node_flags, false, exit_code); });
}

}  // namespace dovetail::cli
