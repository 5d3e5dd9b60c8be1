// Kubernetes label and node selectors, evaluated the way the API server and kube-scheduler do:
//  - metav1.LabelSelector (matchLabels AND matchExpressions In/NotIn/Exists/DoesNotExist); an
//    empty selector matches everything (callers handle an absent selector, which matches nothing
//    where Kubernetes says so).
//  - NodeSelectorTerm / NodeSelector as in node affinity: terms are ORed, the expressions and
//    fields of a term ANDed; a term with neither expressions nor fields matches nothing; Gt/Lt
//    compare the label as a 64-bit integer (Karpenter's Gte/Lte are accepted too); matchFields
//    support metadata.name with In/NotIn of exactly one value and, as in Kubernetes, are skipped
//    when the caller passes no node fields.
// The Matches functions assume selectors that passed API validation: a structurally invalid
// expression (In without values, Exists with values, Gt with a non-integer, an unknown field)
// simply does not match, and key/value syntax is not rechecked; the Validate functions report
// everything as InvalidArgument.
// Used by topology spread, affinity, PDB and volume-topology code. Stateless; thread-safe.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "dovetail/apis/core/meta.h"

namespace dovetail::scheduling {

// ---- Label selectors ----------------------------------------------------------------------------
bool Matches(const apis::core::LabelSelector& selector, const apis::core::StringMap& labels);
// In/NotIn need values, Exists/DoesNotExist must have none; keys qualified names; values valid
// label values (matchLabels included).
absl::Status ValidateLabelSelector(const apis::core::LabelSelector& selector);

// ---- Node selectors -----------------------------------------------------------------------------
// `fields` holds the node's selectable fields, i.e. {"metadata.name": node name}.
bool NodeSelectorTermMatches(const apis::core::NodeSelectorTerm& term,
                             const apis::core::StringMap& labels,
                             const apis::core::StringMap& fields);
// True when any term matches; no terms matches nothing.
bool NodeSelectorMatches(absl::Span<const apis::core::NodeSelectorTerm> terms,
                         const apis::core::StringMap& labels, const apis::core::StringMap& fields);
bool NodeSelectorMatches(const apis::core::NodeSelector& selector,
                         const apis::core::StringMap& labels, const apis::core::StringMap& fields);
// Expressions: qualified keys; In/NotIn with values; Exists/DoesNotExist without; Gt/Lt/Gte/Lte
// exactly one integer. Fields: metadata.name with In/NotIn and exactly one value.
absl::Status ValidateNodeSelectorTerm(const apis::core::NodeSelectorTerm& term);

}  // namespace dovetail::scheduling
