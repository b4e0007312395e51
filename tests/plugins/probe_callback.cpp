// Test callback: records the hook order, reaches the user's model type, can
// request a stop or fail on chosen ranks, and dumps what tests compare
// (per-rank history, first-batch gradients, final parameters) into the run dir.
// Fault injection: a signal to itself or to its launcher mid-epoch, a failure
// in one attempt only of a restarted run.
#include <cstdint>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

#include <torch/serialize.h>

#include "load_marker.hpp"
#include "probe_model.hpp"
#include "skein/callback.hpp"
#include "skein/plugin.hpp"
#include "skein/run.hpp"

namespace {

class ProbeCallback final : public skein::Callback {
 public:
  explicit ProbeCallback(const skein::PluginArgs& args)
      : stop_at_(args.options.get_int("stop_at")),
        stop_rank_(args.options.get_int("stop_rank")),
        fail_at_(args.options.get_int("fail_at")),
        fail_rank_(args.options.get_int("fail_rank")),
        throw_int_at_(args.options.get_int("throw_int_at")),
        use_model_(args.options.get_bool("use_model")),
        freeze_(args.options.get_bool("freeze")),
        dump_(args.options.get_bool("dump")),
        stop_below_(args.options.get_number("stop_below")),
        only_attempt_(args.options.get_int("only_attempt")),
        signal_at_(args.options.get_int("signal_at")),
        signal_batch_(args.options.get_int("signal_batch")),
        signal_(static_cast<int>(args.options.get_int("signal"))),
        signal_rank_(args.options.get_int("signal_rank")),
        signal_launcher_(args.options.get_bool("signal_launcher")),
        dump_listeners_(args.options.get_bool("dump_listeners")),
        fail_mid_(args.options.get_int("fail_mid")),
        record_inputs_(args.options.get_bool("record_inputs")),
        record_rows_(args.options.get_bool("record_rows")),
        fail_first_(args.options.get_int("fail_first")),
        signal_host_(args.options.get_string("signal_host")),
        signal_group_(args.options.get_bool("signal_group")),
        hold_at_(args.options.get_int("hold_at")),
        hold_world_(args.options.get_int("hold_world")),
        hold_notify_(args.options.get_string("hold_notify")),
        first_rank_(args.run.rank),
        slow_below_world_(args.options.get_int("slow_below_world")),
        slow_ms_(args.options.get_int("slow_ms")),
        record_events_(args.options.get_bool("record_events")),
        epoch_metrics_(args.options.get_int("epoch_metrics")) {}

