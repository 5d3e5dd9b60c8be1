#include "dovetail/apis/core/namespace.h"

namespace dovetail::apis::core {

void DescribeFields(FieldCodec& c, Namespace& v) {
  c.Field("apiVersion", v.api_version);
  c.Field("kind", v.kind);
  c.Field("metadata", v.metadata);
  c.UnknownFields(v.unknown_fields);
}

}  // namespace dovetail::apis::core
