#pragma once
// The indices SampleSource::fetch receives, as a tensor for index_select.
#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace skein {

// An int64 view of `indices`, not a copy: use it while the vector lives.
inline torch::Tensor index_tensor(const std::vector<std::int64_t>& indices) {
  return torch::from_blob(const_cast<std::int64_t*>(indices.data()), {static_cast<std::int64_t>(indices.size())},
                          torch::kLong);
}

}  // namespace skein
