#include "dovetail/controllers/observability/status_condition_metrics_controller.h"

#include <utility>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/kube/resource.h"

namespace dovetail::controllers::observability {

namespace {

namespace core = apis::core;

// The object labels upstream adds (v1.NodeClassLabelKey of the AWS provider's EC2NodeClass,
// then v1.NodePoolLabelKey, then v1.NodeInitializedLabelKey for Nodes), and their Prometheus
// names.
constexpr std::string_view kClaimLabelKeys[] = {apis::v1::kLabelNodeClass,
                                                apis::v1::kNodePoolLabelKey};
constexpr std::string_view kNodeLabelKeys[] = {
    apis::v1::kLabelNodeClass, apis::v1::kNodePoolLabelKey, apis::v1::kNodeInitializedLabelKey};
// '/', '.' and '-' become '_': karpenter.sh/nodepool is karpenter_sh_nodepool.
template <size_t N>
std::vector<std::string> PrometheusLabelNames(const std::string_view (&keys)[N]) {
  std::vector<std::string> out;
  for (std::string_view key : keys) {
    std::string name(key);
    for (char& c : name) {
      if (c == '/' || c == '.' || c == '-') c = '_';
    }
    out.push_back(std::move(name));
  }
  return out;
}
const std::vector<std::string> kClaimLabelNames = PrometheusLabelNames(kClaimLabelKeys);
const std::vector<std::string> kNodeLabelNames = PrometheusLabelNames(kNodeLabelKeys);

// The metric names of one kind, spelled out so the names can be searched for.
struct FamilyNames {
  const char* count;
  const char* current_status_seconds;
  const char* transition_seconds;
  const char* transitions_total;
  const char* termination_current_time_seconds;
  const char* termination_duration_seconds;
};

struct KindSpec {
  FamilyNames names;
  const std::vector<std::string>* label_names;  // null: none
  bool exponential_buckets;                     // else Prometheus' defaults
  const char* group;                            // null: no kind-less series
  const char* kind;
};

const KindSpec& SpecOf(ConditionKind kind) {
  static const KindSpec kSpecs[kConditionKinds] = {
      {{"operator_nodeclaim_status_condition_count",
        "operator_nodeclaim_status_condition_current_status_seconds",
        "operator_nodeclaim_status_condition_transition_seconds",
        "operator_nodeclaim_status_condition_transitions_total",
        "operator_nodeclaim_termination_current_time_seconds",
        "operator_nodeclaim_termination_duration_seconds"},
       &kClaimLabelNames,
       true,
       "karpenter.sh",
       "NodeClaim"},
      {{"operator_nodepool_status_condition_count",
        "operator_nodepool_status_condition_current_status_seconds",
        "operator_nodepool_status_condition_transition_seconds",
        "operator_nodepool_status_condition_transitions_total",
        "operator_nodepool_termination_current_time_seconds",
        "operator_nodepool_termination_duration_seconds"},
       nullptr,
       true,
       "karpenter.sh",
       "NodePool"},
      {{"operator_node_status_condition_count",
        "operator_node_status_condition_current_status_seconds",
        "operator_node_status_condition_transition_seconds",
        "operator_node_status_condition_transitions_total",
        "operator_node_termination_current_time_seconds",
        "operator_node_termination_duration_seconds"},
       &kNodeLabelNames,
       true,
       nullptr,
       nullptr},
      {{"operator_ec2nodeclass_status_condition_count",
        "operator_ec2nodeclass_status_condition_current_status_seconds",
        "operator_ec2nodeclass_status_condition_transition_seconds",
        "operator_ec2nodeclass_status_condition_transitions_total",
        "operator_ec2nodeclass_termination_current_time_seconds",
        "operator_ec2nodeclass_termination_duration_seconds"},
       nullptr,
       false,
       "karpenter.k8s.aws",
       "EC2NodeClass"},
  };
  return kSpecs[static_cast<size_t>(kind)];
}

// client_golang's prometheus.DefBuckets.
std::vector<double> DefaultBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

// 0.5, 1, 2, ... 8192: what upstream's controllers.go passes for NodeClaims, NodePools, Nodes.
std::vector<double> ExponentialBuckets() {
  std::vector<double> out;
  double b = 0.5;
  for (int i = 0; i < 15; ++i, b *= 2) out.push_back(b);
  return out;
}

// Help texts as upstream's (status/metrics.go), so `# HELP` lines match.
constexpr char kHelpCount[] =
    "The number of a condition for a given object, type and status. e.g. Alarm := "
    "Available=False > 0";
constexpr char kHelpCurrent[] =
    "The current amount of time in seconds that a status condition has been in a specific "
    "state. Alarm := P99(Updated=Unknown) > 5 minutes";
constexpr char kHelpTransition[] =
    "The amount of time a condition was in a given state before transitioning. e.g. Alarm := "
    "P99(Updated=False) > 5 minutes";
constexpr char kHelpTransitions[] = "The count of transitions of a given object, type and status.";
constexpr char kHelpTerminating[] =
    "The current amount of time in seconds that an object has been in terminating state.";
constexpr char kHelpTermination[] =
    "The amount of time taken by an object to terminate completely.";

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>* b) {
  if (b != nullptr) a.insert(a.end(), b->begin(), b->end());
  return a;
}

std::string ObjectKey(const ConditionedObject& o) {
  return o.namespace_.empty() ? o.name : o.namespace_ + "/" + o.name;
}

std::string StatusName(core::ConditionStatus status) {
  return std::string(core::EnumNames(status)[static_cast<size_t>(status)]);
}

template <size_t N>
std::vector<std::string> ObjectLabelValues(const core::StringMap& labels,
                                           const std::string_view (&keys)[N]) {
  std::vector<std::string> out;
  for (std::string_view key : keys) {
    auto it = labels.find(key);
    out.push_back(it == labels.end() ? "" : it->second);
  }
  return out;
}

void AddConditions(const std::vector<core::Condition>& conditions, ConditionedObject& out) {
  for (const core::Condition& c : conditions) {
    out.conditions.push_back({c.type, StatusName(c.status), c.reason, c.last_transition_time});
  }
}

ConditionedObject FromMeta(const core::ObjectMeta& meta) {
  ConditionedObject out;
  out.namespace_ = meta.namespace_;
  out.name = meta.name;
  out.deletion = meta.deletion_timestamp;
  return out;
}

const ConditionedObject::Entry* FindEntry(const ConditionedObject& o, std::string_view type) {
  for (const ConditionedObject::Entry& e : o.conditions) {
    if (e.type == type) return &e;
  }
  return nullptr;
}

// Label values: `base`, then the object's extra labels.
metrics::LabelValues WithExtra(metrics::LabelValues base, const std::vector<std::string>& extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

}  // namespace

ConditionedObject FromNodeClaim(const apis::v1::NodeClaim& claim) {
  ConditionedObject out = FromMeta(claim.metadata);
  out.label_values = ObjectLabelValues(claim.metadata.labels, kClaimLabelKeys);
  AddConditions(claim.status.conditions, out);
  return out;
}

ConditionedObject FromNodePool(const apis::v1::NodePool& pool) {
  ConditionedObject out = FromMeta(pool.metadata);
  AddConditions(pool.status.conditions, out);
  return out;
}

ConditionedObject FromEC2NodeClass(const apis::aws::v1::EC2NodeClass& node_class) {
  ConditionedObject out = FromMeta(node_class.metadata);
  AddConditions(node_class.status.conditions, out);
  return out;
}

ConditionedObject FromNode(const kube::NodeInfo& node) {
  ConditionedObject out;
  out.namespace_ = node.meta.namespace_ == nullptr ? "" : *node.meta.namespace_;
  out.name = node.meta.name;
  out.deletion = node.meta.deletion;
  for (std::string_view key : kNodeLabelKeys) {
    const std::string* value = node.meta.Label(key);
    out.label_values.push_back(value == nullptr ? "" : *value);
  }
  // The compact Node keeps no reasons, and the lastTransitionTime of Ready only.
  for (const auto& [type, status] : node.conditions) {
    std::optional<absl::Time> transition;
    if (*type == "Ready") transition = node.ready_transition;
    out.conditions.push_back({*type, StatusName(status), "", transition});
  }
  return out;
}

StatusConditionMetrics::StatusConditionMetrics(metrics::Registry& registry) {
  for (size_t i = 0; i < kConditionKinds; ++i) {
    const KindSpec& spec = SpecOf(static_cast<ConditionKind>(i));
    const std::vector<double> buckets =
        spec.exponential_buckets ? ExponentialBuckets() : DefaultBuckets();
    Family& f = families_[i];
    f.count = &registry.NewGauge(
        spec.names.count, kHelpCount,
        Concat({"namespace", "name", "type", "status", "reason"}, spec.label_names));
    f.current_status_seconds = &registry.NewGauge(
        spec.names.current_status_seconds, kHelpCurrent,
        Concat({"namespace", "name", "type", "status", "reason"}, spec.label_names));
    f.transition_seconds =
        &registry.NewHistogram(spec.names.transition_seconds, kHelpTransition,
                               Concat({"type", "status"}, spec.label_names), buckets);
    f.transitions_total =
        &registry.NewCounter(spec.names.transitions_total, kHelpTransitions,
                             Concat({"type", "status", "reason"}, spec.label_names));
    f.termination_current_time_seconds =
        &registry.NewGauge(spec.names.termination_current_time_seconds, kHelpTerminating,
                           Concat({"namespace", "name"}, spec.label_names));
    f.termination_duration_seconds =
        &registry.NewHistogram(spec.names.termination_duration_seconds, kHelpTermination,
                               Concat({}, spec.label_names), buckets);
  }
  generic_.count =
      &registry.NewGauge("operator_status_condition_count", kHelpCount,
                         {"namespace", "name", "type", "status", "reason", "group", "kind"});
  generic_.current_status_seconds =
      &registry.NewGauge("operator_status_condition_current_status_seconds", kHelpCurrent,
                         {"namespace", "name", "type", "status", "reason", "group", "kind"});
  generic_.transition_seconds =
      &registry.NewHistogram("operator_status_condition_transition_seconds", kHelpTransition,
                             {"type", "status", "group", "kind"}, DefaultBuckets());
  generic_.transitions_total =
      &registry.NewCounter("operator_status_condition_transitions_total", kHelpTransitions,
                           {"type", "status", "reason", "group", "kind"});
  generic_.termination_current_time_seconds =
      &registry.NewGauge("operator_termination_current_time_seconds", kHelpTerminating,
                         {"namespace", "name", "group", "kind"});
  generic_.termination_duration_seconds =
      &registry.NewHistogram("operator_termination_duration_seconds", kHelpTermination,
                             {"group", "kind"}, DefaultBuckets());
}

void StatusConditionMetrics::Observe(ConditionKind kind, ConditionedObject object) {
  const KindSpec& spec = SpecOf(kind);
  Family& f = Of(kind);
  absl::MutexLock lock(&mu_);
  std::map<std::string, ConditionedObject>& seen = seen_[static_cast<size_t>(kind)];
  const std::string key = ObjectKey(object);
  auto it = seen.find(key);
  const ConditionedObject* before = it == seen.end() ? nullptr : &it->second;
  for (const ConditionedObject::Entry& now : object.conditions) {
    const ConditionedObject::Entry* was =
        before == nullptr ? nullptr : FindEntry(*before, now.type);
    // A condition not seen before reads as Unknown (upstream's GetStatus of a nil condition).
    if ((was == nullptr ? "Unknown" : was->status) == now.status) continue;
    f.transitions_total->Inc(WithExtra({now.type, now.status, now.reason}, object.label_values));
    if (spec.group != nullptr) {
      generic_.transitions_total->Inc({now.type, now.status, now.reason, spec.group, spec.kind});
    }
    if (was == nullptr || !was->last_transition.has_value() || !now.last_transition.has_value()) {
      continue;
    }
    const double seconds = absl::ToDoubleSeconds(*now.last_transition - *was->last_transition);
    f.transition_seconds->Observe(WithExtra({was->type, was->status}, object.label_values),
                                  seconds);
    if (spec.group != nullptr) {
      generic_.transition_seconds->Observe({was->type, was->status, spec.group, spec.kind},
                                           seconds);
    }
  }
  seen.insert_or_assign(key, std::move(object));
}

void StatusConditionMetrics::Gone(ConditionKind kind, const ConditionedObject& last,
                                  absl::Time now) {
  const KindSpec& spec = SpecOf(kind);
  Family& f = Of(kind);
  absl::MutexLock lock(&mu_);
  std::map<std::string, ConditionedObject>& seen = seen_[static_cast<size_t>(kind)];
  auto it = seen.find(ObjectKey(last));
  const ConditionedObject& known = it == seen.end() ? last : it->second;
  const std::optional<absl::Time> deletion =
      known.deletion.has_value() ? known.deletion : last.deletion;
  if (deletion.has_value()) {
    const double seconds = absl::ToDoubleSeconds(now - *deletion);
    f.termination_duration_seconds->Observe(known.label_values, seconds);
    if (spec.group != nullptr) {
      generic_.termination_duration_seconds->Observe({spec.group, spec.kind}, seconds);
    }
  }
  if (it != seen.end()) seen.erase(it);
}

void StatusConditionMetrics::Export(absl::Time now) {
  using Samples = std::map<metrics::LabelValues, double>;
  std::array<Samples, kConditionKinds> count, current, terminating;
  Samples generic_count, generic_current, generic_terminating;
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < kConditionKinds; ++i) {
      const KindSpec& spec = SpecOf(static_cast<ConditionKind>(i));
      for (const auto& [key, o] : seen_[i]) {
        for (const ConditionedObject::Entry& c : o.conditions) {
          const metrics::LabelValues labels = {o.namespace_, o.name, c.type, c.status, c.reason};
          count[i][WithExtra(labels, o.label_values)] = 1;
          if (spec.group != nullptr) generic_count[WithExtra(labels, {spec.group, spec.kind})] = 1;
          if (!c.last_transition.has_value()) continue;
          const double seconds = absl::ToDoubleSeconds(now - *c.last_transition);
          current[i][WithExtra(labels, o.label_values)] = seconds;
          if (spec.group != nullptr) {
            generic_current[WithExtra(labels, {spec.group, spec.kind})] = seconds;
          }
        }
        if (!o.deletion.has_value()) continue;
        const double seconds = absl::ToDoubleSeconds(now - *o.deletion);
        terminating[i][WithExtra({o.namespace_, o.name}, o.label_values)] = seconds;
        if (spec.group != nullptr) {
          generic_terminating[{o.namespace_, o.name, spec.group, spec.kind}] = seconds;
        }
      }
    }
  }
  for (size_t i = 0; i < kConditionKinds; ++i) {
    families_[i].count->Replace(std::move(count[i]));
    families_[i].current_status_seconds->Replace(std::move(current[i]));
    families_[i].termination_current_time_seconds->Replace(std::move(terminating[i]));
  }
  generic_.count->Replace(std::move(generic_count));
  generic_.current_status_seconds->Replace(std::move(generic_current));
  generic_.termination_current_time_seconds->Replace(std::move(generic_terminating));
}

