// InstanceType and Offering: what a CloudProvider can launch. An InstanceType is one machine shape
// (m5.large) with requirements over every well-known label, its raw capacity, the overhead the
// kubelet reserves, and its offerings; an Offering is one (capacity type, zone) in which the type
// can be bought, with a price and availability. GetInstanceTypes() produces them, the scheduler and
// consolidation read them.
//
// Requirements conventions (what the scheduler may rely on):
//   - InstanceType::requirements() names every well-known label the provider knows about: a label
//     with one value is `In [v]` (it becomes a node label at launch), a label with several possible
//     values (zone, capacity type) is `In [v1, v2, ...]` and is resolved at launch, and a label
//     that does not apply to the type (GPU labels of a CPU-only type) is `DoesNotExist`.
//   - Offering::requirements() has `karpenter.sh/capacity-type In [ct]` and
//     `topology.kubernetes.io/zone In [z]`, plus `topology.k8s.aws/zone-id In [id]` when known.
//
// InstanceType is immutable after construction (Allocatable() is computed in the constructor) and
// shared as std::shared_ptr<const InstanceType>: safe to read from any number of threads.
// Offering and Offerings are value types; thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dovetail/common/quantity.h"
#include "dovetail/scheduling/requirements.h"

namespace dovetail::cloudprovider {

struct Offering {
  // An offering with requirements capacity-type In [capacity_type], zone In [zone] and, when
  // zone_id is non-empty, zone-id In [zone_id].
  static Offering Make(std::string_view capacity_type, std::string_view zone,
                       std::string_view zone_id, double price, bool available,
                       std::optional<int64_t> reservation_capacity = std::nullopt);

  scheduling::Requirements requirements;
  // Copies of the capacity-type / zone values in `requirements`, set by Make(), for cheap access
  // (sorting, logging, ICE-cache keys) without a requirements lookup.
  std::string capacity_type;
  std::string zone;
  // USD per hour. Meaningless when !available and the provider knows no price (then 0).
  double price = 0.0;
  // USD per hour a node of this offering adds to `price` whatever runs on it: its volumes, a
  // public IPv4 address (aws_node_price.h). 0 when the provider prices nothing beyond the
  // instance (kwok).
  double node_price = 0.0;
  bool available = false;
  // Instances left in a capacity reservation (reserved offerings only).
  std::optional<int64_t> reservation_capacity;

  // What a node of this offering costs per hour: price + node_price. Plans and consolidation
  // minimise it (docs/scheduling.md, "Effective price").
  double EffectivePrice() const { return price + node_price; }
};

// An ordered list of offerings with the queries the scheduler and disruption need. Filtering
// queries return copies; the *Pointer-returning queries point into this list.
class Offerings {
 public:
  Offerings() = default;
  explicit Offerings(std::vector<Offering> offerings) : offerings_(std::move(offerings)) {}

  size_t size() const { return offerings_.size(); }
  bool empty() const { return offerings_.empty(); }
  const Offering& operator[](size_t i) const { return offerings_[i]; }
  std::vector<Offering>::const_iterator begin() const { return offerings_.begin(); }
  std::vector<Offering>::const_iterator end() const { return offerings_.end(); }
  const std::vector<Offering>& list() const { return offerings_; }

  // The offerings with available == true.
  Offerings Available() const;
  // The offerings whose requirements intersect `requirements` (RequirementsIntersect). Offering
  // keys are all well-known, so this is also upstream's "compatible, allowing undefined
  // well-known labels".
  Offerings Compatible(const scheduling::Requirements& requirements) const;
  bool HasCompatible(const scheduling::Requirements& requirements) const;
  // Lowest / highest effective price; nullptr when empty. Ties go to the earlier offering.
  const Offering* Cheapest() const;
  const Offering* MostExpensive() const;
  // The available offering compatible with `requirements` of the lowest effective price; nullptr
  // if none.
  const Offering* CheapestAvailableCompatible(const scheduling::Requirements& requirements) const;

 private:
  std::vector<Offering> offerings_;
};

// True when every key defined in both `a` and `b` admits a common value, except that two negative
// requirements (NotIn/DoesNotExist) on a key never conflict; keys defined on one side only do not
// constrain. The same rule as scheduling::Requirements::Intersects, as a bool that allocates
// nothing (no error message), for the catalog queries below.
bool RequirementsIntersect(const scheduling::Requirements& a, const scheduling::Requirements& b);

// Resources the node keeps for itself; allocatable = capacity - (sum of the three).
struct InstanceTypeOverhead {
  ResourceList kube_reserved;
  ResourceList system_reserved;
  ResourceList eviction_threshold;

  ResourceList Total() const;
};

class InstanceType {
 public:
  InstanceType(std::string name, scheduling::Requirements requirements, Offerings offerings,
               ResourceList capacity, InstanceTypeOverhead overhead);

  InstanceType(const InstanceType&) = delete;
  InstanceType& operator=(const InstanceType&) = delete;

  const std::string& name() const { return name_; }
  const scheduling::Requirements& requirements() const { return requirements_; }
  const Offerings& offerings() const { return offerings_; }
  const ResourceList& capacity() const { return capacity_; }
  const InstanceTypeOverhead& overhead() const { return overhead_; }
  // capacity - overhead.Total(), per resource, floored at zero; resources only in the overhead are
  // not listed. Computed once in the constructor.
  const ResourceList& Allocatable() const { return allocatable_; }

  // True when the type's requirements intersect `requirements` and at least one available
  // offering does too: "could a NodeClaim with these requirements be this type".
  bool Compatible(const scheduling::Requirements& requirements) const;
  // The available offering compatible with `requirements` of the lowest effective price; nullptr
  // if none.
  const Offering* CheapestOffering(const scheduling::Requirements& requirements) const {
    return offerings_.CheapestAvailableCompatible(requirements);
  }

  // A copy of this type with other offerings (availability from an ICE cache, overlay prices);
  // everything else is shared by value.
  std::shared_ptr<const InstanceType> WithOfferings(Offerings offerings) const {
    return std::make_shared<const InstanceType>(name_, requirements_, std::move(offerings),
                                                capacity_, overhead_);
  }

 private:
  std::string name_;
  scheduling::Requirements requirements_;
  Offerings offerings_;
  ResourceList capacity_;
  InstanceTypeOverhead overhead_;
  ResourceList allocatable_;
};

using InstanceTypePtr = std::shared_ptr<const InstanceType>;

// Per-key a - b over the keys of `a`, floored at zero (keys only in `b` are ignored).
ResourceList SubtractResources(const ResourceList& a, const ResourceList& b);
// Per-key sum over the union of keys.
ResourceList AddResources(const ResourceList& a, const ResourceList& b);
// True when every positive quantity of `requests` is at most the same resource of `allocatable`;
// a positive request for a resource that `allocatable` lacks does not fit.
bool ResourcesFit(const ResourceList& requests, const ResourceList& allocatable);

}  // namespace dovetail::cloudprovider
