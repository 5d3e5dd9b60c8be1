#include "dovetail/kube/objects.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/quantity.h"
#include "dovetail/common/saturating.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/kube/watch_event.h"
#include "dovetail/kube/wire.h"

namespace dovetail::kube {
namespace {

using simdjson::ondemand::array;
using simdjson::ondemand::json_type;
using simdjson::ondemand::object;
using simdjson::ondemand::value;

bool IsNull(value& v) {
  json_type type;
  return !v.type().get(type) && type == json_type::null;
}

absl::Status GetString(value v, std::string& out, std::string_view where) {
  if (IsNull(v)) {
    out.clear();
    return absl::OkStatus();
  }
  std::string_view s;
  SJ_GET(v.get_string(), s, where);
  out.assign(s.data(), s.size());
  return absl::OkStatus();
}

absl::Status GetStringView(value v, std::string_view& out, std::string_view where) {
  if (IsNull(v)) {
    out = {};
    return absl::OkStatus();
  }
  SJ_GET(v.get_string(), out, where);
  return absl::OkStatus();
}

absl::Status GetTime(value v, std::optional<absl::Time>& out, std::string_view where) {
  std::string_view s;
  RETURN_IF_ERROR(GetStringView(v, s, where));
  if (s.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(out, apis::core::ParseKubeTime(s));
  return absl::OkStatus();
}

// Iterates an object's fields: fn(key, value) -> Status. A null object is empty.
template <typename Fn>
absl::Status ForFieldsOfObject(object obj, std::string_view where, Fn&& fn) {
  for (auto field_result : obj) {
    simdjson::ondemand::field field;
    SJ_GET(field_result, field, where);
    std::string_view key;
    SJ_GET(field.unescaped_key(), key, where);
    RETURN_IF_ERROR(fn(key, field.value()));
  }
  return absl::OkStatus();
}

template <typename Fn>
absl::Status ForFields(value v, std::string_view where, Fn&& fn) {
  if (IsNull(v)) return absl::OkStatus();
  object obj;
  SJ_GET(v.get_object(), obj, where);
  return ForFieldsOfObject(obj, where, std::forward<Fn>(fn));
}

template <typename Fn>
absl::Status ForElements(value v, std::string_view where, Fn&& fn) {
  if (IsNull(v)) return absl::OkStatus();
  array arr;
  SJ_GET(v.get_array(), arr, where);
  for (auto element_result : arr) {
    value element;
    SJ_GET(element_result, element, where);
    RETURN_IF_ERROR(fn(element));
  }
  return absl::OkStatus();
}

absl::Status GetStringMap(value v, const DecodeContext& ctx, std::vector<KeyValue>& out,
                          std::string_view where, const std::vector<std::string>* keep = nullptr) {
  out.clear();
  return ForFields(v, where, [&](std::string_view key, value item) -> absl::Status {
    if (keep != nullptr && std::find(keep->begin(), keep->end(), key) == keep->end()) {
      return absl::OkStatus();
    }
    KeyValue kv{.key = ctx.pool->Intern(key)};
    RETURN_IF_ERROR(GetString(item, kv.value, where));
    out.push_back(std::move(kv));
    return absl::OkStatus();
  });
}

absl::StatusOr<int64_t> QuantityMilli(value v, std::string_view where) {
  json_type type;
  SJ_GET(v.type(), type, where);
  if (type == json_type::number) {
    // Quantity's UnmarshalJSON reads a JSON number as quantity text ("1.5", "2e9").
    std::string_view raw = v.raw_json_token();
    while (!raw.empty() && absl::ascii_isspace(static_cast<unsigned char>(raw.back()))) {
      raw.remove_suffix(1);
    }
    ASSIGN_OR_RETURN(const Quantity q, Quantity::Parse(raw));
    return q.MilliValue();
  }
  std::string_view text;
  SJ_GET(v.get_string(), text, where);
  ASSIGN_OR_RETURN(const Quantity q, Quantity::Parse(text));
  return q.MilliValue();
}

absl::Status GetResourceList(value v, const DecodeContext& ctx, std::vector<ResourceAmount>& out,
                             std::string_view where) {
  out.clear();
  return ForFields(v, where, [&](std::string_view key, value item) -> absl::Status {
    ASSIGN_OR_RETURN(const int64_t milli, QuantityMilli(item, where));
    out.push_back(ResourceAmount{.name = ctx.pool->Intern(key), .milli = milli});
    return absl::OkStatus();
  });
}

void AddTo(std::vector<ResourceAmount>& into, const std::vector<ResourceAmount>& add) {
  for (const ResourceAmount& a : add) {
    auto it = std::find_if(into.begin(), into.end(),
                           [&](const ResourceAmount& r) { return r.name == a.name; });
    if (it == into.end()) {
      into.push_back(a);
    } else {
      it->milli = SaturatingAdd(it->milli, a.milli);
    }
  }
}

void MaxInto(std::vector<ResourceAmount>& into, const std::vector<ResourceAmount>& other) {
  for (const ResourceAmount& a : other) {
    auto it = std::find_if(into.begin(), into.end(),
                           [&](const ResourceAmount& r) { return r.name == a.name; });
    if (it == into.end()) {
      into.push_back(a);
    } else {
      it->milli = std::max(it->milli, a.milli);
    }
  }
}

absl::Status DecodeOwner(value v, const DecodeContext& ctx, OwnerRef& out) {
  // Never null once decoded (objects.h): "" when the reference lacks the field.
  out.api_version = ctx.pool->Intern("");
  out.kind = ctx.pool->Intern("");
  return ForFields(v, "ownerReferences", [&](std::string_view key, value item) -> absl::Status {
    if (key == "kind") {
      std::string_view kind;
      RETURN_IF_ERROR(GetStringView(item, kind, "ownerReferences.kind"));
      out.kind = ctx.pool->Intern(kind);
    } else if (key == "apiVersion") {
      std::string_view api_version;
      RETURN_IF_ERROR(GetStringView(item, api_version, "ownerReferences.apiVersion"));
      out.api_version = ctx.pool->Intern(api_version);
    } else if (key == "name") {
      return GetString(item, out.name, "ownerReferences.name");
    } else if (key == "uid") {
      return GetString(item, out.uid, "ownerReferences.uid");
    } else if (key == "controller") {
      if (IsNull(item)) return absl::OkStatus();
      SJ_GET(item.get_bool(), out.controller, "ownerReferences.controller");
    }
    return absl::OkStatus();
  });
}

absl::Status DecodeMetaValue(value v, const DecodeContext& ctx, CompactMeta& out) {
  out.namespace_ = ctx.pool->Intern("");
  return ForFields(v, "metadata", [&](std::string_view key, value item) -> absl::Status {
    if (key == "name") return GetString(item, out.name, "metadata.name");
    if (key == "namespace") {
      std::string_view ns;
      RETURN_IF_ERROR(GetStringView(item, ns, "metadata.namespace"));
      out.namespace_ = ctx.pool->Intern(ns);
    } else if (key == "uid") {
      return GetString(item, out.uid, "metadata.uid");
    } else if (key == "resourceVersion") {
      return GetString(item, out.resource_version, "metadata.resourceVersion");
    } else if (key == "labels") {
      return GetStringMap(item, ctx, out.labels, "metadata.labels");
    } else if (key == "annotations") {
      if (ctx.annotation_keys.empty()) return absl::OkStatus();
      return GetStringMap(item, ctx, out.annotations, "metadata.annotations", &ctx.annotation_keys);
    } else if (key == "ownerReferences") {
      out.owners.clear();
      return ForElements(item, "metadata.ownerReferences", [&](value owner) -> absl::Status {
        OwnerRef ref;
        RETURN_IF_ERROR(DecodeOwner(owner, ctx, ref));
        out.owners.push_back(std::move(ref));
        return absl::OkStatus();
      });
    } else if (key == "finalizers") {
      out.finalizers.clear();
      return ForElements(item, "metadata.finalizers", [&](value f) -> absl::Status {
        std::string_view s;
        RETURN_IF_ERROR(GetStringView(f, s, "metadata.finalizers"));
        out.finalizers.push_back(ctx.pool->Intern(s));
        return absl::OkStatus();
      });
    } else if (key == "creationTimestamp") {
      std::optional<absl::Time> t;
      RETURN_IF_ERROR(GetTime(item, t, "metadata.creationTimestamp"));
      if (t.has_value()) out.creation = *t;
    } else if (key == "deletionTimestamp") {
      return GetTime(item, out.deletion, "metadata.deletionTimestamp");
    }
    return absl::OkStatus();
  });
}

int8_t EffectIndex(std::string_view effect) {
  if (effect == "NoSchedule") return 0;
  if (effect == "PreferNoSchedule") return 1;
  if (effect == "NoExecute") return 2;
  return -1;
}

absl::Status DecodeToleration(value v, const DecodeContext& ctx, CompactToleration& out) {
  out.key = ctx.pool->Intern("");
  return ForFields(v, "tolerations", [&](std::string_view key, value item) -> absl::Status {
    std::string_view s;
    if (key == "key") {
      RETURN_IF_ERROR(GetStringView(item, s, "tolerations.key"));
      out.key = ctx.pool->Intern(s);
    } else if (key == "operator") {
      RETURN_IF_ERROR(GetStringView(item, s, "tolerations.operator"));
      out.op = s == "Exists" ? 1 : 0;
    } else if (key == "value") {
      return GetString(item, out.value, "tolerations.value");
    } else if (key == "effect") {
      RETURN_IF_ERROR(GetStringView(item, s, "tolerations.effect"));
      out.effect = s.empty() ? -1 : EffectIndex(s);
    } else if (key == "tolerationSeconds") {
      if (IsNull(item)) return absl::OkStatus();
      int64_t seconds = 0;
      SJ_GET(item.get_int64(), seconds, "tolerations.tolerationSeconds");
      out.seconds = seconds;
    }
    return absl::OkStatus();
  });
}

struct ContainerRequests {
  std::vector<ResourceAmount> requests;
  std::vector<ResourceAmount> limits;
  bool sidecar = false;
  bool claims = false;  // resources.claims is not empty
};

// True for a non-empty array (resourceClaims, resources.claims).
absl::Status NonEmptyArray(value v, bool& out, std::string_view where) {
  if (IsNull(v)) return absl::OkStatus();
  return ForElements(v, where, [&out](value) {
    out = true;
    return absl::OkStatus();
  });
}

absl::Status DecodeContainer(value v, const DecodeContext& ctx, ContainerRequests& out,
                             std::vector<int32_t>& host_ports) {
  return ForFields(v, "containers", [&](std::string_view key, value item) -> absl::Status {
    if (key == "resources") {
      return ForFields(item, "resources", [&](std::string_view rkey, value r) -> absl::Status {
        if (rkey == "requests") return GetResourceList(r, ctx, out.requests, "requests");
        if (rkey == "limits") return GetResourceList(r, ctx, out.limits, "limits");
        if (rkey == "claims") return NonEmptyArray(r, out.claims, "resources.claims");
        return absl::OkStatus();
      });
    }
    if (key == "restartPolicy") {
      std::string_view s;
      RETURN_IF_ERROR(GetStringView(item, s, "restartPolicy"));
      out.sidecar = s == "Always";
    } else if (key == "ports") {
      return ForElements(item, "ports", [&](value port) -> absl::Status {
        return ForFields(port, "ports", [&](std::string_view pkey, value p) -> absl::Status {
          if (pkey != "hostPort") return absl::OkStatus();
          int64_t hp = 0;
          SJ_GET(p.get_int64(), hp, "ports.hostPort");
          if (hp > 0) host_ports.push_back(static_cast<int32_t>(hp));
          return absl::OkStatus();
        });
      });
    }
    return absl::OkStatus();
  });
}

absl::Status RawJson(value v, std::string& out, std::string_view where) {
  if (IsNull(v)) return absl::OkStatus();
  json_type type;
  SJ_GET(v.type(), type, where);
  std::string_view raw;
  if (type == json_type::object) {
    object obj;
    SJ_GET(v.get_object(), obj, where);
    SJ_GET(obj.raw_json(), raw, where);
  } else if (type == json_type::array) {
    array arr;
    SJ_GET(v.get_array(), arr, where);
    SJ_GET(arr.raw_json(), raw, where);
  } else {
    return absl::InvalidArgumentError(Cat(where, ": expected object or array"));
  }
  if (raw != "{}" && raw != "[]") out.assign(raw.data(), raw.size());
  return absl::OkStatus();
}

// spec.volumes: the persistentVolumeClaim claim names and whether any volume is ephemeral.
absl::Status DecodePodVolumes(value item, PodInfo& out) {
  return ForElements(item, "spec.volumes", [&](value vol) -> absl::Status {
    return ForFields(vol, "spec.volumes", [&](std::string_view vkey, value src) -> absl::Status {
      if (vkey == "ephemeral") {
        out.has_ephemeral_volumes = true;
      } else if (vkey == "persistentVolumeClaim") {
        return ForFields(src, "persistentVolumeClaim",
                         [&](std::string_view ckey, value c) -> absl::Status {
                           if (ckey != "claimName") return absl::OkStatus();
                           std::string name;
                           RETURN_IF_ERROR(GetString(c, name, "claimName"));
                           out.pvc_names.push_back(std::move(name));
                           return absl::OkStatus();
                         });
      }
      return absl::OkStatus();
    });
  });
}

absl::Status DecodePodSpec(value v, const DecodeContext& ctx, PodInfo& out) {
  std::vector<ContainerRequests> containers;
  std::vector<ContainerRequests> init_containers;
  std::vector<ResourceAmount> overhead;
  out.scheduler_name = ctx.pool->Intern("default-scheduler");
  out.priority_class_name = ctx.pool->Intern("");
  RETURN_IF_ERROR(ForFields(v, "spec", [&](std::string_view key, value item) -> absl::Status {
    if (key == "nodeName") return GetString(item, out.node_name, "spec.nodeName");
    if (key == "schedulerName") {
      std::string_view s;
      RETURN_IF_ERROR(GetStringView(item, s, "spec.schedulerName"));
      if (!s.empty()) out.scheduler_name = ctx.pool->Intern(s);
    } else if (key == "priority") {
      if (IsNull(item)) return absl::OkStatus();
      int64_t p = 0;
      SJ_GET(item.get_int64(), p, "spec.priority");
      out.priority = static_cast<int32_t>(p);
    } else if (key == "priorityClassName") {
      std::string_view s;
      RETURN_IF_ERROR(GetStringView(item, s, "spec.priorityClassName"));
      out.priority_class_name = ctx.pool->Intern(s);
    } else if (key == "terminationGracePeriodSeconds") {
      if (IsNull(item)) return absl::OkStatus();
      int64_t seconds = 0;
      SJ_GET(item.get_int64(), seconds, "spec.terminationGracePeriodSeconds");
      out.termination_grace_period_seconds = seconds;
    } else if (key == "nodeSelector") {
      return GetStringMap(item, ctx, out.node_selector, "spec.nodeSelector");
    } else if (key == "tolerations") {
      return ForElements(item, "spec.tolerations", [&](value t) -> absl::Status {
        CompactToleration tol;
        RETURN_IF_ERROR(DecodeToleration(t, ctx, tol));
        out.tolerations.push_back(std::move(tol));
        return absl::OkStatus();
      });
    } else if (key == "affinity") {
      std::string text;
      RETURN_IF_ERROR(RawJson(item, text, "spec.affinity"));
      if (text.empty()) return absl::OkStatus();
      ASSIGN_OR_RETURN(out.affinity, ctx.constraints != nullptr ? ctx.constraints->Affinity(text)
                                                                : DecodeAffinity(text));
    } else if (key == "topologySpreadConstraints") {
      std::string text;
      RETURN_IF_ERROR(RawJson(item, text, "spec.topologySpreadConstraints"));
      if (text.empty()) return absl::OkStatus();
      ASSIGN_OR_RETURN(out.topology_spread, ctx.constraints != nullptr
                                                ? ctx.constraints->TopologySpread(text)
                                                : DecodeTopologySpread(text));
    } else if (key == "volumes") {
      return DecodePodVolumes(item, out);
    } else if (key == "containers" || key == "initContainers") {
      auto& list = key == "containers" ? containers : init_containers;
      return ForElements(item, "spec.containers", [&](value c) -> absl::Status {
        ContainerRequests requests;
        RETURN_IF_ERROR(DecodeContainer(c, ctx, requests, out.host_ports));
        list.push_back(std::move(requests));
        return absl::OkStatus();
      });
    } else if (key == "overhead") {
      return GetResourceList(item, ctx, overhead, "spec.overhead");
    } else if (key == "resourceClaims") {
      return NonEmptyArray(item, out.has_dra_requirements, "spec.resourceClaims");
    }
    return absl::OkStatus();
  }));
  for (const auto* list : {&containers, &init_containers}) {
    for (const ContainerRequests& c : *list) out.has_dra_requirements |= c.claims;
  }
  // Effective requests (and limits, alike): regular containers plus sidecars run together; each
  // regular init container runs alone after the sidecars started before it.
  auto effective = [&](std::vector<ResourceAmount> ContainerRequests::*field) {
    std::vector<ResourceAmount> total;
    for (const ContainerRequests& c : containers) AddTo(total, c.*field);
    std::vector<ResourceAmount> sidecars;
    std::vector<ResourceAmount> init_peak;
    for (const ContainerRequests& c : init_containers) {
      if (c.sidecar) {
        AddTo(sidecars, c.*field);
        MaxInto(init_peak, sidecars);
      } else {
        std::vector<ResourceAmount> running = sidecars;
        AddTo(running, c.*field);
        MaxInto(init_peak, running);
      }
    }
    AddTo(total, sidecars);
    MaxInto(total, init_peak);
    if (field == &ContainerRequests::requests) {
      AddTo(total, overhead);
    } else {  // the overhead is added to the limits that are set, as Kubernetes does
      for (ResourceAmount& t : total) {
        for (const ResourceAmount& o : overhead) {
          if (o.name == t.name) t.milli = SaturatingAdd(t.milli, o.milli);
        }
      }
    }
    std::sort(total.begin(), total.end(),
              [](const ResourceAmount& a, const ResourceAmount& b) { return a.name < b.name; });
    return total;
  };
  out.requests = effective(&ContainerRequests::requests);
  out.limits = effective(&ContainerRequests::limits);
  return absl::OkStatus();
}

absl::Status DecodePodStatus(value v, PodInfo& out) {
  return ForFields(v, "status", [&](std::string_view key, value item) -> absl::Status {
    std::string_view s;
    if (key == "phase") {
      RETURN_IF_ERROR(GetStringView(item, s, "status.phase"));
      if (auto phase = apis::core::ParseEnum<apis::core::PodPhase>(s); phase.has_value()) {
        out.phase = *phase;
      }
    } else if (key == "nominatedNodeName") {
      return GetString(item, out.nominated_node_name, "status.nominatedNodeName");
    } else if (key == "startTime") {
      return GetTime(item, out.start_time, "status.startTime");
    } else if (key == "conditions") {
      return ForElements(item, "status.conditions", [&](value cond) -> absl::Status {
        std::string type, status, reason;
        std::optional<absl::Time> transition;
        RETURN_IF_ERROR(ForFields(cond, "conditions", [&](std::string_view ck, value cv) {
          if (ck == "type") return GetString(cv, type, "type");
          if (ck == "status") return GetString(cv, status, "status");
          if (ck == "reason") return GetString(cv, reason, "reason");
          if (ck == "lastTransitionTime") return GetTime(cv, transition, "lastTransitionTime");
          return absl::OkStatus();
        }));
        if (type == "PodScheduled") {
          out.unschedulable = status == "False" && reason == "Unschedulable";
          if (status == "True") out.scheduled_transition = transition.value_or(absl::UnixEpoch());
        } else if (type == "Ready") {
          out.ready = status == "True";
          if (out.ready) out.ready_transition = transition.value_or(absl::UnixEpoch());
        }
        return absl::OkStatus();
      });
    }
    return absl::OkStatus();
  });
}

apis::core::ConditionStatus ParseConditionStatus(std::string_view s) {
  if (s == "True") return apis::core::ConditionStatus::kTrue;
  if (s == "False") return apis::core::ConditionStatus::kFalse;
  return apis::core::ConditionStatus::kUnknown;
}

absl::Status DecodeNodeSpec(value v, const DecodeContext& ctx, NodeInfo& out) {
  return ForFields(v, "spec", [&](std::string_view key, value item) -> absl::Status {
    if (key == "providerID") return GetString(item, out.provider_id, "spec.providerID");
    if (key == "unschedulable") {
      if (IsNull(item)) return absl::OkStatus();
      SJ_GET(item.get_bool(), out.unschedulable, "spec.unschedulable");
    } else if (key == "taints") {
      return ForElements(item, "spec.taints", [&](value t) -> absl::Status {
        CompactTaint taint{.key = ctx.pool->Intern("")};
        RETURN_IF_ERROR(ForFields(t, "spec.taints", [&](std::string_view tk, value tv) {
          std::string_view s;
          if (tk == "key") {
            RETURN_IF_ERROR(GetStringView(tv, s, "taints.key"));
            taint.key = ctx.pool->Intern(s);
          } else if (tk == "value") {
            return GetString(tv, taint.value, "taints.value");
          } else if (tk == "effect") {
            RETURN_IF_ERROR(GetStringView(tv, s, "taints.effect"));
            taint.effect = static_cast<uint8_t>(std::max<int8_t>(0, EffectIndex(s)));
          }
          return absl::OkStatus();
        }));
        out.taints.push_back(std::move(taint));
        return absl::OkStatus();
      });
    }
    return absl::OkStatus();
  });
}

absl::Status DecodeNodeStatus(value v, const DecodeContext& ctx, NodeInfo& out) {
  return ForFields(v, "status", [&](std::string_view key, value item) -> absl::Status {
    if (key == "capacity") return GetResourceList(item, ctx, out.capacity, "status.capacity");
    if (key == "allocatable") {
      return GetResourceList(item, ctx, out.allocatable, "status.allocatable");
    }
    if (key == "conditions") {
      return ForElements(item, "status.conditions", [&](value cond) -> absl::Status {
        std::string_view type, status;
        std::optional<absl::Time> transition;
        RETURN_IF_ERROR(ForFields(cond, "conditions", [&](std::string_view ck, value cv) {
          if (ck == "type") return GetStringView(cv, type, "type");
          if (ck == "status") return GetStringView(cv, status, "status");
          if (ck == "lastTransitionTime") return GetTime(cv, transition, "lastTransitionTime");
          return absl::OkStatus();
        }));
        // string_views into the document stay valid until the next parse.
        const auto parsed = ParseConditionStatus(status);
        if (type == "Ready") {
          out.ready = parsed;
          out.ready_transition = transition;
        }
        out.conditions.emplace_back(ctx.pool->Intern(type), parsed);
        return absl::OkStatus();
      });
    }
    return absl::OkStatus();
  });
}

size_t StringBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

size_t MetaBytes(const CompactMeta& m) {
  size_t bytes = StringBytes(m.name) + StringBytes(m.uid) + StringBytes(m.resource_version);
  bytes += m.labels.capacity() * sizeof(KeyValue);
  for (const KeyValue& kv : m.labels) bytes += StringBytes(kv.value);
  bytes += m.annotations.capacity() * sizeof(KeyValue);
  for (const KeyValue& kv : m.annotations) bytes += StringBytes(kv.value);
  bytes += m.owners.capacity() * sizeof(OwnerRef);
  for (const OwnerRef& o : m.owners) bytes += StringBytes(o.name) + StringBytes(o.uid);
  bytes += m.finalizers.capacity() * sizeof(Interned);
  return bytes;
}

}  // namespace

std::string CompactMeta::Key() const {
  if (namespace_ == nullptr || namespace_->empty()) return name;
  return absl::StrCat(*namespace_, "/", name);
}

const std::string* CompactMeta::Label(std::string_view key) const {
  for (const KeyValue& kv : labels) {
    if (*kv.key == key) return &kv.value;
  }
  return nullptr;
}

const std::string* CompactMeta::Annotation(std::string_view key) const {
  for (const KeyValue& kv : annotations) {
    if (*kv.key == key) return &kv.value;
  }
  return nullptr;
}

int64_t PodInfo::RequestMilli(std::string_view resource) const {
  for (const ResourceAmount& r : requests) {
    if (*r.name == resource) return r.milli;
  }
  return 0;
}

absl::Status DecodeMeta(object obj, const DecodeContext& ctx, CompactMeta& out) {
  return ForFieldsOfObject(obj, "object", [&](std::string_view key, value item) -> absl::Status {
    if (key == "metadata") return DecodeMetaValue(item, ctx, out);
    return absl::OkStatus();
  });
}

absl::Status DecodePod(object obj, const DecodeContext& ctx, PodInfo& out) {
  return ForFieldsOfObject(obj, "pod", [&](std::string_view key, value item) -> absl::Status {
    if (key == "metadata") return DecodeMetaValue(item, ctx, out.meta);
    if (key == "spec") return DecodePodSpec(item, ctx, out);
    if (key == "status") return DecodePodStatus(item, out);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<PodInfo>> DecodePodList(std::string_view body,
                                                   const DecodeContext& ctx) {
  std::string text(body);  // ParseList pads it for simdjson in place
  simdjson::ondemand::parser parser;
  ListMeta meta;
  std::vector<PodInfo> pods;
  RETURN_IF_ERROR(ParseList(
      parser, text, meta, [&](object item, simdjson::ondemand::document&) -> absl::Status {
        PodInfo pod;
        if (absl::Status status = DecodePod(item, ctx, pod); !status.ok()) {
          const std::string which =
              pod.meta.name.empty() ? std::string() : Cat(" (", pod.meta.Key(), ")");
          return absl::Status(status.code(),
                              Cat("pod list item ", pods.size(), which, ": ", status.message()));
        }
        pods.push_back(std::move(pod));
        return absl::OkStatus();
      }));
  return pods;
}

absl::Status DecodeNode(object obj, const DecodeContext& ctx, NodeInfo& out) {
  return ForFieldsOfObject(obj, "node", [&](std::string_view key, value item) -> absl::Status {
    if (key == "metadata") return DecodeMetaValue(item, ctx, out.meta);
    if (key == "spec") return DecodeNodeSpec(item, ctx, out);
    if (key == "status") return DecodeNodeStatus(item, ctx, out);
    return absl::OkStatus();
  });
}

// The decoded affinity and topology spread are shared among pods (pod_constraints.h) and, as the
// interned strings, not counted per pod.
size_t ApproximateBytes(const PodInfo& pod) {
  size_t bytes = sizeof(PodInfo) + MetaBytes(pod.meta) + StringBytes(pod.node_name) +
                 StringBytes(pod.nominated_node_name);
  bytes += (pod.requests.capacity() + pod.limits.capacity()) * sizeof(ResourceAmount);
  bytes += pod.node_selector.capacity() * sizeof(KeyValue);
  for (const KeyValue& kv : pod.node_selector) bytes += StringBytes(kv.value);
  bytes += pod.tolerations.capacity() * sizeof(CompactToleration);
  for (const CompactToleration& t : pod.tolerations) bytes += StringBytes(t.value);
  bytes += pod.pvc_names.capacity() * sizeof(std::string);
  for (const std::string& s : pod.pvc_names) bytes += StringBytes(s);
  bytes += pod.host_ports.capacity() * sizeof(int32_t);
  return bytes;
}

size_t ApproximateBytes(const NodeInfo& node) {
  size_t bytes = sizeof(NodeInfo) + MetaBytes(node.meta) + StringBytes(node.provider_id);
  bytes += node.taints.capacity() * sizeof(CompactTaint);
  for (const CompactTaint& t : node.taints) bytes += StringBytes(t.value);
  bytes += (node.capacity.capacity() + node.allocatable.capacity()) * sizeof(ResourceAmount);
  bytes += node.conditions.capacity() * sizeof(std::pair<Interned, apis::core::ConditionStatus>);
  return bytes;
}

}  // namespace dovetail::kube