void StatusConditionMetrics::Clear() {
  {
    absl::MutexLock lock(&mu_);
    for (auto& seen : seen_) seen.clear();
  }
  for (Family* f : {&families_[0], &families_[1], &families_[2], &families_[3], &generic_}) {
    f->count->Replace({});
    f->current_status_seconds->Replace({});
    f->termination_current_time_seconds->Replace({});
  }
}

StatusConditionMetricsController::StatusConditionMetricsController(
    const Dependencies& deps, StatusConditionMetricsOptions options)
    : deps_(deps),
      options_(std::move(options)),
      node_pools_(deps.informers.node_pools()),
      loop_(kube::WorkQueueOptions{}.WithMetrics(Name(), deps_.metrics), options_.period, [this] {
        Collect();
        return absl::OkStatus();
      }) {
  if (deps_.metrics == nullptr) return;
  metrics_ = std::make_unique<StatusConditionMetrics>(*deps_.metrics);
  registrations_.push_back(deps_.informers.node_claims().AddHandler({
      .on_add = [this](const auto& o) { OnChange(ConditionKind::kNodeClaim, *o); },
      .on_update = [this](const auto&, const auto& o) { OnChange(ConditionKind::kNodeClaim, *o); },
      .on_delete = [this](const auto& o) { OnGone(ConditionKind::kNodeClaim, *o); },
  }));
  registrations_.push_back(deps_.informers.nodes().AddHandler({
      .on_add = [this](const auto& o) { OnChange(ConditionKind::kNode, *o); },
      .on_update = [this](const auto&, const auto& o) { OnChange(ConditionKind::kNode, *o); },
      .on_delete = [this](const auto& o) { OnGone(ConditionKind::kNode, *o); },
  }));
  registrations_.push_back(node_pools_.AddHandler({
      .on_add = [this](const auto& o) { OnChange(ConditionKind::kNodePool, *o); },
      .on_update = [this](const auto&, const auto& o) { OnChange(ConditionKind::kNodePool, *o); },
      .on_delete = [this](const auto& o) { OnGone(ConditionKind::kNodePool, *o); },
  }));
  if (options_.ec2_node_classes) {
    node_classes_ = std::make_unique<EC2NodeClassInformer>(
        deps_.client, kube::resources::kEC2NodeClasses,
        kube::ApiObjectCodec<apis::aws::v1::EC2NodeClass>{},
        options_.informer_options.WithReporting(deps_.metrics, deps_.undecodable));
    registrations_.push_back(node_classes_->AddHandler({
        .on_add = [this](const auto& o) { OnChange(ConditionKind::kEC2NodeClass, *o); },
        .on_update = [this](const auto&,
                            const auto& o) { OnChange(ConditionKind::kEC2NodeClass, *o); },
        .on_delete = [this](const auto& o) { OnGone(ConditionKind::kEC2NodeClass, *o); },
    }));
  }
}

