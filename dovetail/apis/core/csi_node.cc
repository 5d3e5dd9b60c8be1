#include "dovetail/apis/core/csi_node.h"

namespace dovetail::apis::core {

void DescribeFields(FieldCodec& c, VolumeNodeResources& v) { c.Field("count", v.count); }

void DescribeFields(FieldCodec& c, CSINodeDriver& v) {
  c.Field("name", v.name, {.emit_empty = true});
  c.Field("nodeID", v.node_id, {.emit_empty = true});
  c.Field("topologyKeys", v.topology_keys);
  c.Field("allocatable", v.allocatable);
}

void DescribeFields(FieldCodec& c, CSINodeSpec& v) {
  c.Field("drivers", v.drivers, {.emit_empty = true});
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, CSINode& v) { DescribeObject(c, v); }

}  // namespace dovetail::apis::core
