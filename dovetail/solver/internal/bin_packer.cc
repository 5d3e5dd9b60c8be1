#include "dovetail/solver/internal/bin_packer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>

namespace dovetail::solver::internal {

namespace {

constexpr size_t kOpen = 16;   // first fit over the most recent bins only
constexpr int kBulkTypes = 4;  // types tried for bulk and tail per level
constexpr int kTailDepth = 2;  // levels of bulk and tail
constexpr double kEpsilon = 1e-8;

// Appends `part`'s bins and usage to `into`.
void Append(Packing&& part, Packing* into) {
  for (auto& b : part.bins) into->bins.push_back(std::move(b));
  for (auto& u : part.used) into->used.push_back(std::move(u));
}

}  // namespace

bool Better(const Packing& a, const Packing& b) {
  if (a.bins.empty()) return false;
  if (b.bins.empty()) return a.cost <= b.cost + kEpsilon;
  if (a.cost < b.cost - kEpsilon) return true;
  return a.cost <= b.cost + kEpsilon && a.bins.size() < b.bins.size();
}

Packing BinPacker::PackOn(const std::vector<size_t>& items, size_t t, size_t max_bins) const {
  const Amounts& room = room_[t];
  Packing p;
  for (size_t i : items) {
    size_t b = p.bins.size() > kOpen ? p.bins.size() - kOpen : 0;
    while (b < p.bins.size() && !Fits(p.used[b], *requests_[i], room)) ++b;
    if (b == p.bins.size()) {
      if (p.bins.size() + 1 > max_bins) return Packing{};
      p.bins.emplace_back();
      p.used.emplace_back(dims_, 0);
    }
    p.bins[b].push_back(i);
    AddTo(p.used[b], *requests_[i]);
  }
  p.cost = static_cast<double>(p.bins.size()) * price_[t];
  return p;
}

std::vector<BinPacker::Floor> BinPacker::Floors(const std::vector<size_t>& items) const {
  Amounts need(dims_, 0), largest(dims_, 0);
  for (size_t i : items) {
    AddTo(need, *requests_[i]);
    for (size_t d = 0; d < largest.size(); ++d) {
      largest[d] = std::max(largest[d], (*requests_[i])[d]);
    }
  }
  std::vector<Floor> order;
  compatible_.ForEach([&](size_t t) {
    const Amounts& room = room_[t];
    if (!FitsIn(largest, room)) return;
    double nodes = 0;
    for (size_t d = 0; d < room.size(); ++d) {
      if (need[d] > 0) {
        nodes = std::max(nodes, static_cast<double>(need[d]) / static_cast<double>(room[d]));
      }
    }
    order.push_back({std::max(1.0, std::ceil(nodes)) * price_[t], nodes * price_[t], t});
  });
  std::sort(order.begin(), order.end(), [](const Floor& a, const Floor& b) {
    return a.whole != b.whole ? a.whole < b.whole : a.t < b.t;
  });
  return order;
}

Packing BinPacker::Pack(std::vector<size_t> items, double budget, int depth) const {
  Packing best;
  best.cost = budget;
  if (items.empty()) {
    best.cost = 0;
    return best;
  }
  std::stable_sort(items.begin(), items.end(), [&](size_t a, size_t b) {
    const Amounts& ra = *requests_[a];
    const Amounts& rb = *requests_[b];
    return ra[0] != rb[0] ? ra[0] > rb[0] : ra[1] > rb[1];
  });
  std::vector<Floor> order = Floors(items);
  for (const Floor& f : order) {
    if (f.whole >= best.cost + kEpsilon) break;
    Packing p = PackOn(items, f.t, static_cast<size_t>(best.cost / price_[f.t]) + 1);
    if (Better(p, best)) best = std::move(p);
  }
  if (depth <= 0) return best;
  std::sort(order.begin(), order.end(), [](const Floor& a, const Floor& b) {
    return a.part != b.part ? a.part < b.part : a.t < b.t;
  });
  int tried = 0;
  for (const Floor& f : order) {
    if (f.part >= best.cost + kEpsilon || tried == kBulkTypes) break;
    if (f.whole < 2 * price_[f.t]) continue;  // all on one node: the loop above had it
    ++tried;
    TryBulkAndTail(items, f, depth, &best);
  }
  return best;
}

void BinPacker::TryBulkAndTail(const std::vector<size_t>& items, const Floor& f, int depth,
                               Packing* best) const {
  const size_t t = f.t;
  Packing p = PackOn(items, t, static_cast<size_t>(best->cost / price_[t]) + 2);
  if (p.bins.size() < 2) return;  // over budget, or one node after all
  // Least filled last (fill: the largest share of the node any resource takes).
  const Amounts& room = room_[t];
  std::vector<double> fill(p.bins.size(), 0);
  for (size_t b = 0; b < p.bins.size(); ++b) {
    for (size_t d = 0; d < room.size(); ++d) {
      if (room[d] > 0) {
        fill[b] =
            std::max(fill[b], static_cast<double>(p.used[b][d]) / static_cast<double>(room[d]));
      }
    }
  }
  std::vector<size_t> by_fill(p.bins.size());
  std::iota(by_fill.begin(), by_fill.end(), 0);
  std::stable_sort(by_fill.begin(), by_fill.end(),
                   [&](size_t a, size_t b) { return fill[a] > fill[b]; });
  for (size_t j = 1; j <= 2 && j < p.bins.size(); ++j) {
    const size_t kept = p.bins.size() - j;
    const double bulk = static_cast<double>(kept) * price_[t];
    if (bulk >= best->cost) break;
    std::vector<size_t> tail;
    for (size_t k = kept; k < by_fill.size(); ++k) {
      const auto& bin = p.bins[by_fill[k]];
      tail.insert(tail.end(), bin.begin(), bin.end());
    }
    Packing rest = Pack(std::move(tail), best->cost - bulk, depth - 1);
    if (rest.bins.empty()) continue;
    Packing mixed;
    mixed.cost = bulk + rest.cost;
    for (size_t k = 0; k < kept; ++k) {
      mixed.bins.push_back(p.bins[by_fill[k]]);
      mixed.used.push_back(p.used[by_fill[k]]);
    }
    Append(std::move(rest), &mixed);
    if (Better(mixed, *best)) *best = std::move(mixed);
  }
}

Packing BinPacker::Best(double budget) const {
  std::vector<size_t> all(requests_.size());
  std::iota(all.begin(), all.end(), 0);
  Packing together = Pack(all, budget, kTailDepth);
  // Items by shape (memory per cpu, rounded to a power of two GiB per vCPU), each shape on the
  // type that suits it best.
  std::map<int, std::vector<size_t>> shapes;
  for (size_t i = 0; i < requests_.size(); ++i) {
    const double cpu = static_cast<double>((*requests_[i])[0]);
    const double mem = static_cast<double>((*requests_[i])[1]);
    int shape =
        cpu <= 0 ? 100
                 : static_cast<int>(std::lround(std::log2(std::max(1.0, mem / cpu) / (1 << 20))));
    shapes[shape].push_back(i);
  }
  Packing by_shape;
  if (shapes.size() > 1) {
    by_shape.cost = 0;
    for (auto& [shape, items] : shapes) {
      Packing p = Pack(items, std::min(budget, together.cost) - by_shape.cost, kTailDepth);
      if (p.bins.empty()) {
        by_shape.cost = kInfPrice;
        break;
      }
      by_shape.cost += p.cost;
      Append(std::move(p), &by_shape);
    }
  }
  return Better(by_shape, together) ? std::move(by_shape) : std::move(together);
}

}  // namespace dovetail::solver::internal
