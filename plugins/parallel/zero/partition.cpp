#include "partition.hpp"

#include <algorithm>
#include <numeric>

namespace skein_zero {

std::vector<int> greedy_owners(const std::vector<std::int64_t>& sizes, int world_size) {
  std::vector<std::size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
  std::vector<std::int64_t> held(static_cast<std::size_t>(std::max(world_size, 1)), 0);
  std::vector<int> owners(sizes.size(), 0);
  for (std::size_t i : order) {
    const auto least = std::min_element(held.begin(), held.end());  // the first of equals: the lowest rank
    owners[i] = static_cast<int>(least - held.begin());
    *least += sizes[i];
  }
  return owners;
}

}  // namespace skein_zero
