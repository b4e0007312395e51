#include <numeric>
#include <sstream>
#include <stdexcept>

#include "skein/dataset.hpp"

namespace skein {

namespace {

TensorSplit fetch_all(const SampleSource& source) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(source.size()));
  std::iota(all.begin(), all.end(), 0);
  return source.fetch(all, FetchOptions{});
}

}  // namespace

// With the other members: StreamingDataset's vtable is emitted here and names them.
StreamingDataset::~StreamingDataset() = default;

TensorSplit StreamingDataset::train() { return fetch_all(*train_source()); }

std::optional<TensorSplit> StreamingDataset::test() {
  auto source = test_source();
  if (!source) return std::nullopt;
  return fetch_all(*source);
}

void check_held_out_shape(const DataInfo& info, const torch::Tensor& inputs, const std::string& what,
                          const std::string& split) {
  const auto shape = inputs.sizes().slice(1).vec();
  if (shape != info.input_shape) {
    std::ostringstream s;
    s << what << ": " << split << " samples have shape " << c10::IntArrayRef(shape) << ", training samples "
      << c10::IntArrayRef(info.input_shape);
    throw std::runtime_error(s.str());
  }
}

}  // namespace skein
