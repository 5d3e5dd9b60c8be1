#include "dovetail/cloudprovider/instance_type.h"

#include <string>
#include <utility>

#include "dovetail/apis/v1/labels.h"

namespace dovetail::cloudprovider {
namespace {

namespace labels = ::dovetail::apis::v1;
using apis::core::SelectorOperator;

bool IsNegative(const scheduling::Requirement& r) {
  SelectorOperator op = r.Operator();
  return op == SelectorOperator::kNotIn || op == SelectorOperator::kDoesNotExist;
}

}  // namespace

Offering Offering::Make(std::string_view capacity_type, std::string_view zone,
                        std::string_view zone_id, double price, bool available,
                        std::optional<int64_t> reservation_capacity) {
  Offering o;
  o.requirements.Add(
      scheduling::Requirement::In(std::string(labels::kCapacityTypeLabelKey), {capacity_type}));
  o.requirements.Add(scheduling::Requirement::In(std::string(labels::kLabelTopologyZone), {zone}));
  if (!zone_id.empty()) {
    o.requirements.Add(
        scheduling::Requirement::In(std::string(labels::kLabelTopologyZoneId), {zone_id}));
  }
  o.capacity_type = std::string(capacity_type);
  o.zone = std::string(zone);
  o.price = price;
  o.available = available;
  o.reservation_capacity = reservation_capacity;
  return o;
}

bool RequirementsIntersect(const scheduling::Requirements& a, const scheduling::Requirements& b) {
  const scheduling::Requirements& small = a.size() <= b.size() ? a : b;
  const scheduling::Requirements& large = a.size() <= b.size() ? b : a;
  for (const scheduling::Requirement& r : small) {
    const scheduling::Requirement* other = large.Find(r.key());
    if (other == nullptr) continue;
    if (IsNegative(r) && IsNegative(*other)) continue;
    if (!r.Intersects(*other)) return false;
  }
  return true;
}

Offerings Offerings::Available() const {
  std::vector<Offering> out;
  for (const Offering& o : offerings_) {
    if (o.available) out.push_back(o);
  }
  return Offerings(std::move(out));
}

Offerings Offerings::Compatible(const scheduling::Requirements& requirements) const {
  std::vector<Offering> out;
  for (const Offering& o : offerings_) {
    if (RequirementsIntersect(o.requirements, requirements)) out.push_back(o);
  }
  return Offerings(std::move(out));
}

bool Offerings::HasCompatible(const scheduling::Requirements& requirements) const {
  for (const Offering& o : offerings_) {
    if (RequirementsIntersect(o.requirements, requirements)) return true;
  }
  return false;
}

const Offering* Offerings::Cheapest() const {
  const Offering* best = nullptr;
  for (const Offering& o : offerings_) {
    if (best == nullptr || o.EffectivePrice() < best->EffectivePrice()) best = &o;
  }
  return best;
}

const Offering* Offerings::MostExpensive() const {
  const Offering* best = nullptr;
  for (const Offering& o : offerings_) {
    if (best == nullptr || o.EffectivePrice() > best->EffectivePrice()) best = &o;
  }
  return best;
}

const Offering* Offerings::CheapestAvailableCompatible(
    const scheduling::Requirements& requirements) const {
  const Offering* best = nullptr;
  for (const Offering& o : offerings_) {
    if (!o.available || (best != nullptr && o.EffectivePrice() >= best->EffectivePrice())) continue;
    if (RequirementsIntersect(o.requirements, requirements)) best = &o;
  }
  return best;
}

ResourceList AddResources(const ResourceList& a, const ResourceList& b) {
  ResourceList out = a;
  for (const auto& [name, quantity] : b) out[name] += quantity;
  return out;
}

ResourceList SubtractResources(const ResourceList& a, const ResourceList& b) {
  ResourceList out = a;
  for (auto& [name, quantity] : out) {
    auto it = b.find(name);
    if (it == b.end()) continue;
    quantity -= it->second;
    if (quantity < Quantity()) quantity = Quantity::FromMilli(0, quantity.format());
  }
  return out;
}

bool ResourcesFit(const ResourceList& requests, const ResourceList& allocatable) {
  for (const auto& [name, quantity] : requests) {
    if (quantity.Sign() <= 0) continue;
    auto it = allocatable.find(name);
    if (it == allocatable.end() || it->second < quantity) return false;
  }
  return true;
}

ResourceList InstanceTypeOverhead::Total() const {
  return AddResources(AddResources(kube_reserved, system_reserved), eviction_threshold);
}

InstanceType::InstanceType(std::string name, scheduling::Requirements requirements,
                           Offerings offerings, ResourceList capacity,
                           InstanceTypeOverhead overhead)
    : name_(std::move(name)),
      requirements_(std::move(requirements)),
      offerings_(std::move(offerings)),
      capacity_(std::move(capacity)),
      overhead_(std::move(overhead)),
      allocatable_(SubtractResources(capacity_, overhead_.Total())) {}

bool InstanceType::Compatible(const scheduling::Requirements& requirements) const {
  if (!RequirementsIntersect(requirements_, requirements)) return false;
  for (const Offering& o : offerings_) {
    if (o.available && RequirementsIntersect(o.requirements, requirements)) return true;
  }
  return false;
}

}  // namespace dovetail::cloudprovider
