// BinPacker: the packing SplitClaims (repack.cc) tries for one group of interchangeable NodeClaims
// (same pool, requirements and offerings): its pods onto as few and as cheap nodes of the group's
// compatible instance types as it finds, within a budget (what the group costs today).
//
// Two packings are compared by Better: cheaper wins, and at the same cost (to a millionth of a
// cent) fewer nodes. A Packing without bins is no packing, only a budget to stay within.
//
// Pack tries every type alone (first fit decreasing onto nodes of that type, types in order of
// their price floor) and, while `depth` > 0, "bulk and tail": most nodes of a type that is cheap
// per unit of what the pods need, with the pods of its least-filled one or two nodes packed again,
// recursively, onto whatever suits the remainder (so 223 small pods can go on one large node plus
// two small ones rather than on 15 mid-sized ones or two large ones). Best compares packing all
// pods together with packing each shape of pod (memory per cpu) on its own.
//
// Deterministic; the referenced vectors must outlive the packer. Thread-compatible.
#pragma once

#include <cstddef>
#include <vector>

#include "dovetail/solver/internal/offerings.h"
#include "dovetail/solver/internal/resources.h"
#include "dovetail/solver/type_set.h"

namespace dovetail::solver::internal {

struct Packing {
  double cost = kInfPrice;
  std::vector<std::vector<size_t>> bins;  // item indices per node
  std::vector<Amounts> used;              // per node
};

// True when `a` is a better packing than `b` (see above).
bool Better(const Packing& a, const Packing& b);

class BinPacker {
 public:
  // `requests[i]` is item i's request; `room[t]` and `price[t]` what a node of type t holds and
  // costs (only types in `compatible` are used); `dims` the number of resource dimensions.
  BinPacker(const std::vector<const Amounts*>& requests, const std::vector<Amounts>& room,
            const std::vector<double>& price, const TypeSet& compatible, size_t dims)
      : requests_(requests), room_(room), price_(price), compatible_(compatible), dims_(dims) {}

  // The better of all items packed together and each shape packed apart, under `budget` (no bins
  // when neither fits under it).
  Packing Best(double budget) const;

  // `items` (any order) for less than `budget`, with up to `depth` levels of bulk and tail.
  Packing Pack(std::vector<size_t> items, double budget, int depth) const;

  // `items`, sorted largest first, first fit onto nodes of type `t`; no bins past `max_bins` nodes.
  Packing PackOn(const std::vector<size_t>& items, size_t t, size_t max_bins) const;

 private:
  // What a type could cost for `items`: whole nodes, and the fractional nodes the capacity they
  // need takes (its price floor).
  struct Floor {
    double whole;
    double part;
    size_t t;
  };
  // The compatible types that hold the largest item, with their floors, cheapest whole first.
  std::vector<Floor> Floors(const std::vector<size_t>& items) const;
  // Bulk and tail on type `f.t`: improves `*best` when a mix beats it.
  void TryBulkAndTail(const std::vector<size_t>& items, const Floor& f, int depth,
                      Packing* best) const;

  const std::vector<const Amounts*>& requests_;
  const std::vector<Amounts>& room_;
  const std::vector<double>& price_;
  const TypeSet& compatible_;
  const size_t dims_;
};

}  // namespace dovetail::solver::internal
