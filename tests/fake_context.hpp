#pragma once
// Callbacks alone: a TrainContext whose history the test writes, and a
// fixture that creates a bundled callback plugin with options. Shared by the
// tests in the callback plugins' folders and tests/test_callbacks.cpp.
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>

#include <torch/torch.h>

#include "skein/callback.hpp"
#include "skein/core/log_stream.hpp"
#include "skein/core/option_schema.hpp"
#include "skein/parallel.hpp"
#include "test_support.hpp"

namespace test {

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Collectives of `world` ranks that are threads of this test: each call
// blocks until every rank has made it, then all get the sum (or maximum).
class ThreadCollectives {
 public:
  explicit ThreadCollectives(int world) : world_(world) {}
  void reduce(std::vector<double>& values, bool max) {
    std::unique_lock<std::mutex> lock(mutex_);
    const long round = round_;
    if (arrived_ == 0) {
      acc_ = values;
    } else {
      for (std::size_t i = 0; i < values.size(); ++i) acc_[i] = max ? std::max(acc_[i], values[i]) : acc_[i] + values[i];
    }
    if (++arrived_ == world_) {
      result_ = acc_;
      arrived_ = 0;
      ++round_;
      done_.notify_all();
    } else {
      done_.wait(lock, [&] { return round_ != round; });
    }
    values = result_;
  }

 private:
  int world_;
  std::mutex mutex_;
  std::condition_variable done_;
  int arrived_ = 0;
  long round_ = 0;
  std::vector<double> acc_, result_;
};

// A parallel wrapper with collectives only: one rank alone, or a rank of
// ThreadCollectives.
class FakeParallel final : public skein::Parallel {
 public:
  explicit FakeParallel(ThreadCollectives* ranks = nullptr) : ranks_(ranks) {}
  void prepare(torch::nn::Module&) override {}
  void finish_gradients() override {}
  void all_reduce_sum(std::vector<double>& v) override {
    if (ranks_) ranks_->reduce(v, false);
  }
  void all_reduce_max(std::vector<double>& v) override {
    if (ranks_) ranks_->reduce(v, true);
  }
  void barrier() override {
    std::vector<double> none;
    all_reduce_sum(none);
  }

 private:
  ThreadCollectives* ranks_;
};

class FakeContext final : public skein::TrainContext {
 public:
  FakeContext() : optimizer_({weight_}, torch::optim::SGDOptions(0.1)) {}
  const skein::RunInfo& run() const override { return run_; }
  skein::History& history() override { return history_; }
  skein::Model& model_base() override { throw std::logic_error("no model in this test"); }
  torch::optim::Optimizer& optimizer() override { return optimizer_; }
  skein::Parallel& parallel() override { return parallel_; }
  // This context as rank `rank` of `world` threads sharing `ranks`.
  void join(ThreadCollectives& ranks, int rank, int world) {
    parallel_ = FakeParallel(&ranks);
    run_.rank = rank;
    run_.world_size = world;
  }
  long epoch() const override { return static_cast<long>(history_.size()); }
  void request_stop(const std::string& reason) override {
    if (stop_reason.empty()) stop_reason = reason;
  }
  bool stop_requested() const override { return !stop_reason.empty(); }
  std::ostream& log() override { return null_; }
  long batches_per_epoch() const override { return 1; }
  const nlohmann::json& config() const override { return config_; }
  void request_checkpoint(const std::string& name, const std::vector<std::string>& remove) override {
    checkpoints.push_back({name, remove});
  }
  std::string checkpoint_root() const override { return "/nonexistent"; }

  // Appends an epoch holding `key` = value.
  void epoch_with(const std::string& key, double value) {
    history_.new_epoch();
    history_.commit_batches();
    history_.record(key, value);
  }

  std::string stop_reason;
  std::vector<std::pair<std::string, std::vector<std::string>>> checkpoints;
  nlohmann::json config_ = {{"max_epochs", 10}};

 private:
  skein::RunInfo run_;
  FakeParallel parallel_;
  skein::History history_;
  torch::Tensor weight_ = torch::zeros({1}, torch::requires_grad());
  torch::optim::SGD optimizer_;
  skein::core::NullStream null_;
};

struct Fixture {
  Fixture() { test::load_test_plugins(registry); }
  std::shared_ptr<skein::Callback> make(const std::string& name, const nlohmann::json& options = {}) {
    const auto& rec = registry.require(name);
    auto values = skein::core::validate_options(rec.options, options.is_null() ? nlohmann::json::object() : options, name, name);
    skein::Options opts(name, values);
    return registry.create<skein::Callback>(rec, skein::PluginArgs{opts, run, nullptr});
  }
  // Runs `cb` over epochs with these values of `key`; returns the epoch at
  // which it asked to stop (0: never).
  long stop_epoch(skein::Callback& cb, FakeContext& ctx, const std::string& key,
                  const std::vector<double>& values) {
    for (double v : values) {
      ctx.epoch_with(key, v);
      cb.on_epoch_end(ctx);
      if (ctx.stop_requested()) return ctx.epoch();
    }
    return 0;
  }
  skein::core::PluginRegistry registry;
  skein::RunInfo run;
};

}  // namespace test
