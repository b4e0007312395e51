#pragma once
// What the engine parts' tests share: a small classification run's parts
// (the bundled mlp and cross_entropy plugins, made through the SDK harness
// as `skein train` makes them; SGD; a FakeParallel), a callback that records
// the hooks it sees, and batches.
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <torch/optim/sgd.h>

#include "skein/testing.hpp"
#include "skein/training/engine/run_parts.hpp"
#include "skein/training/engine/step_parts.hpp"

namespace engine_test {

// Whether two lists of tensors hold the same values, tensor by tensor.
inline bool same(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (!torch::equal(a[i], b[i])) return false;
  return a.size() == b.size();
}

struct RecordingCallback : skein::Callback {
  std::vector<std::string> seen;        // hooks in order ("exception:<line>" with its error)
  nlohmann::json saved = nullptr;       // what state() returns, load_state() sets
  bool fail_in_on_exception = false;
  void on_batch_begin(skein::TrainContext&, const skein::Batch&) override { seen.push_back("batch_begin"); }
  void on_grad_computed(skein::TrainContext&, const skein::Batch&) override { seen.push_back("grad"); }
  void on_batch_end(skein::TrainContext&, const skein::Batch&) override { seen.push_back("batch_end"); }
  void on_epoch_end(skein::TrainContext&) override { seen.push_back("epoch_end"); }
  void on_exception(skein::TrainContext&, const std::string& error) override {
    seen.push_back("exception:" + error);
    if (fail_in_on_exception) throw std::runtime_error("cannot report");
  }
  nlohmann::json state() const override { return saved; }
  void load_state(const nlohmann::json& state) override {
    if (state == "unfit") throw std::runtime_error("no such field");
    saved = state;
  }
};

// A run of 4 features and 3 classes on one rank, or on rank `rank` of `ranks`.
struct Engine {
  explicit Engine(skein::testing::ThreadRanks* ranks = nullptr, int rank = 0, long accumulate_steps = 1)
      : context(ranked(harness, ranks, rank), context_options(ranks)) {
    info.input_shape = {4};
    info.num_classes = 3;
    parts.data_info = info;
    torch::manual_seed(1);
    parts.model = harness.create<skein::Model>("mlp", {{"hidden", {8}}}, &info);
    parts.loss = harness.create<skein::Loss>("cross_entropy");
    parts.parallel = std::make_shared<skein::testing::FakeParallel>(ranks);
    parts.optimizer = std::make_unique<torch::optim::SGD>(parts.model->parameters(), torch::optim::SGDOptions(0.1));
    parts.callbacks.add("recorder", callback);
    forward = std::make_unique<skein::core::ForwardPass>(skein::core::ForwardParts{
        *parts.model, *parts.loss, parts.splits.scaling, parts.data_info, "mlp", "cross_entropy"});
    this->accumulate_steps = accumulate_steps;
  }

  skein::core::StepParts step_parts() {
    return {*forward, *parts.model, *parts.optimizer, *parts.parallel, *parts.loss,
            history,  records,      parts.callbacks,  context};
  }

  // A batch of `n` samples whose inputs and targets this object keeps.
  skein::Batch batch(int n, long index = 0) {
    inputs.push_back(torch::randn({n, 4}));
    targets.push_back(torch::randint(0, 3, {n}, torch::kLong));
    skein::Batch b{inputs.back(), targets.back()};
    b.index = index;
    return b;
  }

  // The harness as rank `rank` of `ranks` (its plugins and the context are that rank).
  static const skein::testing::Harness& ranked(skein::testing::Harness& h, skein::testing::ThreadRanks* ranks,
                                               int rank) {
    h.run().rank = rank;
    h.run().world_size = ranks ? ranks->world() : 1;
    return h;
  }
  static skein::testing::FakeRunOptions context_options(skein::testing::ThreadRanks* ranks) {
    skein::testing::FakeRunOptions o;
    o.ranks = ranks;
    return o;
  }

  skein::testing::Harness harness;
  skein::DataInfo info;
  skein::core::RunParts parts;
  skein::History history;
  skein::core::BatchRecords records{history};
  skein::testing::FakeRun context;
  std::shared_ptr<RecordingCallback> callback = std::make_shared<RecordingCallback>();
  std::unique_ptr<skein::core::ForwardPass> forward;
  long accumulate_steps = 1;
  std::deque<torch::Tensor> inputs, targets;  // what batches refer to
};

// The values of `key` in the batch log's rows, in order.
std::vector<double> logged(const skein::BatchLog& log, const std::string& key);

}  // namespace engine_test
