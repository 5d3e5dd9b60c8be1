#include "dovetail/scenario/volume_topology.h"

#include <utility>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::scenario {

namespace core = apis::core;
using scheduling::Requirements;

VolumeTopology::VolumeTopology(const Volumes& volumes) {
  for (const core::PersistentVolumeClaim& claim : volumes.claims) {
    claims_[Cat(claim.metadata.namespace_, "/", claim.metadata.name)] = &claim;
  }
  for (const core::PersistentVolume& volume : volumes.volumes) {
    volumes_[volume.metadata.name] = &volume;
  }
  for (const core::StorageClass& sc : volumes.storage_classes)
    storage_classes_[sc.metadata.name] = &sc;
}

std::vector<Requirements> VolumeTopology::OfClaim(const core::PersistentVolumeClaim& claim) const {
  std::vector<Requirements> out;
  if (!claim.spec.volume_name.empty()) {
    auto pv = volumes_.find(claim.spec.volume_name);
    if (pv == volumes_.end() || !pv->second->spec.node_affinity ||
        !pv->second->spec.node_affinity->required) {
      return out;
    }
    for (const auto& term : pv->second->spec.node_affinity->required->terms) {
      std::vector<core::NodeSelectorRequirement> exprs;
      for (const auto& e : term.match_expressions) {
        if (e.key != apis::v1::kLabelHostname) exprs.push_back(e);
      }
      absl::StatusOr<Requirements> r = Requirements::FromNodeSelectorRequirements(exprs);
      if (r.ok()) out.push_back(*std::move(r));
    }
  } else if (claim.spec.storage_class_name) {
    auto sc = storage_classes_.find(*claim.spec.storage_class_name);
    if (sc == storage_classes_.end()) return out;
    for (const auto& term : sc->second->allowed_topologies) {
      Requirements r;
      for (const auto& e : term.match_label_expressions) {
        r.Add(scheduling::Requirement::In(e.key, e.values));
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

std::optional<std::vector<Requirements>> VolumeTopology::Alternatives(const core::Pod& pod) const {
  std::vector<Requirements> alternatives = {Requirements()};
  bool any = false;
  for (const auto& v : pod.spec.volumes) {
    if (!v.persistent_volume_claim) continue;
    auto claim =
        claims_.find(Cat(pod.metadata.namespace_, "/", v.persistent_volume_claim->claim_name));
    if (claim == claims_.end()) continue;
    std::vector<Requirements> options = OfClaim(*claim->second);
    if (options.empty()) continue;
    any = true;
    std::vector<Requirements> next;
    std::optional<Requirements> conflict;  // the first pair that does not intersect, intersected
    for (const auto& a : alternatives) {
      for (const auto& b : options) {
        Requirements c = a;
        c.Intersect(b);
        if (a.Intersects(b).ok()) {
          next.push_back(std::move(c));
        } else if (!conflict.has_value()) {
          conflict = std::move(c);
        }
      }
    }
    if (next.empty()) return std::vector<Requirements>{*std::move(conflict)};
    alternatives = std::move(next);
  }
  if (!any) return std::nullopt;
  return alternatives;
}

}  // namespace dovetail::scenario
