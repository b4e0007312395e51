#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "skein/detail/export.hpp"
#include "skein/run.hpp"

namespace skein {

// A whole split in memory: inputs [N, ...], targets [N, ...] (int64 class
// ids [N] for classification losses, numbers for the others).
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

// What a streaming source is asked for besides the indices.
struct FetchOptions {
  bool augment = false;    // true for training batches: random augmentation allowed
  std::uint64_t seed = 0;  // seeds this batch's augmentation (the same on a resumed run)
};

// A split read on demand, e.g. a folder of images larger than memory.
class SKEIN_EXPORT SampleSource {
 public:
  virtual ~SampleSource();
  virtual std::int64_t size() const = 0;
  // The samples at `indices` (each in [0, size())), stacked in that order:
  // inputs [B, ...] float, targets [B, ...]. The trainer calls it from its
  // prefetch threads, several at once: it must be thread-safe. A sample
  // that cannot be read throws std::runtime_error naming it.
  virtual TensorSplit fetch(const std::vector<std::int64_t>& indices, const FetchOptions& options) const = 0;
  // Every target of the split, in order, when the source holds them in memory
  // (undefined, the default, otherwise). The trainer then treats the split as
  // an in-memory one: it checks all targets (values, class counts) before
  // training rather than batch by batch, and fetches batches on the training
  // thread, as fetching is cheap.
  virtual torch::Tensor targets_in_memory() const { return {}; }
};

// A map-style dataset: each split is a SampleSource the trainer reads batch by
// batch (each rank only its own shard), prefetching on background threads.
class SKEIN_EXPORT StreamingDataset : public Dataset {
 public:
  ~StreamingDataset() override;
  virtual std::shared_ptr<const SampleSource> train_source() = 0;
  virtual std::shared_ptr<const SampleSource> test_source() { return nullptr; }
  // Whole splits, every sample fetched (the trainer does not call these).
  TensorSplit train() override;
  std::optional<TensorSplit> test() override;
};

// API 2.4: an optional second base of a dataset with validation data of its
// own (files the user named): the trainer validates on it instead of holding
// out `valid_split` of the training set. Found with dynamic_cast; an
// in-memory dataset overrides valid(), a streaming one valid_source().
// Neither given (nullopt / nullptr): valid_split applies.
class SKEIN_EXPORT OwnValidation {
 public:
  virtual ~OwnValidation();
  virtual std::optional<TensorSplit> valid() { return std::nullopt; }
  virtual std::shared_ptr<const SampleSource> valid_source() { return nullptr; }
};

// API 3.4: how a dataset turns the raw values of its files (an image's bytes
// 0..255, say) into the inputs the model sees, element-wise:
//   model input = (raw / divide_by - mean) / std
// with mean and std one value, or one per channel (a sample's first axis);
// empty: 0 and 1. The run's checkpoints record it; `skein predict` applies it
// to raw inputs, `skein export` builds it into a TorchScript module and writes
// it into the JSON beside every exported model, so no user need look it up.
struct InputScale {
  double divide_by = 1;
  std::vector<double> mean;
  std::vector<double> std;
};

// API 3.4: an optional second base of a dataset that scales its raw inputs
// (found with dynamic_cast): input_scale() says how. A dataset without it
// hands its files' values to the model unchanged, or scales them in a way
// that predict's and export's users must repeat themselves.
class SKEIN_EXPORT ScaledInputs {
 public:
  virtual ~ScaledInputs();
  virtual InputScale input_scale() const = 0;
};

// Throws (std::runtime_error, naming `what` and `split`) when held-out
// `inputs` [N, ...] do not have the training samples' shape `info.input_shape`.
SKEIN_EXPORT void check_held_out_shape(const DataInfo& info, const torch::Tensor& inputs, const std::string& what,
                                       const std::string& split);

}  // namespace skein
