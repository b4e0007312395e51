#pragma once
// Which rank owns (steps) each parameter: ZeroRedundancyOptimizer's greedy
// partition. Parameters are taken largest first (ties: the earlier one) and
// each goes to the rank that holds the fewest elements so far (ties: the
// lower rank), so every rank gets about 1/W of the elements. Deterministic:
// it depends on the sizes and the world size alone.
#include <cstdint>
#include <vector>

namespace skein_zero {

// owners[i] for the parameter of sizes[i] elements, in [0, world_size).
std::vector<int> greedy_owners(const std::vector<std::int64_t>& sizes, int world_size);

}  // namespace skein_zero
