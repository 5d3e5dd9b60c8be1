#include "dovetail/apis/core/workloads.h"

namespace dovetail::apis::core {

void DescribeFields(FieldCodec& c, DaemonSetSpec& v) {
  c.Field("selector", v.selector);
  c.Field("template", v.template_, {.emit_empty = true});
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, DaemonSet& v) { DescribeObject(c, v); }

void DescribeFields(FieldCodec& c, ReplicatedSpec& v) {
  c.Field("replicas", v.replicas);
  c.Field("selector", v.selector);
  c.Field("template", v.template_, {.emit_empty = true});
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, Deployment& v) { DescribeObject(c, v); }
void DescribeFields(FieldCodec& c, ReplicaSet& v) { DescribeObject(c, v); }

void DescribeFields(FieldCodec& c, StatefulSetSpec& v) {
  c.Field("replicas", v.replicas);
  c.Field("selector", v.selector);
  c.Field("template", v.template_, {.emit_empty = true});
  c.Field("volumeClaimTemplates", v.volume_claim_templates);
  c.Field("serviceName", v.service_name);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, StatefulSet& v) { DescribeObject(c, v); }

void DescribeFields(FieldCodec& c, JobSpec& v) {
  c.Field("parallelism", v.parallelism);
  c.Field("completions", v.completions);
  c.Field("selector", v.selector);
  c.Field("template", v.template_, {.emit_empty = true});
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, Job& v) { DescribeObject(c, v); }

}  // namespace dovetail::apis::core
