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

std::vector<skein::ParameterSpan> whole(const std::vector<std::int64_t>& sizes, const std::vector<int>& owners) {
  std::vector<skein::ParameterSpan> spans;
  for (std::size_t i = 0; i < sizes.size(); ++i) spans.push_back({i, 0, sizes[i], owners[i]});
  return spans;
}

namespace {

// Where a boundary at element `b` of the flat run goes: inside parameter i
// ([start, end)), to its nearer end when allowed or required.
std::int64_t placed(std::int64_t b, std::int64_t start, std::int64_t end, bool cuttable, double most) {
  const std::int64_t down = b - start, up = end - b;
  const std::int64_t nearer = down <= up ? start : end;
  if (!cuttable || static_cast<double>(std::min(down, up)) <= most) return nearer;
  return b;
}

}  // namespace

std::vector<skein::ParameterSpan> flat_spans(const std::vector<std::int64_t>& sizes,
                                             const std::vector<bool>& cuttable, int world_size,
                                             const FlatOptions& options) {
  const int world = std::max(world_size, 1);
  std::vector<std::int64_t> starts(sizes.size() + 1, 0);  // each parameter's first element in the flat run
  for (std::size_t i = 0; i < sizes.size(); ++i) starts[i + 1] = starts[i] + sizes[i];
  const std::int64_t total = starts.back();
  const double share = static_cast<double>(total) / world;
  // Rank r owns [bounds[r], bounds[r + 1]).
  std::vector<std::int64_t> bounds(static_cast<std::size_t>(world) + 1, total);
  bounds[0] = 0;
  for (int r = 1; r < world; ++r) {
    std::int64_t b = total * r / world;
    const auto i = static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), b) - starts.begin()) - 1;
    if (i < sizes.size() && b > starts[i])
      b = placed(b, starts[i], starts[i + 1], cuttable[i], options.snap * share);
    bounds[static_cast<std::size_t>(r)] = std::max(b, bounds[static_cast<std::size_t>(r) - 1]);
  }
  std::vector<skein::ParameterSpan> spans;
  int owner = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::int64_t at = starts[i];
    do {
      while (owner + 1 < world && bounds[static_cast<std::size_t>(owner) + 1] <= at) ++owner;
      const std::int64_t end = std::min(starts[i + 1], bounds[static_cast<std::size_t>(owner) + 1]);
      spans.push_back({i, at - starts[i], end - at, owner});
      at = end;
    } while (at < starts[i + 1]);
  }
  return spans;
}

}  // namespace skein_zero
