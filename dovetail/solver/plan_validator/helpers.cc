// The plan validator's shared free functions (validator.h).
#include "dovetail/apis/v1/labels.h"
#include "dovetail/solver/plan_validator/validator.h"

namespace dovetail::solver::plan_validator {

void Accumulate(ResourceAmounts& into, const ResourceList& list) {
  for (const auto& [name, q] : list) into[name] = SaturatingAdd(into[name], q.MilliValue());
}

int64_t AmountOf(const ResourceList& list, const std::string& name) {
  auto it = list.find(name);
  return it == list.end() ? 0 : it->second.MilliValue();
}

std::string FormatAmount(const std::string& name, int64_t milli) {
  const bool binary = name == "memory" || name == "ephemeral-storage";
  return Quantity::FromMilli(milli, binary ? QuantityFormat::kBinarySI : QuantityFormat::kDecimalSI)
      .ToString();
}

std::string PodName(const Pod& p) {
  return absl::StrCat(p.metadata.namespace_, "/", p.metadata.name);
}

std::string PodSubject(const Pod& p) { return absl::StrCat("pod ", PodName(p)); }

const std::string* Lookup(const apis::core::StringMap& labels, std::string_view key) {
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &it->second;
}

// A NodeSelectorRequirement evaluated against a node's labels, as Kubernetes does: a missing label
// only satisfies NotIn and DoesNotExist.
bool LabelsSatisfy(const Requirement& r, const apis::core::StringMap& labels) {
  const std::string* v = Lookup(labels, r.key());
  if (v == nullptr) {
    auto op = r.Operator();
    return op == apis::core::SelectorOperator::kNotIn ||
           op == apis::core::SelectorOperator::kDoesNotExist;
  }
  return r.Has(*v);
}

// The first requirement the labels do not satisfy, or nullptr.
const Requirement* FirstUnsatisfied(const Requirements& reqs, const apis::core::StringMap& labels) {
  for (const Requirement& r : reqs) {
    if (!LabelsSatisfy(r, labels)) return &r;
  }
  return nullptr;
}

std::string DescribeLabel(const apis::core::StringMap& labels, const std::string& key) {
  const std::string* v = Lookup(labels, key);
  return v == nullptr ? absl::StrCat(key, " (absent)") : absl::StrCat(key, "=", *v);
}

// Pod keys are matched against nodes after Karpenter's key normalisation (the nodes Dovetail
// builds carry the GA keys only).
NodeSelectorTerm NormalizeTerm(NodeSelectorTerm t) {
  for (auto& e : t.match_expressions) e.key = std::string(apis::v1::NormalizeLabelKey(e.key));
  return t;
}

bool Wildcard(const std::string& ip) { return ip.empty() || ip == "0.0.0.0" || ip == "::"; }

bool PortsConflict(const PortUse& a, const PortUse& b) {
  if (a.port != b.port || a.protocol != b.protocol) return false;
  return Wildcard(a.ip) || Wildcard(b.ip) || a.ip == b.ip;
}

void AppendPorts(const apis::core::PodSpec& spec, const std::string& owner, bool from_plan,
                 std::vector<PortUse>* out) {
  for (const auto& c : spec.containers) {
    for (const auto& p : c.ports) {
      if (p.host_port <= 0) continue;
      out->push_back(
          {p.host_ip, p.host_port, p.protocol.value_or(Protocol::kTCP), owner, from_plan});
    }
  }
}

std::string ProtocolName(Protocol p) {
  switch (p) {
    case Protocol::kTCP:
      return "TCP";
    case Protocol::kUDP:
      return "UDP";
    case Protocol::kSCTP:
      return "SCTP";
  }
  return "?";
}

void AddLabelKeys(const Pod& owner, const std::vector<std::string>& keys, LabelSelectorOperator op,
                  LabelSelector* selector) {
  for (const auto& k : keys) {
    const std::string* v = Lookup(owner.metadata.labels, k);
    if (v != nullptr) selector->match_expressions.push_back({k, op, {*v}});
  }
}

Term ResolveTerm(const Pod& owner, const PodAffinityTerm& t,
                 const absl::flat_hash_map<std::string, apis::core::StringMap>& ns_labels) {
  Term out;
  out.key = std::string(apis::v1::NormalizeLabelKey(t.topology_key));
  if (t.label_selector) {
    out.selector = *t.label_selector;
    AddLabelKeys(owner, t.match_label_keys, LabelSelectorOperator::kIn, &*out.selector);
    AddLabelKeys(owner, t.mismatch_label_keys, LabelSelectorOperator::kNotIn, &*out.selector);
  }
  for (const auto& n : t.namespaces) out.namespaces.names.insert(n);
  if (t.namespace_selector) {
    if (t.namespace_selector->match_labels.empty() &&
        t.namespace_selector->match_expressions.empty()) {
      out.namespaces.all = true;
    } else {
      for (const auto& [name, labels] : ns_labels) {
        if (scheduling::Matches(*t.namespace_selector, labels)) out.namespaces.names.insert(name);
      }
    }
  } else if (t.namespaces.empty()) {
    out.namespaces.names.insert(owner.metadata.namespace_);
  }
  return out;
}

// The labels a node launched as (type, offering) for claim `c` carries.
apis::core::StringMap LaunchLabels(const apis::core::StringMap& base, const NewNodeClaim& c,
                                   const PoolTemplate* pool, const InstanceType& type,
                                   const Offering& offering) {
  apis::core::StringMap labels = base;
  for (const auto& [k, v] : type.requirements().SingleValuedLabels()) labels[k] = v;
  labels[std::string(v1::kLabelInstanceType)] = type.name();
  labels[std::string(v1::kLabelTopologyZone)] = offering.zone;
  labels[std::string(v1::kCapacityTypeLabelKey)] = offering.capacity_type;
  if (const Requirement* id = offering.requirements.Find(v1::kLabelTopologyZoneId);
      id != nullptr && !id->complement() && id->values().size() == 1) {
    labels[std::string(v1::kLabelTopologyZoneId)] = id->values().front();
  }
  if (pool != nullptr) {
    for (const auto& [k, v] : pool->labels) labels[k] = v;
    labels[std::string(v1::kNodePoolLabelKey)] = pool->name;
  }
  labels[std::string(v1::kLabelHostname)] = c.hostname;
  return labels;
}

bool HasKeyForLaunch(const Requirements& r, const std::string& key) {
  if (key == v1::kLabelHostname || key == v1::kLabelTopologyZone ||
      key == v1::kCapacityTypeLabelKey) {
    return true;
  }
  const Requirement* req = r.Find(key);
  if (req == nullptr) return false;
  return req->complement() ? req->Operator() == apis::core::SelectorOperator::kExists ||
                                 req->Operator() == apis::core::SelectorOperator::kNotIn
                           : !req->values().empty();
}

}  // namespace dovetail::solver::plan_validator
