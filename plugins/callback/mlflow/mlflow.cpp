// Callback "mlflow": logs the run to an MLflow tracking server through its
// REST API (mlflow_client.hpp), from the main rank only: the config as
// params (flattened keys), every epoch's numeric history values as metrics
// (step: the epoch; the synced history, so every rank's), optionally rank
// 0's train batch loss every N optimizer steps, tags (world size, libtorch,
// device, Skein version, resume and restart), at the end the run's status
// and its files as artifacts. The training thread only queues; one
// background thread sends (send_queue.hpp), so a tracker that is down, slow
// or refusing costs warnings, never the run. The MLflow run's id is kept in
// <run_dir>/mlflow_run.json: a resumed or restarted run logs to the same run.
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "mlflow_client.hpp"
#include "send_queue.hpp"
#include "skein/callback.hpp"
#include "skein/errors.hpp"
#include "skein/history.hpp"
#include "skein/io/atomic_file.hpp"
#include "skein/io/input_file.hpp"
#include "skein/plugin.hpp"
#include "skein/run.hpp"

// Declared once: the schema and MlflowOptions.
#define MLFLOW_OPTIONS(X)                                                                                      \
  X(tracking_uri, string, "\"\"",                                                                              \
    "The tracking server, http(s)://HOST:PORT (empty: the environment's MLFLOW_TRACKING_URI, as MLflow's own " \
    "clients)")                                                                                                \
  X(experiment, string, "\"\"", "Experiment name, created when missing (empty: MLflow's default experiment)")  \
  X(run_name, string, "\"\"", "The MLflow run's name (empty: the run directory's name)")                       \
  X(every_n_steps, integer, "0",                                                                               \
    "Also log train_batch_loss (rank 0's batch) every this many optimizer steps (0: epochs only)",             \
    SKEIN_RANGE("[0, )"))                                                                                      \
  X(artifacts, boolean, "true",                                                                                \
    "At the end, upload history.json, results.json, report.html and the final model where the server takes "   \
    "artifacts")                                                                                               \
  X(timeout_s, number, "10", "Bound of each request to the server", SKEIN_RANGE("(0, )"))                      \
  X(flush_timeout_s, number, "30",                                                                             \
    "At training's end, the longest wait for what is queued (one more try only when the server is down)",      \
    SKEIN_RANGE("[0, )"))                                                                                      \
  X(max_queue, integer, "10000", "Requests kept while the server is unreachable (then the oldest metrics go)", \
    SKEIN_RANGE("[1, )"))