StatusConditionMetricsController::~StatusConditionMetricsController() {
  Stop();
  if (node_classes_ != nullptr) node_classes_->Stop();
}

namespace {

ConditionedObject ToConditioned(const apis::v1::NodeClaim& o) { return FromNodeClaim(o); }
ConditionedObject ToConditioned(const apis::v1::NodePool& o) { return FromNodePool(o); }
ConditionedObject ToConditioned(const kube::NodeInfo& o) { return FromNode(o); }
ConditionedObject ToConditioned(const apis::aws::v1::EC2NodeClass& o) {
  return FromEC2NodeClass(o);
}

}  // namespace

template <typename T>
void StatusConditionMetricsController::OnChange(ConditionKind kind, const T& object) {
  absl::MutexLock lock(&observe_mu_);
  if (started_) metrics_->Observe(kind, ToConditioned(object));
}

template <typename T>
void StatusConditionMetricsController::OnGone(ConditionKind kind, const T& object) {
  absl::MutexLock lock(&observe_mu_);
  if (started_) metrics_->Gone(kind, ToConditioned(object), deps_.clock.Now());
}

void StatusConditionMetricsController::Start() {
  if (metrics_ == nullptr) return;
  if (node_classes_ != nullptr) node_classes_->Start();
  {
    absl::MutexLock lock(&observe_mu_);
    started_ = true;
  }
  loop_.Start();
}

void StatusConditionMetricsController::Stop() {
  loop_.Stop();
  if (metrics_ == nullptr) return;
  absl::MutexLock lock(&observe_mu_);
  started_ = false;
  metrics_->Clear();
}

void StatusConditionMetricsController::Collect() {
  if (metrics_ == nullptr) return;
  {
    absl::MutexLock lock(&observe_mu_);
    deps_.informers.node_claims().store().ForEach([this](const apis::v1::NodeClaim& o) {
      metrics_->Observe(ConditionKind::kNodeClaim, FromNodeClaim(o));
    });
    deps_.informers.nodes().store().ForEach(
        [this](const kube::NodeInfo& o) { metrics_->Observe(ConditionKind::kNode, FromNode(o)); });
    node_pools_.store().ForEach([this](const apis::v1::NodePool& o) {
      metrics_->Observe(ConditionKind::kNodePool, FromNodePool(o));
    });
    if (node_classes_ != nullptr) {
      node_classes_->store().ForEach([this](const apis::aws::v1::EC2NodeClass& o) {
        metrics_->Observe(ConditionKind::kEC2NodeClass, FromEC2NodeClass(o));
      });
    }
  }
  metrics_->Export(deps_.clock.Now());
}

}  // namespace dovetail::controllers::observability
