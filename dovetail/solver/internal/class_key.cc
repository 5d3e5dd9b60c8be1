#include "dovetail/solver/internal/class_key.h"

#include "absl/strings/str_cat.h"

namespace dovetail::solver::internal {

namespace {

using apis::core::LabelSelector;

// Appends a compact, unambiguous encoding of the scheduling-relevant parts of a pod spec (node
// affinity, pod (anti-)affinity, tolerations, topology spread) to `key`: pods with equal keys are
// interchangeable for the solver. Length-free separators are safe because the separator bytes
// (0x1c-0x1f) cannot appear in label keys, values or names.
void AppendSelector(const LabelSelector& sel, std::string* key) {
  for (const auto& [k, v] : sel.match_labels) absl::StrAppend(key, k, "=", v, "\x1c");
  for (const auto& e : sel.match_expressions) {
    absl::StrAppend(key, e.key, "\x1d", static_cast<int>(e.op), "\x1d");
    for (const auto& v : e.values) absl::StrAppend(key, v, ",");
    absl::StrAppend(key, "\x1c");
  }
}

void AppendNodeTerm(const apis::core::NodeSelectorTerm& t, std::string* key) {
  for (const auto* list : {&t.match_expressions, &t.match_fields}) {
    for (const auto& e : *list) {
      absl::StrAppend(key, e.key, "\x1d", static_cast<int>(e.op), "\x1d");
      for (const auto& v : e.values) absl::StrAppend(key, v, ",");
      absl::StrAppend(key, "\x1c");
    }
    absl::StrAppend(key, "|");
  }
}

void AppendPodTerm(const apis::core::PodAffinityTerm& t, std::string* key) {
  absl::StrAppend(key, t.topology_key, "\x1d", t.label_selector ? "s" : "-");
  if (t.label_selector) AppendSelector(*t.label_selector, key);
  absl::StrAppend(key, "\x1d");
  for (const auto& n : t.namespaces) absl::StrAppend(key, n, ",");
  absl::StrAppend(key, "\x1d", t.namespace_selector ? "s" : "-");
  if (t.namespace_selector) AppendSelector(*t.namespace_selector, key);
  for (const auto& k : t.match_label_keys) absl::StrAppend(key, "+", k);
  for (const auto& k : t.mismatch_label_keys) absl::StrAppend(key, "-", k);
  absl::StrAppend(key, "\x1e");
}

}  // namespace

std::string PodKey(const Pod& p) {
  return absl::StrCat(p.metadata.namespace_, "/", p.metadata.name);
}

void AppendSchedulingKey(const apis::core::PodSpec& s, std::string* key) {
  if (s.affinity) {
    const auto& a = *s.affinity;
    if (a.node_affinity) {
      absl::StrAppend(key, "NA");
      if (a.node_affinity->required) {
        for (const auto& t : a.node_affinity->required->terms) AppendNodeTerm(t, key);
      }
      absl::StrAppend(key, "P");
      for (const auto& p : a.node_affinity->preferred) {
        absl::StrAppend(key, p.weight, ":");
        AppendNodeTerm(p.preference, key);
      }
    }
    for (const auto* pa : {&a.pod_affinity, &a.pod_anti_affinity}) {
      absl::StrAppend(key, pa == &a.pod_affinity ? "PA" : "AA");
      if (!*pa) continue;
      for (const auto& t : (*pa)->required) AppendPodTerm(t, key);
      absl::StrAppend(key, "P");
      for (const auto& w : (*pa)->preferred) {
        absl::StrAppend(key, w.weight, ":");
        AppendPodTerm(w.term, key);
      }
    }
  }
  absl::StrAppend(key, "\x1fT");
  for (const auto& t : s.tolerations) {
    absl::StrAppend(key, t.key, "\x1d", static_cast<int>(t.op), "\x1d", t.value, "\x1d",
                    t.effect ? static_cast<int>(*t.effect) : -1, "\x1d",
                    t.toleration_seconds.value_or(-1), "\x1c");
  }
  absl::StrAppend(key, "\x1fS");
  for (const auto& c : s.topology_spread_constraints) {
    absl::StrAppend(key, c.max_skew, "\x1d", c.topology_key, "\x1d",
                    static_cast<int>(c.when_unsatisfiable), "\x1d", c.min_domains.value_or(-1),
                    "\x1d", c.node_affinity_policy ? static_cast<int>(*c.node_affinity_policy) : -1,
                    "\x1d", c.node_taints_policy ? static_cast<int>(*c.node_taints_policy) : -1,
                    "\x1d", c.label_selector ? "s" : "-");
    if (c.label_selector) AppendSelector(*c.label_selector, key);
    for (const auto& k : c.match_label_keys) absl::StrAppend(key, "+", k);
    absl::StrAppend(key, "\x1e");
  }
}

// Adds the label keys a pod's selectors read (spread constraints, pod (anti-)affinity terms) to
// `keys`: only those keys split pods into classes.
void NoteSelectorKeys(const Pod& p, absl::flat_hash_set<std::string>* keys) {
  auto note_term = [&](const apis::core::PodAffinityTerm& t) {
    if (t.label_selector) {
      for (const auto& [k, v] : t.label_selector->match_labels) keys->insert(k);
      for (const auto& e : t.label_selector->match_expressions) keys->insert(e.key);
    }
    for (const auto& k : t.match_label_keys) keys->insert(k);
    for (const auto& k : t.mismatch_label_keys) keys->insert(k);
  };
  const auto& s = p.spec;
  for (const auto& c : s.topology_spread_constraints) {
    if (c.label_selector) {
      for (const auto& [k, v] : c.label_selector->match_labels) keys->insert(k);
      for (const auto& e : c.label_selector->match_expressions) keys->insert(e.key);
    }
    for (const auto& k : c.match_label_keys) keys->insert(k);
  }
  if (s.affinity) {
    for (const auto* pa : {&s.affinity->pod_affinity, &s.affinity->pod_anti_affinity}) {
      if (!*pa) continue;
      for (const auto& t : (*pa)->required) note_term(t);
      for (const auto& w : (*pa)->preferred) note_term(w.term);
    }
  }
}

}  // namespace dovetail::solver::internal
