// The apis::core names (dovetail/apis/core/meta.h) that the sources and tests of
// dovetail/scheduling use unqualified, declared once for them. For this directory's .cc files
// only: the public headers spell these names out, so that including them adds nothing to
// dovetail::scheduling.
#pragma once

#include "dovetail/apis/core/meta.h"

namespace dovetail::scheduling {

using apis::core::LabelSelector;
using apis::core::LabelSelectorOperator;
using apis::core::LabelSelectorRequirement;
using apis::core::NodeSelector;
using apis::core::NodeSelectorRequirement;
using apis::core::NodeSelectorTerm;
using apis::core::SelectorOperator;
using apis::core::StringMap;
using apis::core::Taint;
using apis::core::TaintEffect;
using apis::core::Toleration;
using apis::core::TolerationOperator;

}  // namespace dovetail::scheduling
