#pragma once
// Who owns (steps) what of the model's parameters. Deterministic: it depends
// on the sizes and the world size alone, so every rank computes the same.
#include <cstdint>
#include <vector>

#include "skein/parallel.hpp"

namespace skein_zero {

// Each parameter whole: ZeroRedundancyOptimizer's greedy partition.
// Parameters are taken largest first (ties: the earlier one) and each goes
// to the rank that holds the fewest elements so far (ties: the lower rank).
// owners[i] for the parameter of sizes[i] elements, in [0, world_size).
std::vector<int> greedy_owners(const std::vector<std::int64_t>& sizes, int world_size);

// Parameters laid end to end in order and cut in world_size runs of equal
// length (DeepSpeed ZeRO's flat partition): rank r owns the r-th run, so
// every rank about 1/W of the elements however large one parameter is. A
// boundary inside a parameter moves to its nearer end when that end is at
// most `snap` of a rank's share away (a parameter cut is all-reduced and
// held whole by each of its owners under stage 2), and always when the
// parameter cannot be cut (cuttable[i] false).
struct FlatOptions {
  double snap = 0.1;
};
std::vector<skein::ParameterSpan> flat_spans(const std::vector<std::int64_t>& sizes,
                                             const std::vector<bool>& cuttable, int world_size,
                                             const FlatOptions& options = {});

// Each parameter one span, owned by owners[i].
std::vector<skein::ParameterSpan> whole(const std::vector<std::int64_t>& sizes, const std::vector<int>& owners);

}  // namespace skein_zero