  void on_train_begin(skein::TrainContext&) override { events_ += "T"; }
  void on_epoch_begin(skein::TrainContext& ctx) override {
    events_ += "E";
    if (fail_at_ > 0 && ctx.epoch() == fail_at_ && (fail_rank_ < 0 || fail_rank_ == ctx.run().rank) &&
        this_attempt())
      throw std::runtime_error("probe failure on rank " + std::to_string(ctx.run().rank));
    if (throw_int_at_ > 0 && ctx.epoch() == throw_int_at_) throw 42;  // not a std::exception
    if (hold_at_ > 0 && ctx.epoch() == hold_at_ && ctx.run().world_size == hold_world_) {
      if (!hold_notify_.empty()) std::ofstream(hold_notify_) << "held at epoch " << ctx.epoch() << std::endl;
      hold();
    }
  }
  void on_batch_begin(skein::TrainContext& ctx, const skein::Batch& b) override {
    events_ += b.training ? "b" : "v";
    if (record_inputs_ && b.training) {  // where the batch's inputs lie: a session uses the caller's buffer
      auto& log = ctx.history().batches();
      log.put(log.key("train_input_address"),
              static_cast<double>(reinterpret_cast<std::uintptr_t>(b.inputs.data_ptr())));
    }
    if (record_rows_ && b.training) {  // which samples a batch holds: their first input feature, row_<i>
      auto& log = ctx.history().batches();
      const auto first = b.inputs.select(1, 0).to(torch::kDouble).cpu();
      for (std::int64_t i = 0; i < first.size(0); ++i)
        log.put(log.key("row_" + std::to_string(i)), first[i].item<double>());
    }
    if (fail_first_ > 0 && ctx.epoch() == fail_first_ && b.training && b.index == 0)
      throw std::runtime_error("probe failure at the first batch on rank " + std::to_string(ctx.run().rank));
    if (fail_mid_ > 0 && ctx.epoch() == fail_mid_ && b.training && b.index == 1)
      throw std::runtime_error("probe failure mid-epoch on rank " + std::to_string(ctx.run().rank));
    // Mid-epoch: as training batch `signal_batch` begins.
    // The rank the process started as, and never a replacement of live
    // recovery: the epoch reopens at the batch the signal ended, on ranks
    // that may have moved.
    if (signal_at_ > 0 && ctx.epoch() == signal_at_ && b.training && b.index == signal_batch_ &&
        (signal_rank_ < 0 || signal_rank_ == first_rank_) && !std::getenv("SKEIN_LIVE_JOIN") && this_attempt() &&
        on_signal_host()) {
      // The whole host: the launcher agent's process group (torch 1.13's
      // agent keeps its workers in it, 2.x starts each in its own), then itself.
      if (signal_group_) kill(-getpgid(getppid()), signal_);
      kill(signal_launcher_ ? getppid() : getpid(), signal_);
    }
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
  void on_batch_end(skein::TrainContext& ctx, const skein::Batch& b) override {
    events_ += ".";
    // Live recovery's tests: a run that lost a process trains slowly until a
    // replacement is in (every member has the same world size, so all pause
    // alike), so that it cannot end before one had time to start.
    if (b.training && ctx.run().world_size < slow_below_world_)
      std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms_));
  }
  void on_epoch_end(skein::TrainContext& ctx) override {
    events_ += "e";
    for (long i = 0; i < epoch_metrics_; ++i)  // a long run's many values (bench/report_browser.py)
      ctx.history().record("probe_metric_" + std::to_string(i), std::sin(0.05 * static_cast<double>(ctx.epoch()) + i));
    if (dump_listeners_ && ctx.epoch() == 1) dump_listeners(ctx);
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
    // A trace of this process's own (live recovery's processes differ in it).
    if (record_events_) ctx.history().record("probe_events", events_);
    if (dump_) {
      std::ofstream(file(ctx, "history", ".json")) << ctx.history().dump();
      std::vector<torch::Tensor> params;
      for (const auto& p : ctx.model_base().parameters()) params.push_back(p.detach().clone());
      torch::save(params, file(ctx, "params", ".pt"));
    }
  }

  void on_exception(skein::TrainContext& ctx, const std::string& error) override {
    events_ += "X";
    if (dump_) std::ofstream(file(ctx, "failure", ".txt")) << events_ << "\n" << error << "\n";
  }

 private:
  static std::string file(skein::TrainContext& ctx, const std::string& what, const std::string& ext) {
    return skein::run_output_path(ctx.run(), "probe_" + what + "_rank" + std::to_string(ctx.run().rank) + ext,
                                  "probe_callback:");
  }

  // Waits until a signal arrives (a launcher stopping the worker), at most
  // two minutes: then fails, naming the wait.
  static void hold() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (std::chrono::steady_clock::now() < until) {
      timespec step{1, 0};
      if (nanosleep(&step, nullptr) != 0 && errno == EINTR) return;
    }
    throw std::runtime_error("probe: held for 2 minutes and no signal came");
  }

  bool on_signal_host() const {
    if (signal_host_.empty()) return true;
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    return signal_host_ == name;
  }

  // Faults fire in every attempt, or only in attempt `only_attempt_` of a
  // run restarted by the launcher (torchrun's TORCHELASTIC_RESTART_COUNT).
  bool this_attempt() const {
    if (only_attempt_ < 0) return true;
    const char* count = std::getenv("TORCHELASTIC_RESTART_COUNT");
    return std::atol(count ? count : "0") == only_attempt_;
  }

  // The local address (hex, as the kernel shows it) of every listening TCP
  // socket of this network namespace, one per line.
  static void dump_listeners(skein::TrainContext& ctx) {
    std::ofstream out(file(ctx, "listeners", ".txt"));
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
      std::ifstream in(table);
      std::string line;
      std::getline(in, line);  // header
      while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state;
        fields >> slot >> local >> remote >> state;
        if (state == "0A") out << local << "\n";  // TCP_LISTEN
      }
    }
  }

  long stop_at_, stop_rank_, fail_at_, fail_rank_, throw_int_at_;
  bool use_model_, freeze_, dump_;
  double stop_below_;
  long only_attempt_, signal_at_, signal_batch_;
  int signal_;
  long signal_rank_;
  bool signal_launcher_, dump_listeners_;
  long fail_mid_;
  bool record_inputs_;
  bool record_rows_;
  long fail_first_;
  std::string signal_host_;
  bool signal_group_;
  long hold_at_, hold_world_;
  std::string hold_notify_;
  int first_rank_;  // as the process started (live recovery may move it)
  long slow_below_world_, slow_ms_;
  bool record_events_;
  long epoch_metrics_;
  std::string events_;
};

}  // namespace

