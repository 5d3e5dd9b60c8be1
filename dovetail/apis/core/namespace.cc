#include "dovetail/apis/core/namespace.h"

namespace dovetail::apis::core {

void DescribeFields(FieldCodec& c, Namespace& v) { DescribeObject(c, v); }

}  // namespace dovetail::apis::core
