// The names the solver's internals use unqualified, declared once for solver/internal/.
#pragma once

#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/scheduling/requirements.h"

namespace dovetail::solver::internal {

using apis::core::LabelSelector;
using apis::core::Taint;
using apis::core::TaintEffect;
using apis::core::Toleration;
using cloudprovider::Offering;
using scheduling::AllowUndefined;
using scheduling::Requirement;
using scheduling::Requirements;
namespace v1 = apis::v1;

}  // namespace dovetail::solver::internal
