// Validator: accounting, the existing nodes and each NodeClaim as planned.
#include "dovetail/solver/plan_validator/validator.h"

namespace dovetail::solver::plan_validator {

void Validator::CheckAccounting() {
  for (const Pod* p : in_.pods) {
    if (p != nullptr) input_pods_.insert(p);
  }
  absl::flat_hash_map<const Pod*, int> seen;
  auto note = [&](const Pod* p, const std::string& where) {
    if (p == nullptr) {
      Report(ViolationKind::kUnknownPod, "plan", absl::StrCat("null pod ", where));
      return;
    }
    if (!input_pods_.contains(p)) {
      Report(ViolationKind::kUnknownPod, PodSubject(*p),
             absl::StrCat("is not one of the input pods but appears ", where));
      return;
    }
    if (++seen[p] == 2) {
      Report(ViolationKind::kPodDuplicated, PodSubject(*p),
             absl::StrCat("appears more than once (again ", where, ")"));
    }
  };
  for (const auto& c : plan_.node_claims) {
    for (const Pod* p : c.pods) note(p, absl::StrCat("on nodeclaim ", c.hostname));
  }
  for (const auto& e : plan_.existing) {
    for (const Pod* p : e.pods) note(p, absl::StrCat("on node ", e.node));
  }
  for (const auto& u : plan_.unschedulable) {
    note(u.pod, "as unschedulable");
    if (u.pod != nullptr && u.reason.empty()) {
      Report(ViolationKind::kMissingReason, PodSubject(*u.pod),
             "is unschedulable without a reason");
    }
  }
  for (const Pod* p : in_.pods) {
    if (p != nullptr && !seen.contains(p)) {
      Report(ViolationKind::kPodMissing, PodSubject(*p),
             "is neither placed nor reported unschedulable");
    }
  }
}

void Validator::BuildExistingNodes() {
  for (const auto& n : in_.nodes) {
    NodeInfo info;
    info.name = n.name;
    info.subject = absl::StrCat("node ", n.name);
    info.labels = n.labels;
    if (!info.labels.contains(v1::kLabelHostname)) {
      info.labels[std::string(v1::kLabelHostname)] = n.name;
    }
    for (const auto& t : n.taints) {
      // Karpenter ignores startup and known-ephemeral taints of nodes that are not initialized.
      if (!n.initialized && (scheduling::IsKnownEphemeralTaint(t) ||
                             std::find(n.startup_taint_keys.begin(), n.startup_taint_keys.end(),
                                       t.key) != n.startup_taint_keys.end())) {
        continue;
      }
      info.taints.push_back(t);
    }
    info.allocatable = n.allocatable;
    auto pool = pools_.find(n.node_pool);
    if (pool != pools_.end()) info.pool = pool->second;
    node_by_name_.emplace(n.name, static_cast<int>(nodes_.size()));
    nodes_.push_back(std::move(info));
  }
}

void Validator::BuildClaims() {
  absl::flat_hash_set<std::string> hostnames;
  for (const auto& n : nodes_) hostnames.insert(n.labels.at(std::string(v1::kLabelHostname)));
  for (size_t ci = 0; ci < plan_.node_claims.size(); ++ci) {
    const NewNodeClaim& c = plan_.node_claims[ci];
    NodeInfo info;
    info.claim = static_cast<int>(ci);
    info.name = c.hostname;
    info.subject = absl::StrCat("nodeclaim ", c.hostname);
    if (c.hostname.empty() || !hostnames.insert(c.hostname).second) {
      Report(ViolationKind::kNodeMetadata, info.subject,
             "hostname is empty or not unique among the cluster's nodes");
    }
    auto pool = pools_.find(c.pool);
    if (pool == pools_.end()) {
      Report(ViolationKind::kUnknownPool, info.subject,
             absl::StrCat("belongs to nodepool \"", c.pool, "\", which is not in the input"));
    } else {
      info.pool = pool->second;
    }
    if (c.pods.empty()) {
      Report(ViolationKind::kEmptyNodeClaim, info.subject, "has no pods");
    }
    CheckClaim(ci, info);
    claim_node_.push_back(static_cast<int>(nodes_.size()));
    nodes_.push_back(std::move(info));
  }
}

void Validator::CheckClaim(size_t ci, NodeInfo& node) {
  const NewNodeClaim& c = plan_.node_claims[ci];
  CheckClaimTaints(c, node);
  const ClaimOptions options = CheckOptions(c, node.pool, node.subject);
  node.type = options.chosen;
  const Offering* offering = CheckChosenOffering(c, options, node.subject);
  SetClaimLabels(c, options, offering, node);
  CheckMinValues(c, node.pool, node.subject);
}

void Validator::CheckClaimTaints(const NewNodeClaim& c, NodeInfo& node) {
  const PoolTemplate* pool = node.pool;
  const std::string& subj = node.subject;
  // The pool's taints must be on the node; both sets count for scheduling.
  node.taints = c.taints;
  if (pool != nullptr) {
    for (const auto& t : pool->taints) {
      if (std::find(c.taints.begin(), c.taints.end(), t) == c.taints.end()) {
        Report(ViolationKind::kNodeMetadata, subj,
               absl::StrCat("lacks the nodepool's taint ", scheduling::TaintToString(t)));
        node.taints.push_back(t);
      }
    }
  }
}

Validator::ClaimOptions Validator::CheckOptions(const NewNodeClaim& c, const PoolTemplate* pool,
                                                const std::string& subj) {
  if (c.instance_types.empty()) {
    Report(ViolationKind::kInstanceType, subj, "has no instance type options");
  }
  if (c.instance_types.size() > in_.options.max_instance_types) {
    Report(ViolationKind::kInstanceType, subj,
           absl::StrCat("lists ", c.instance_types.size(),
                        " instance types, more than the maximum ", in_.options.max_instance_types));
  }
  absl::flat_hash_set<std::string> pool_types;
  if (pool != nullptr) {
    for (const auto& t : pool->instance_types) {
      if (t != nullptr) pool_types.insert(t->name());
    }
  }
  ClaimOptions out;
  if (pool != nullptr) out.overhead = pool->node_overhead_per_hour;
  const InstanceType*& chosen = out.chosen;
  std::vector<const InstanceType*>& usable = out.usable;
  std::vector<double> option_price;
  double& cheapest = out.cheapest;
  std::string& cheapest_desc = out.cheapest_desc;
  for (const auto& t : c.instance_types) {
    if (t == nullptr) {
      Report(ViolationKind::kInstanceType, subj, "has a null instance type option");
      option_price.push_back(std::numeric_limits<double>::infinity());
      continue;
    }
    if (t->name() == c.instance_type) chosen = t.get();
    if (pool != nullptr && !pool_types.contains(t->name())) {
      Report(ViolationKind::kInstanceType, subj,
             absl::StrCat("option ", t->name(), " is not an instance type of nodepool ", c.pool));
    }
    if (absl::Status s = t->requirements().Intersects(c.requirements); !s.ok()) {
      Report(ViolationKind::kInstanceType, subj,
             absl::StrCat("option ", t->name(),
                          " is incompatible with the claim's requirements: ", s.message()));
      option_price.push_back(std::numeric_limits<double>::infinity());
      continue;
    }
    if (pool != nullptr) {
      if (absl::Status s = t->requirements().Intersects(pool->requirements); !s.ok()) {
        Report(ViolationKind::kInstanceType, subj,
               absl::StrCat("option ", t->name(),
                            " is incompatible with the nodepool's requirements: ", s.message()));
      }
    }
    double best = std::numeric_limits<double>::infinity();
    for (const auto& o : t->offerings()) {
      if (!o.available || !cloudprovider::RequirementsIntersect(o.requirements, c.requirements)) {
        continue;
      }
      best = std::min(best, o.EffectivePrice());
      if (o.EffectivePrice() + out.overhead < cheapest) {
        cheapest = o.EffectivePrice() + out.overhead;
        cheapest_desc = absl::StrCat(t->name(), " ", o.capacity_type, " in ", o.zone);
      }
    }
    option_price.push_back(best);
    if (std::isinf(best)) {
      Report(ViolationKind::kInstanceType, subj,
             absl::StrCat("option ", t->name(),
                          " has no available offering the claim's requirements admit"));
      continue;
    }
    usable.push_back(t.get());
  }
  for (size_t i = 1; i < option_price.size(); ++i) {
    if (std::isinf(option_price[i]) || std::isinf(option_price[i - 1])) continue;  // reported
    if (option_price[i] + kPriceEpsilon < option_price[i - 1]) {
      Report(
          ViolationKind::kOffering, subj,
          absl::StrCat("options are not ordered cheapest first (", c.instance_types[i - 1]->name(),
                       " before ", c.instance_types[i]->name(), ")"));
      break;
    }
  }
  if (chosen == nullptr) {
    Report(ViolationKind::kInstanceType, subj,
           absl::StrCat("instance type \"", c.instance_type, "\" is not one of its options"));
    // Fall back to the pool's type of that name so the rest can still be checked.
    if (pool != nullptr) {
      for (const auto& t : pool->instance_types) {
        if (t != nullptr && t->name() == c.instance_type) chosen = t.get();
      }
    }
  }

  return out;
}

const Offering* Validator::CheckChosenOffering(const NewNodeClaim& c, const ClaimOptions& options,
                                               const std::string& subj) {
  const InstanceType* chosen = options.chosen;
  const Offering* offering = nullptr;
  if (chosen != nullptr) {
    for (const auto& o : chosen->offerings()) {
      if (o.zone != c.zone || o.capacity_type != c.capacity_type || !o.available) continue;
      const double expected = c.effective_price - options.overhead;
      if (offering == nullptr || std::abs(o.EffectivePrice() - expected) <
                                     std::abs(offering->EffectivePrice() - expected)) {
        offering = &o;
      }
    }
    if (offering == nullptr) {
      Report(ViolationKind::kOffering, subj,
             absl::StrCat(c.instance_type, " has no available ", c.capacity_type, " offering in ",
                          c.zone));
    } else {
      if (!cloudprovider::RequirementsIntersect(offering->requirements, c.requirements)) {
        Report(ViolationKind::kOffering, subj,
               absl::StrCat("offering ", c.capacity_type, " in ", c.zone,
                            " is not admitted by the claim's requirements"));
      }
      if (std::abs(offering->price - c.price) > kPriceEpsilon) {
        Report(ViolationKind::kPrice, subj,
               absl::StrCat("price ", c.price, " differs from the offering's price ",
                            offering->price));
      }
      const double effective = offering->EffectivePrice() + options.overhead;
      if (std::abs(effective - c.effective_price) > kPriceEpsilon) {
        Report(ViolationKind::kPrice, subj,
               absl::StrCat("effective price ", c.effective_price,
                            " differs from the offering's effective price plus the pool's "
                            "node overhead, ",
                            effective));
      }
    }
  }
  if (c.effective_price > options.cheapest + kPriceEpsilon) {
    Report(ViolationKind::kOffering, subj,
           absl::StrCat("is priced at ", c.effective_price,
                        " (effective) but a cheaper admissible offering exists: ",
                        options.cheapest_desc, " at ", options.cheapest));
  }

  return offering;
}

void Validator::SetClaimLabels(const NewNodeClaim& c, const ClaimOptions& options,
                               const Offering* offering, NodeInfo& node) {
  const PoolTemplate* pool = node.pool;
  const std::string& subj = node.subject;
  const InstanceType* chosen = options.chosen;
  // Labels of the node as planned, and of every other way it may be launched.
  apis::core::StringMap base = c.labels;
  if (chosen != nullptr) {
    for (const auto& [k, v] : chosen->requirements().SingleValuedLabels()) base.erase(k);
  }
  for (auto key : {v1::kLabelInstanceType, v1::kLabelTopologyZone, v1::kCapacityTypeLabelKey,
                   v1::kLabelTopologyZoneId}) {
    base.erase(std::string(key));
  }
  if (chosen != nullptr) {
    Offering fallback = Offering::Make(c.capacity_type, c.zone, "", c.price, true);
    node.labels = LaunchLabels(base, c, pool, *chosen, offering != nullptr ? *offering : fallback);
    node.allocatable = chosen->Allocatable();
  } else {
    node.labels = c.labels;
    node.labels[std::string(v1::kLabelHostname)] = c.hostname;
  }
  for (const auto& [k, v] : node.labels) {
    if (k == v1::kLabelTopologyZoneId) continue;  // not a label the plan must report
    const std::string* reported = Lookup(c.labels, k);
    if (reported == nullptr || *reported != v) {
      Report(ViolationKind::kNodeMetadata, subj,
             absl::StrCat("label ", k, " is ", reported == nullptr ? "absent" : *reported,
                          " but the node will carry ", v));
    }
  }
  if (const Requirement* r = FirstUnsatisfied(c.requirements, node.labels); r != nullptr) {
    Report(ViolationKind::kNodeMetadata, subj,
           absl::StrCat("node label ", DescribeLabel(node.labels, r->key()),
                        " does not satisfy the claim's requirement ", r->DebugString()));
  }
  if (pool != nullptr) {
    if (const Requirement* r = FirstUnsatisfied(pool->requirements, node.labels); r != nullptr) {
      Report(ViolationKind::kNodeMetadata, subj,
             absl::StrCat("node label ", DescribeLabel(node.labels, r->key()),
                          " does not satisfy the nodepool's requirement ", r->DebugString()));
    }
  }
  for (const InstanceType* t : options.usable) {
    for (const auto& o : t->offerings()) {
      if (!o.available || !cloudprovider::RequirementsIntersect(o.requirements, c.requirements)) {
        continue;
      }
      if (t == chosen && offering != nullptr && o.zone == offering->zone &&
          o.capacity_type == offering->capacity_type) {
        continue;
      }
      node.variants.push_back({t, &o, LaunchLabels(base, c, pool, *t, o)});
    }
  }
}

void Validator::CheckMinValues(const NewNodeClaim& c, const PoolTemplate* pool,
                               const std::string& subj) {
  // The options must jointly offer enough distinct values.
  auto check_min_values = [&](const Requirements& reqs, const char* whose) {
    for (const Requirement& r : reqs) {
      if (!r.min_values()) continue;
      absl::flat_hash_set<std::string> values;
      for (const auto& t : c.instance_types) {
        if (t == nullptr) continue;
        const Requirement* tr = t->requirements().Find(r.key());
        if (tr == nullptr || tr->complement()) continue;
        for (const auto& v : tr->values()) {
          if (r.Has(v)) values.insert(v);
        }
      }
      if (static_cast<int64_t>(values.size()) >= *r.min_values()) continue;
      if (in_.options.min_values_strict || !c.min_values_relaxed) {
        Report(
            ViolationKind::kMinValues, subj,
            absl::StrCat("options offer ", values.size(), " distinct values of ", r.key(),
                         ", fewer than the ", whose, " minValues ", *r.min_values(),
                         in_.options.min_values_strict ? "" : " (and it is not marked relaxed)"));
      }
    }
  };
  check_min_values(c.requirements, "claim's");
  if (pool != nullptr) check_min_values(pool->requirements, "nodepool's");
}

}  // namespace dovetail::solver::plan_validator