namespace {

SKEIN_OPTIONS_STRUCT(MlflowOptions, MLFLOW_OPTIONS)

using skein_mlflow::Attempt;
using skein_mlflow::Client;
using skein_mlflow::Job;
using skein_mlflow::Reply;
using skein_mlflow::SendQueue;
namespace endpoint = skein_mlflow::endpoint;
using json = nlohmann::json;

constexpr const char* kEnvTrackingUri = "MLFLOW_TRACKING_URI";
constexpr const char* kEnvRestartCount = "TORCHELASTIC_RESTART_COUNT";  // set by launchers that restart
constexpr const char* kRunFile = "mlflow_run.json";
constexpr std::uintmax_t kMaxRunFileBytes = 64 << 10;
// Its keys: the server (as tracking_uri, resolved), the experiment, the run.
constexpr const char* kFileServer = "tracking_uri";
constexpr const char* kFileExperiment = "experiment_id";
constexpr const char* kFileRun = "run_id";
constexpr const char* kDefaultExperiment = "0";  // MLflow's "Default"
constexpr const char* kBatchLoss = "train_batch_loss";
// MLflow's limits of one runs/log-batch call, and of a param's value.
constexpr std::size_t kMaxParams = 100, kMaxMetrics = 1000, kMaxTags = 100, kMaxParamValue = 6000;

// What every try made of a reply.
Attempt attempt_of(const Reply& reply) {
  if (!reply.reached) return {Attempt::unreachable, reply.error};
  if (reply.ok()) return {Attempt::done, ""};
  if (reply.status >= 500 || reply.status == 429) return {Attempt::server_error, reply.summary()};
  return {Attempt::rejected, reply.summary()};
}

// MLflow's names hold letters, digits and "_-. /" only.
std::string mlflow_key(const std::string& key) {
  std::string out = key.empty() ? "_" : key;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' && c != ' ' && c != '/')
      c = '_';
  return out;
}

// The config as (key, value) pairs: objects and arrays of objects flattened
// ("optimizer.lr", "callbacks.0.plugin"); scalars and arrays of scalars as text.
void flatten(const json& value, const std::string& key, std::vector<std::pair<std::string, std::string>>& out) {
  auto nested = [](const json& v) { return v.is_object() || v.is_array(); };
  const bool descend =
      (value.is_object() && !value.empty()) || (value.is_array() && std::any_of(value.begin(), value.end(), nested));
  if (!descend) {
    // No credential is logged as a param (a tracking URI with a password in the config).
    out.emplace_back(mlflow_key(key), skein_mlflow::without_password(value.is_string() ? value.get<std::string>()
                                                                                      : value.dump()));
    return;
  }
  const std::string prefix = key.empty() ? "" : key + ".";
  if (value.is_object())
    for (auto it = value.begin(); it != value.end(); ++it) flatten(it.value(), prefix + it.key(), out);
  else
    for (std::size_t i = 0; i < value.size(); ++i) flatten(value[i], prefix + std::to_string(i), out);
}

// A metric as MLflow's JSON has it; a non-finite value as proto3's JSON
// writes doubles ("NaN", "Infinity"), which MLflow's server parses.
json metric(const std::string& key, double value, std::int64_t step, std::int64_t timestamp) {
  json v = value;
  if (std::isnan(value))
    v = "NaN";
  else if (std::isinf(value))
    v = value > 0 ? "Infinity" : "-Infinity";
  return {{"key", mlflow_key(key)}, {"value", v}, {"timestamp", timestamp}, {"step", step}};
}

json tag(const std::string& key, const std::string& value) { return {{"key", key}, {"value", value}}; }

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string libtorch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

std::string base_name(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p.substr(p.find_last_of('/') + 1);
}

// What the queue's jobs share, touched on the queue's thread only.
struct RunState {
  std::string experiment_id, run_id;
  std::string artifact_root;       // the artifact proxy's path of the run ("0/<id>/artifacts"); "" if none
  std::string artifact_uri;        // the server's, for the warning when it is not proxied
  bool artifacts_refused = false;  // warned once: later files are skipped
  bool created = false;            // this process created the run (else continued it): the params are its to log
};

// "mlflow-artifacts:/0/<id>/artifacts" or "mlflow-artifacts://host:port/0/..."
// (what `mlflow server` gives when it serves artifacts): the path after it.
std::string proxied_root(const std::string& artifact_uri) {
  const std::string scheme = "mlflow-artifacts:";
  if (artifact_uri.rfind(scheme, 0) != 0) return "";
  std::string rest = artifact_uri.substr(scheme.size());
  if (rest.rfind("//", 0) == 0) {
    const std::size_t slash = rest.find('/', 2);
    rest = slash == std::string::npos ? "" : rest.substr(slash);
  }
  while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
  return rest;
}

class Mlflow final : public skein::Callback, public skein::EpochReporter, public skein::TestReporter {
 public:
  explicit Mlflow(const skein::PluginArgs& args) : o_(args.options), run_(args.run) {
    const bool from_env = o_.tracking_uri.empty();
    const std::string uri = from_env ? env_or_empty(kEnvTrackingUri) : o_.tracking_uri;
    if (uri.empty())
      args.options.fail(MlflowOptions::names::tracking_uri,
                        std::string("is empty and ") + kEnvTrackingUri +
                            " is not set: name the MLflow tracking server, e.g. http://127.0.0.1:5000");
    try {
      server_ = skein_mlflow::checked_tracking_uri(uri);
      shown_ = skein_mlflow::without_password(server_);
    } catch (const std::invalid_argument& e) {
      args.options.fail(MlflowOptions::names::tracking_uri,
                        std::string(e.what()) + (from_env ? std::string(" (from ") + kEnvTrackingUri + ")" : ""));
    }
    if (run_.is_main()) run_file_ = skein::run_output_path(run_, kRunFile, "the mlflow callback's run id");
  }

  ~Mlflow() override {
    if (!queue_) return;
    // The run's end: results.json and the final model are written by now.
    if (o_.artifacts && !finished_) {
      for (const auto& [file, name] :
           std::vector<std::pair<std::string, std::string>>{{"history.json", "history.json"},
                                                            {"results.json", "results.json"},
                                                            {"report.html", "report.html"},
                                                            {"checkpoints/final/model.pt", "model/model.pt"}})
        queue_->push(upload(file, name));
      queue_->drain(o_.flush_timeout_s);
    }
    queue_->stop();
    queue_.reset();
    client_.reset();
  }

