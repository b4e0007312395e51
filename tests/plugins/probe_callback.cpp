// Test callback: records the hook order, reaches the user's model type, can
// request a stop or fail on chosen ranks, and dumps what tests compare
// (per-rank history, first-batch gradients, final parameters) into the run dir.
#include <cstdlib>
#include <fstream>

#include <torch/serialize.h>

#include "probe_model.hpp"
#include "skein/callback.hpp"
#include "skein/plugin.hpp"

namespace {

// Runs when the library is loaded: lets a test see whether listing plugins
// loaded (and so ran) this one.
const bool kLoadMarker = [] {
  if (const char* path = std::getenv("SKEIN_TEST_LOAD_MARKER")) std::ofstream(path) << "loaded\n";
  return true;
}();

class ProbeCallback final : public skein::Callback {
 public:
  explicit ProbeCallback(const skein::PluginArgs& args)
      : stop_at_(args.options.get_int("stop_at")),
        stop_rank_(args.options.get_int("stop_rank")),
        fail_at_(args.options.get_int("fail_at")),
        fail_rank_(args.options.get_int("fail_rank")),
        use_model_(args.options.get_bool("use_model")),
        freeze_(args.options.get_bool("freeze")),
        dump_(args.options.get_bool("dump")),
        stop_below_(args.options.get_number("stop_below")) {}

  void on_train_begin(skein::TrainContext&) override { events_ += "T"; }
  void on_epoch_begin(skein::TrainContext& ctx) override {
    events_ += "E";
    if (fail_at_ > 0 && ctx.epoch() == fail_at_ && (fail_rank_ < 0 || fail_rank_ == ctx.run().rank))
      throw std::runtime_error("probe failure on rank " + std::to_string(ctx.run().rank));
  }
  void on_batch_begin(skein::TrainContext&, const skein::Batch& b) override {
    events_ += b.training ? "b" : "v";
  }
  void on_grad_computed(skein::TrainContext& ctx, const skein::Batch& b) override {
    if (b.training && b.loss.defined()) events_ += "g";
    if (dump_ && ctx.epoch() == 1 && b.index == 0) {
      // The batch, the parameters before the step, and the synced gradients.
      std::vector<torch::Tensor> out{b.inputs, b.targets};
      for (const auto& p : ctx.model_base().parameters()) out.push_back(p.detach().clone());
      for (const auto& p : ctx.model_base().parameters())
        out.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros({0}));
      torch::save(out, file(ctx, "first_batch", ".pt"));
    }
    if (freeze_)
      for (auto& p : ctx.model_base().parameters())
        if (p.grad().defined()) p.mutable_grad().zero_();
  }
  void on_batch_end(skein::TrainContext&, const skein::Batch&) override { events_ += "."; }
  void on_epoch_end(skein::TrainContext& ctx) override {
    events_ += "e";
    if (use_model_) {
      auto& model = ctx.model<ProbeModel>();
      model.note_epoch(ctx.epoch());
      ctx.history().record("probe_tag", model.tag);
      ctx.history().record("probe_epochs_seen", static_cast<long>(model.epochs_seen.size()));
    }
    // A decision taken from the (synced) history.
    auto loss = ctx.history().get(-1, "train_loss");
    if (stop_below_ > 0 && loss.is_number() && loss.get<double>() < stop_below_) {
      ctx.history().record("probe_stop_epoch", ctx.epoch());
      ctx.request_stop("train_loss below " + std::to_string(stop_below_));
    }
    if (stop_at_ > 0 && ctx.epoch() >= stop_at_ && (stop_rank_ < 0 || stop_rank_ == ctx.run().rank))
      ctx.request_stop("probe asked at epoch " + std::to_string(ctx.epoch()));
  }
  void on_train_end(skein::TrainContext& ctx) override {
    events_ += "t";
    ctx.history().record("probe_events", events_);
    if (dump_) {
      std::ofstream(file(ctx, "history", ".json")) << ctx.history().dump();
      std::vector<torch::Tensor> params;
      for (const auto& p : ctx.model_base().parameters()) params.push_back(p.detach().clone());
      torch::save(params, file(ctx, "params", ".pt"));
    }
  }

 private:
  static std::string file(skein::TrainContext& ctx, const std::string& what, const std::string& ext) {
    return ctx.run().run_dir + "/probe_" + what + "_rank" + std::to_string(ctx.run().rank) + ext;
  }

  long stop_at_, stop_rank_, fail_at_, fail_rank_;
  bool use_model_, freeze_, dump_;
  double stop_below_;
  std::string events_;
};

}  // namespace

SKEIN_PLUGIN(ProbeCallback, callback, "probe_callback", "0.1.0", "Test callback",
             SKEIN_OPTION("stop_at", integer, "0", "Request a stop at this epoch (0: never)"),
             SKEIN_OPTION("stop_rank", integer, "-1", "Only this rank requests it (-1: all)"),
             SKEIN_OPTION("fail_at", integer, "0", "Throw at the start of this epoch (0: never)"),
             SKEIN_OPTION("fail_rank", integer, "-1", "Only on this rank (-1: all)"),
             SKEIN_OPTION("use_model", boolean, "false", "Call ProbeModel's own method"),
             SKEIN_OPTION("freeze", boolean, "false", "Zero every gradient (parameters never change)"),
             SKEIN_OPTION("dump", boolean, "false", "Write probe_* files into the run directory"),
             SKEIN_OPTION("stop_below", number, "0", "Stop once train_loss is below this (0: never)"))
