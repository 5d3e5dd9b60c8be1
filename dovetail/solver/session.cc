#include "dovetail/solver/session.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "dovetail/solver/internal/session_shortcut.h"

namespace dovetail::solver {

namespace {

class SessionImpl final : public Session {
 public:
  explicit SessionImpl(Input base)
      : base_(std::move(base)), prepared_(internal::SessionShortcut::Create(base_)) {}

  absl::StatusOr<Plan> Simulate(std::span<const size_t> removed_nodes,
                                std::span<const Pod* const> moved_pods) const override {
    for (size_t i : removed_nodes) {
      if (i >= base_.nodes.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("removed node index ", i, " out of range (", base_.nodes.size(), ")"));
      }
    }
    for (const Pod* p : moved_pods) {
      if (p == nullptr) return absl::InvalidArgumentError("null moved pod");
    }
    if (prepared_ != nullptr) {
      if (auto plan = prepared_->Simulate(removed_nodes, moved_pods)) return *std::move(plan);
    }
    return Solve(Without(removed_nodes, moved_pods));
  }

  const Input& base() const override { return base_; }

 private:
  // input': the base without the removed nodes and their bound pods, with `moved` appended to
  // the pods to place.
  Input Without(std::span<const size_t> removed_nodes,
                std::span<const Pod* const> moved_pods) const {
    std::vector<bool> removed(base_.nodes.size(), false);
    absl::flat_hash_set<std::string> removed_names;
    for (size_t i : removed_nodes) {
      removed[i] = true;
      removed_names.insert(base_.nodes[i].name);
    }
    Input out;
    out.pods.reserve(base_.pods.size() + moved_pods.size());
    out.pods = base_.pods;
    out.pods.insert(out.pods.end(), moved_pods.begin(), moved_pods.end());
    out.nodes.reserve(base_.nodes.size() - removed_names.size());
    for (size_t i = 0; i < base_.nodes.size(); ++i) {
      if (!removed[i]) out.nodes.push_back(base_.nodes[i]);
    }
    out.pools = base_.pools;
    out.bound_pods.reserve(base_.bound_pods.size());
    for (const Pod* p : base_.bound_pods) {
      if (p != nullptr && removed_names.contains(p->spec.node_name)) continue;
      out.bound_pods.push_back(p);
    }
    out.daemon_sets = base_.daemon_sets;
    out.namespace_labels = base_.namespace_labels;
    out.volume_requirements = base_.volume_requirements;
    out.options = base_.options;
    return out;
  }

  Input base_;
  // The shortcut (null when no question can take it); Simulate is const but mutates it while it
  // runs (a Session is thread-compatible).
  const std::unique_ptr<internal::SessionShortcut> prepared_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> Session::Create(Input base) {
  for (const Pod* p : base.pods) {
    if (p == nullptr) return absl::InvalidArgumentError("null pod in input");
  }
  absl::flat_hash_set<std::string> pools;
  for (const auto& p : base.pools) {
    if (!pools.insert(p.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate pool ", p.name));
    }
  }
  return std::unique_ptr<Session>(new SessionImpl(std::move(base)));
}

}  // namespace dovetail::solver