  void on_train_begin(skein::TrainContext& ctx) override {
    if (!run_.is_main()) return;
    queue_ = std::make_unique<SendQueue>(shown_, static_cast<std::size_t>(o_.max_queue),
                                         [](const std::string& line) { skein::warn(line); });
    client_ = std::make_unique<Client>(server_, o_.timeout_s, &queue_->aborting(),
                                       skein_mlflow::Credentials::from_environment());
    state_ = std::make_shared<RunState>();
    const long resumed_epoch =
        ctx.history().empty() ? 0 : ctx.history().last().at(skein::history_key::kEpoch).get<long>();
    const std::string restart = env_or_empty(kEnvRestartCount);
    std::vector<json> tags = {tag("skein.world_size", std::to_string(run_.world_size)),
                              tag("skein.libtorch", libtorch_version()),
                              tag("skein.device", run_.device),
                              tag("skein.version", SKEIN_SDK_VERSION),
                              tag("skein.run_dir", run_.run_dir),
                              tag("skein.run_id", run_.run_id)};
    if (resumed_epoch > 0) {
      tags.push_back(tag("skein.resumed", "true"));
      tags.push_back(tag("skein.resumed_after_epoch", std::to_string(resumed_epoch)));
    }
    if (!restart.empty() && restart != "0") tags.push_back(tag("skein.restart", restart));
    // The params go with a new run only (MLflow refuses to change one): a
    // continued run keeps its first attempt's.
    std::vector<std::pair<std::string, std::string>> params;
    flatten(ctx.config(), "", params);
    queue_->push(create_or_continue(known_run_id(), std::move(tags)));
    push_params(params);
  }

  void on_batch_end(skein::TrainContext&, const skein::Batch& batch) override {
    if (!batch.training || !batch.optimizer_step) return;
    ++steps_;  // every rank: the count is in the checkpoint's state
    if (!queue_ || o_.every_n_steps == 0 || steps_ % o_.every_n_steps != 0 || !batch.loss.defined()) return;
    const double loss = batch.loss.detach().to(torch::kCPU).item<double>();
    push_metrics({metric(kBatchLoss, loss, steps_, skein_mlflow::now_ms())},
                 "train_batch_loss of step " + std::to_string(steps_));
  }

  void on_epoch_recorded(skein::TrainContext& ctx) override {
    if (!queue_) return;
    const auto& epoch = ctx.history().last();
    const long number = epoch.at(skein::history_key::kEpoch).get<long>();
    const std::int64_t now = skein_mlflow::now_ms();
    std::vector<json> metrics;
    for (auto it = epoch.begin(); it != epoch.end(); ++it)
      if (it.value().is_number() && it.key() != skein::history_key::kEpoch)
        metrics.push_back(metric(it.key(), it.value().get<double>(), number, now));
    push_metrics(std::move(metrics), "metrics of epoch " + std::to_string(number));
  }

  void on_test_end(skein::TrainContext& ctx, const json& results) override {
    if (!queue_ || finished_) return;  // given up at training's end
    const std::int64_t now = skein_mlflow::now_ms();
    std::vector<json> metrics;
    for (auto it = results.begin(); it != results.end(); ++it)
      if (it.value().is_number() && it.key().rfind("test_", 0) == 0)
        metrics.push_back(metric(it.key(), it.value().get<double>(), ctx.epoch(), now));
    push_metrics(std::move(metrics), "test results");
  }

  void on_train_end(skein::TrainContext&) override { end_run("FINISHED"); }
  void on_exception(skein::TrainContext&, const std::string&) override {
    end_run("FAILED");
    finished_ = true;  // a failed run's files are not uploaded
    if (queue_) queue_->stop();
  }

  json state() const override { return {{"optimizer_steps", steps_}}; }
  void load_state(const json& state) override {
    if (state.is_object() && state.contains("optimizer_steps")) steps_ = state["optimizer_steps"].get<std::int64_t>();
  }

 private:
  // The id in <run_dir>/mlflow_run.json when it is of this server; else "".
  std::string known_run_id() const {
    // A run id file is some hundred bytes: a larger one is not read whole.
    struct stat st {};
    if (::stat(run_file_.c_str(), &st) == 0 && static_cast<std::uintmax_t>(st.st_size) > kMaxRunFileBytes) {
      skein::warn("mlflow: " + run_file_ + " holds " + std::to_string(st.st_size) +
                  " bytes, not a run id file of the mlflow callback; starting a new MLflow run");
      return "";
    }
    const auto text = skein::read_whole_file(run_file_);
    if (!text) return "";
    const auto j = json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains(kFileRun) || !j[kFileRun].is_string()) {
      skein::warn("mlflow: " + run_file_ + " holds no run id; starting a new MLflow run");
      return "";
    }
    if (j.value(kFileServer, "") != shown_) {
      skein::warn("mlflow: " + run_file_ + " names another server (" +
                  skein_mlflow::without_password(j.value(kFileServer, "")) + "); starting a new MLflow run on " +
                  shown_);
      return "";
    }
    return j[kFileRun].get<std::string>();
  }

