#pragma once
// Bytes as a uint8 tensor and back: how checkpoints store each rank's opaque
// states (random generators, wrapper states, batch records) in one file.
#include <string>

#include <torch/types.h>

namespace skein::core {

inline std::string bytes_of(const torch::Tensor& t) {
  if (t.numel() == 0) return {};
  auto c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

inline torch::Tensor tensor_of(const std::string& bytes) {
  return torch::from_blob(const_cast<char*>(bytes.data()), {static_cast<std::int64_t>(bytes.size())}, torch::kUInt8)
      .clone();
}

}  // namespace skein::core
