// Test helpers for reading the instance types a catalog builds: one of a type's offerings, and
// the value its requirements give a label. Test-only; header-only; declared in
// dovetail::cloudprovider so that its tests (and kwok's) use them unqualified.
#pragma once

#include <string>
#include <string_view>

#include "dovetail/apis/core/meta.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/scheduling/requirement.h"

namespace dovetail::cloudprovider {

// The offering of `type` with that capacity type in that zone; nullptr when there is none.
inline const Offering* FindOffering(const InstanceType& type, std::string_view capacity_type,
                                    std::string_view zone) {
  for (const Offering& o : type.offerings()) {
    if (o.capacity_type == capacity_type && o.zone == zone) return &o;
  }
  return nullptr;
}

// The single value of an `In [v]` requirement, "<absent>" for DoesNotExist, "<undefined>" when
// the key is not defined, "<other>" otherwise.
inline std::string LabelValue(const InstanceType& type, std::string_view key) {
  const scheduling::Requirement* r = type.requirements().Find(key);
  if (r == nullptr) return "<undefined>";
  if (r->Operator() == apis::core::SelectorOperator::kDoesNotExist) return "<absent>";
  if (r->Operator() == apis::core::SelectorOperator::kIn && r->values().size() == 1) {
    return r->values()[0];
  }
  return "<other>";
}

}  // namespace dovetail::cloudprovider