  // The run's creation, or on a resume its continuation: tried until it
  // succeeds (the jobs after it need its id), never dropped.
  Job create_or_continue(std::string known, std::vector<json> tags) {
    Job job;
    job.what = known.empty() ? "the run's creation" : "the run's continuation";
    job.droppable = false;
    job.items = tags.size();
    const std::string run_name = o_.run_name.empty() ? base_name(run_.run_dir) : o_.run_name;
    const std::int64_t start = skein_mlflow::now_ms();
    job.send = [this, known = std::move(known), tags = std::move(tags), run_name, start]() mutable -> Attempt {
      RunState& s = *state_;
      if (s.run_id.empty() && !known.empty()) {
        const Reply r = client_->get(endpoint::kGetRun, "run_id", known);
        if (r.ok()) {
          take_run_info(json::parse(r.body, nullptr, false), s);
        } else if (r.reached && r.error_code() == "RESOURCE_DOES_NOT_EXIST") {
          skein::warn("mlflow: run " + known + " of " + run_file_ + " is not on " + shown_ + "; starting a new one");
          known.clear();
        } else {
          return attempt_of(r);
        }
      }
      if (s.run_id.empty()) {
        if (s.experiment_id.empty()) {
          const Attempt found = find_experiment(s);
          if (found.kind != Attempt::done) return found;
        }
        const Reply r = client_->post(
            endpoint::kCreateRun,
            {{"experiment_id", s.experiment_id}, {"run_name", run_name}, {"start_time", start}, {"tags", tags}});
        if (!r.ok()) return attempt_of(r);
        take_run_info(json::parse(r.body, nullptr, false), s);
        if (s.run_id.empty()) return {Attempt::rejected, "runs/create answered no run id"};
        s.created = true;
        try {
          skein::write_file_atomic(
              run_file_,
              json{{kFileServer, shown_}, {kFileExperiment, s.experiment_id}, {kFileRun, s.run_id}}.dump(2) + "\n");
        } catch (const std::exception& e) {
          skein::warn("mlflow: cannot keep the run id (a resume will start a new MLflow run): " +
                      skein::first_line(e.what()));
        }
        return {Attempt::done, ""};
      }
      // A continued run: running again, with this attempt's tags.
      const Reply status = client_->post(endpoint::kUpdateRun, {{"run_id", s.run_id}, {"status", "RUNNING"}});
      if (!status.ok()) return attempt_of(status);
      return attempt_of(client_->post(endpoint::kLogBatch, {{"run_id", s.run_id}, {"tags", tags}}));
    };
    return job;
  }

  static void take_run_info(const json& reply, RunState& s) {
    if (!reply.is_object() || !reply.contains("run")) return;
    const json info = reply["run"].value("info", json::object());
    s.run_id = info.value("run_id", "");
    s.experiment_id = info.value("experiment_id", s.experiment_id);
    s.artifact_uri = info.value("artifact_uri", "");
    s.artifact_root = proxied_root(s.artifact_uri);
  }

  Attempt find_experiment(RunState& s) {
    if (o_.experiment.empty()) {
      s.experiment_id = kDefaultExperiment;
      return {Attempt::done, ""};
    }
    for (int round = 0; round < 2; ++round) {  // a second round when another client created it meanwhile
      const Reply got = client_->get(endpoint::kExperimentByName, "experiment_name", o_.experiment);
      if (got.ok()) {
        const auto j = json::parse(got.body, nullptr, false);
        s.experiment_id = j.is_object() ? j.value("experiment", json::object()).value("experiment_id", "") : "";
        return s.experiment_id.empty() ? Attempt{Attempt::rejected, "experiments/get-by-name answered no id"}
                                       : Attempt{Attempt::done, ""};
      }
      if (!(got.reached && got.error_code() == "RESOURCE_DOES_NOT_EXIST")) return attempt_of(got);
      const Reply made = client_->post(endpoint::kCreateExperiment, {{"name", o_.experiment}});
      if (made.ok()) {
        const auto j = json::parse(made.body, nullptr, false);
        s.experiment_id = j.is_object() ? j.value("experiment_id", "") : "";
        return {Attempt::done, ""};
      }
      if (!(made.reached && made.error_code() == "RESOURCE_ALREADY_EXISTS")) return attempt_of(made);
    }
    return {Attempt::rejected, "experiment '" + o_.experiment + "' neither found nor created"};
  }

