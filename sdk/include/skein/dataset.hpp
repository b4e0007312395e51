#pragma once
#include <optional>

#include <torch/types.h>

#include "skein/export.hpp"
#include "skein/run_info.hpp"

namespace skein {

// A whole split in memory: inputs [N, ...] float, targets [N] int64 class ids.
struct TensorSplit {
  torch::Tensor inputs;
  torch::Tensor targets;
  std::int64_t size() const { return targets.defined() ? targets.size(0) : 0; }
};

// Base of every dataset plugin. The trainer carves the validation split out of
// train() (config key valid_split) and evaluates test() once after training.
class SKEIN_EXPORT Dataset {
 public:
  virtual ~Dataset();
  virtual DataInfo info() const = 0;
  virtual TensorSplit train() = 0;
  virtual std::optional<TensorSplit> test() { return std::nullopt; }
};

// A dataset that loads everything in its constructor into these members.
class SKEIN_EXPORT InMemoryDataset : public Dataset {
 public:
  ~InMemoryDataset() override;
  DataInfo info() const override { return info_; }
  TensorSplit train() override { return train_; }
  std::optional<TensorSplit> test() override { return test_; }

 protected:
  DataInfo info_;
  TensorSplit train_;
  std::optional<TensorSplit> test_;
};

}  // namespace skein
