// The controllers `dovetail controller` runs, in start order (stopped in reverse).
#include <memory>
#include <vector>

#include "dovetail/operator/operator.h"

namespace dovetail::op {

std::vector<std::unique_ptr<controllers::Controller>> BuildControllers(
    const controllers::Dependencies& deps, const Options& options) {
  (void)deps;
  (void)options;
  std::vector<std::unique_ptr<controllers::Controller>> out;
  return out;
}

}  // namespace dovetail::op