  // A runs/log-batch of `field` entries once the run exists (`new_run_only`:
  // when this process created it).
  Job log_batch(const char* field, json entries, std::string what, bool droppable, bool new_run_only = false) {
    Job job;
    job.what = std::move(what);
    job.items = entries.size();
    job.droppable = droppable;
    job.send = [this, field, entries = std::move(entries), new_run_only]() -> Attempt {
      if (state_->run_id.empty()) return {Attempt::rejected, "no MLflow run (its creation failed)"};
      if (new_run_only && !state_->created) return {Attempt::done, ""};
      return attempt_of(client_->post(endpoint::kLogBatch, {{"run_id", state_->run_id}, {field, entries}}));
    };
    return job;
  }

  void push_metrics(std::vector<json> metrics, const std::string& what) {
    for (std::size_t from = 0; from < metrics.size(); from += kMaxMetrics) {
      json part = json::array();
      for (std::size_t i = from; i < std::min(metrics.size(), from + kMaxMetrics); ++i)
        part.push_back(std::move(metrics[i]));
      queue_->push(log_batch("metrics", std::move(part), what, true));
    }
  }

  void push_params(const std::vector<std::pair<std::string, std::string>>& params) {
    bool truncated = false;
    for (std::size_t from = 0; from < params.size(); from += kMaxParams) {
      json part = json::array();
      for (std::size_t i = from; i < std::min(params.size(), from + kMaxParams); ++i) {
        std::string value = params[i].second;
        if (value.size() > kMaxParamValue) {
          if (!truncated)
            skein::warn("mlflow: param " + params[i].first + " (and any other longer than " +
                        std::to_string(kMaxParamValue) + " characters) is cut to MLflow's limit");
          truncated = true;
          value.resize(kMaxParamValue);
        }
        part.push_back(tag(params[i].first, value));
      }
      queue_->push(log_batch("params", std::move(part), "the config's params", false, true));
    }
  }

  void end_run(const char* status) {
    if (!queue_ || finished_) return;
    Job job;
    job.what = std::string("the run's status ") + status;
    job.droppable = false;
    const std::int64_t end = skein_mlflow::now_ms();
    job.send = [this, status, end]() -> Attempt {
      if (state_->run_id.empty()) return {Attempt::rejected, "no MLflow run (its creation failed)"};
      return attempt_of(
          client_->post(endpoint::kUpdateRun, {{"run_id", state_->run_id}, {"status", status}, {"end_time", end}}));
    };
    queue_->push(std::move(job));
    if (!queue_->drain(o_.flush_timeout_s)) {  // stop() says what was not sent
      finished_ = true;
      queue_->stop();
    }
  }

  // The run directory's `file` as artifact `name`, when it exists then.
  Job upload(const std::string& file, const std::string& name) {
    Job job;
    job.what = "artifact " + name;
    const std::string path = run_.run_dir + "/" + file;
    job.send = [this, path, name]() -> Attempt {
      RunState& s = *state_;
      if (s.run_id.empty() || s.artifacts_refused) return {Attempt::done, ""};
      if (s.artifact_root.empty()) {
        s.artifacts_refused = true;
        return {Attempt::rejected, "its artifact store (" + s.artifact_uri +
                                       ") is not served through it (mlflow server --serve-artifacts); no artifacts"};
      }
      const auto bytes = skein::read_whole_file(path);
      if (!bytes) return {Attempt::done, ""};  // not written by this run
      const Attempt a = attempt_of(client_->put_artifact(s.artifact_root + "/" + name, *bytes));
      if (a.kind == Attempt::rejected || a.kind == Attempt::server_error) s.artifacts_refused = true;
      return a;
    };
    return job;
  }

  MlflowOptions o_;
  skein::RunInfo run_;
  std::string server_;  // as given, a password too: for libcurl only
  std::string shown_;   // without the password: every message and file
  std::string run_file_;
  std::int64_t steps_ = 0;
  bool finished_ = false;  // the queue was given up (or the run failed): no more waiting
  std::shared_ptr<RunState> state_;
  std::unique_ptr<SendQueue> queue_;
  std::unique_ptr<Client> client_;  // used on the queue's thread only
};

}  // namespace

SKEIN_PLUGIN(Mlflow, callback, "mlflow", "1.0.0",
             "Logs the run (params, per-epoch metrics, tags, artifacts) to an MLflow tracking server",
             SKEIN_OPTION_SPECS(MLFLOW_OPTIONS))
