// Pod classes: pods that are interchangeable for the solver (same namespace, labels the selectors
// read, requests, scheduling constraints; internal/class_key.h) share one PodClass. A Variant is a
// class with some of its preferences relaxed (RelaxState, upstream's relaxation order), with what
// it may use of each pool and existing node cached. Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dovetail/scheduling/taints.h"
#include "dovetail/solver/internal/names.h"
#include "dovetail/solver/internal/offerings.h"
#include "dovetail/solver/internal/resources.h"
#include "dovetail/solver/solver.h"
#include "dovetail/solver/type_set.h"

namespace dovetail::solver::internal {

struct HostPort {
  std::string ip;
  int32_t port = 0;
  apis::core::Protocol protocol = apis::core::Protocol::kTCP;
  bool Conflicts(const HostPort& o) const {
    if (port != o.port || protocol != o.protocol) return false;
    auto wildcard = [](const std::string& ip) {
      return ip.empty() || ip == "0.0.0.0" || ip == "::";
    };
    return wildcard(ip) || wildcard(o.ip) || ip == o.ip;
  }
};

// Appends the host ports the containers of `spec` claim (hostPort > 0; TCP when no protocol).
inline void AppendHostPorts(const apis::core::PodSpec& spec, std::vector<HostPort>& out) {
  for (const auto& c : spec.containers) {
    for (const auto& port : c.ports) {
      if (port.host_port > 0) {
        out.push_back(
            {port.host_ip, port.host_port, port.protocol.value_or(apis::core::Protocol::kTCP)});
      }
    }
  }
}

inline bool PortsConflict(const std::vector<HostPort>& a, const std::vector<HostPort>& b) {
  for (const auto& x : a) {
    for (const auto& y : b) {
      if (x.Conflicts(y)) return true;
    }
  }
  return false;
}

// Which preferences a variant still honours (upstream's relaxation order).
struct RelaxState {
  int required_term = 0;  // index of the required node selector term in use
  int pref_affinity_dropped = 0;
  int pref_anti_dropped = 0;
  int pref_node_dropped = 0;
  int spread_anyway_dropped = 0;
  bool tolerate_prefer_no_schedule = false;
  bool operator==(const RelaxState&) const = default;
};

struct PoolFit {
  bool computed = false;
  absl::Status status;
  TypeSet types;   // pool types compatible with the variant's requirements that fit one pod
  PairMask pairs;  // offerings the pool's and the variant's requirements allow
  double alone_price = -1;  // cheapest NodeClaim for one such pod alone; -1 until computed
};

struct Variant {
  int cls = 0;
  RelaxState state;
  absl::Status requirements_status;
  Requirements reqs;
  std::vector<Toleration> tolerations;
  std::vector<int> owned;  // topology groups this pod must satisfy
  std::vector<PoolFit> pool_fit;
  std::vector<int8_t> node_fit;      // per existing node: -1 unknown, 0 no, 1 static checks pass
  size_t claim_cursor = 0;           // claims before this index permanently reject this variant
  std::vector<size_t> retry_claims;  // claims that rejected for reasons that may change
  std::vector<size_t> priced_out;    // claims refused by the price guard (see TryClaim)
};

struct PodClass {
  const Pod* rep = nullptr;
  std::string ns;
  StringMap labels;
  Amounts requests;
  std::vector<HostPort> ports;
  std::vector<Requirements> volume_alternatives;
  std::vector<int> selected_by;  // groups whose selector matches this class
  std::vector<int> inverse;      // anti-affinity groups whose selector matches (inverse rule)
  // Topology terms, by kind, as group ids (preferred ones sorted heaviest first).
  std::vector<int> required_affinity, required_anti, spread_required;
  std::vector<int> preferred_affinity, preferred_anti, spread_anyway;
  std::vector<int> counting;        // counting_groups + owner groups for anti-affinity owner counts
  std::vector<int> owner_anti_all;  // every anti-affinity term it owns (required + preferred)
  // Preferred node affinity terms sorted heaviest first.
  std::vector<const apis::core::NodeSelectorTerm*> preferred_node_terms;
  std::vector<apis::core::NodeSelectorTerm> required_terms;
  bool has_match_fields = false;
};

}  // namespace dovetail::solver::internal
