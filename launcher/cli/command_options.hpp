#pragma once
// The arguments of `skein train`, `skein export` and `skein predict`, parsed
// without libtorch: the `skein` executable parses them first (so that --help
// and usage errors cost no libtorch load), then hands the command to
// libskein_commands, which parses them again with these same functions.
#include <cstdint>
#include <string>
#include <vector>

#include "launch_options.hpp"
#include "skein/host/train_request.hpp"  // TrainRequest
#include "skein/host/trained_model_options.hpp"

namespace skein::launcher {

// What the user allows TorchScript model files (README, Security); each
// becomes a SKEIN_ALLOW_* variable that the model and workers read.
struct ScriptPermissions {
  bool file_ops = false;  // --allow-script-file-ops
  bool changed = false;   // --allow-changed-script
};

struct TrainArgs {
  core::TrainRequest request;
  LaunchOptions launch;
  bool allow_outside = false;
  ScriptPermissions script;
  bool distributed = false;  // a launcher flag was given: start worker processes
};

struct ExportArgs {
  core::TrainedModelOptions model;
  std::string format, out;
  ScriptPermissions script;
};

struct PredictArgs {
  core::TrainedModelOptions model;
  std::string inputs, out;
  std::int64_t batch_size = 256;
  ScriptPermissions script;
};

// Each parses `args` (those after the command's name) into `out`. Returns
// false when --help was asked for, after printing the help to stdout.
// Throws boost::program_options::error on bad usage.
bool parse_train_args(const std::vector<std::string>& args, TrainArgs& out);
bool parse_export_args(const std::vector<std::string>& args, ExportArgs& out);
bool parse_predict_args(const std::vector<std::string>& args, PredictArgs& out);

// The inverse of parse_train_args for the request: the arguments after
// `skein train` that parse back into `req` (its config file, --plugin, --set,
// --run-dir, --resume, --overwrite, --plugin-dir). How a launcher hands its
// request to the workers it starts; the one place that maps the request's
// fields to flags, beside the parser that maps them back.
std::vector<std::string> train_request_args(const core::TrainRequest& req);

// Sets the environment variables of what `script` allows (inherited by workers).
void allow_in_environment(const ScriptPermissions& script);

}  // namespace skein::launcher