SKEIN_PLUGIN(ProbeCallback, callback, "probe_callback", "0.1.0", "Test callback",
             SKEIN_OPTION("stop_at", integer, "0", "Request a stop at this epoch (0: never)"),
             SKEIN_OPTION("stop_rank", integer, "-1", "Only this rank requests it (-1: all)"),
             SKEIN_OPTION("fail_at", integer, "0", "Throw at the start of this epoch (0: never)"),
             SKEIN_OPTION("fail_rank", integer, "-1", "Only on this rank (-1: all)"),
             SKEIN_OPTION("fail_mid", integer, "0", "Throw at the second train batch of this epoch (0: never)"),
             SKEIN_OPTION("fail_first", integer, "0", "Throw at the first train batch of this epoch (0: never)"),
             SKEIN_OPTION("record_inputs", boolean, "false", "Record each train batch's input address (train_input_address)"),
             SKEIN_OPTION("record_rows", boolean, "false", "Record each train sample's first input feature (row_<i>)"),
             SKEIN_OPTION("throw_int_at", integer, "0", "Throw an int (no std::exception) at the start of this epoch"),
             SKEIN_OPTION("use_model", boolean, "false", "Call ProbeModel's own method"),
             SKEIN_OPTION("freeze", boolean, "false", "Zero every gradient (parameters never change)"),
             SKEIN_OPTION("dump", boolean, "false", "Write probe_* files into the run directory"),
             SKEIN_OPTION("stop_below", number, "0", "Stop once train_loss is below this (0: never)"),
             SKEIN_OPTION("only_attempt", integer, "-1",
                          "Inject faults only in this attempt of a restarted run (-1: every one)"),
             SKEIN_OPTION("signal_at", integer, "0", "Send `signal` mid-way through this epoch (0: never)"),
             SKEIN_OPTION("signal_batch", integer, "1", "... as this training batch (0-based) begins"),
             SKEIN_OPTION("signal", integer, "9", "The signal number (9: SIGKILL, 19: SIGSTOP)"),
             SKEIN_OPTION("signal_rank", integer, "-1", "Only on the process that started as this rank, never on a replacement (-1: all)"),
             SKEIN_OPTION("signal_launcher", boolean, "false", "Signal the parent process, not itself"),
             SKEIN_OPTION("signal_group", boolean, "false",
                          "Signal the launcher's process group too (a host's agent and workers)"),
             SKEIN_OPTION("signal_host", string, "\"\"", "Only on the host of this name (\"\": any)"),
             SKEIN_OPTION("record_events", boolean, "true",
                          "Record this process's trace of hooks as probe_events at the end"),
             SKEIN_OPTION("slow_below_world", integer, "0",
                          "Each training batch takes slow_ms more while the world size is below this"),
             SKEIN_OPTION("slow_ms", integer, "100", "... milliseconds"),
             SKEIN_OPTION("epoch_metrics", integer, "0", "Record this many values probe_metric_<i> at each epoch's end"),
             SKEIN_OPTION("hold_at", integer, "0",
                          "Wait for a signal (2 minutes at most) as this epoch begins (0: never)"),
             SKEIN_OPTION("hold_world", integer, "1", "... on a run of this world size"),
             SKEIN_OPTION("hold_notify", string, "\"\"", "... after writing a line to this file (a FIFO, say)"),
             SKEIN_OPTION("dump_listeners", boolean, "false",
                          "Write the listening TCP sockets of the network namespace at epoch 1"))
