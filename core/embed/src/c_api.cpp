// The C ABI (skein/skein.h) over skein::Session: handles checked against the
// set of live sessions, caller buffers seen as tensors without a copy, and
// every exception turned into a status and a message.
#include "skein/skein.h"

#include <torch/cuda.h>

#include <limits>
#include <mutex>
#include <new>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include <torch/types.h>

#include "skein/errors.hpp"
#include "skein/session.hpp"

struct skein_session {
  std::mutex mutex;  // one call at a time
  std::unique_ptr<skein::Session> session;
  std::string run_dir;
  std::string error;
};

namespace {

// Live handles: a destroyed or made-up pointer is an error, not a crash.
std::mutex g_live_mutex;
std::set<const skein_session*>& live() {
  static std::set<const skein_session*> handles;
  return handles;
}

thread_local std::string t_error;  // failures without a live session

// An error whose status is known where it is thrown.
struct StatusError : std::runtime_error {
  skein_status status;
  StatusError(skein_status s, const std::string& message) : std::runtime_error(message), status(s) {}
};

[[noreturn]] void bad_argument(const std::string& message) { throw StatusError(SKEIN_ERROR_ARGUMENT, message); }

// Runs `body`, turning whatever it throws into a status and `error`.
template <class Body>
skein_status guarded(std::string& error, const char* call, Body&& body) noexcept {
  try {
    body();
    error.clear();
    return SKEIN_OK;
  } catch (const StatusError& e) {
    error = std::string(call) + ": " + e.what();
    return e.status;
  } catch (const std::invalid_argument& e) {
    error = skein::first_line(e.what());
    return SKEIN_ERROR_ARGUMENT;
  } catch (const skein::ConfigError& e) {
    error = skein::first_line(e.what());
    return SKEIN_ERROR_CONFIG;
  } catch (const skein::PluginError& e) {
    error = skein::first_line(e.what());
    return SKEIN_ERROR_CONFIG;
  } catch (const std::logic_error& e) {
    error = skein::first_line(e.what());
    return SKEIN_ERROR_STATE;
  } catch (const std::bad_alloc&) {
    error = std::string(call) + ": out of memory";
    return SKEIN_ERROR_MEMORY;
  } catch (const std::exception& e) {
    error = std::string(call) + ": " + skein::first_line(e.what());
    return SKEIN_ERROR_RUNTIME;
  } catch (...) {
    error = std::string(call) + ": an unknown exception";
    return SKEIN_ERROR_RUNTIME;
  }
}

// Runs `body` on a live session, its lock held.
template <class Body>
skein_status with_session(skein_session* s, const char* call, Body&& body) noexcept {
  {
    std::lock_guard<std::mutex> lock(g_live_mutex);
    if (!s || !live().count(s)) {
      t_error = std::string(call) + ": " + (s ? "not a live session (destroyed, or never created)" : "session is NULL");
      return SKEIN_ERROR_HANDLE;
    }
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  return guarded(s->error, call, [&] { body(*s->session); });
}

torch::ScalarType scalar_type(std::int32_t dtype, const char* what) {
  switch (dtype) {
    case SKEIN_FLOAT32: return torch::kFloat;
    case SKEIN_FLOAT64: return torch::kDouble;
    case SKEIN_INT32: return torch::kInt;
    case SKEIN_INT64: return torch::kLong;
  }
  bad_argument(std::string(what) + ": dtype " + std::to_string(dtype) +
               " is none of SKEIN_FLOAT32, SKEIN_FLOAT64, SKEIN_INT32, SKEIN_INT64");
}

// Where the caller's buffer lives; a CUDA device this process cannot reach is
// refused before anything reads the pointer.
torch::Device device_of(const skein_tensor* t, const std::string& name) {
  if (t->device_type == SKEIN_DEVICE_HOST) return torch::kCPU;
  if (t->device_type != SKEIN_DEVICE_CUDA)
    bad_argument(name + ": device_type " + std::to_string(t->device_type) +
                 " is neither SKEIN_DEVICE_HOST nor SKEIN_DEVICE_CUDA");
  const int visible = static_cast<int>(torch::cuda::device_count());
  if (t->device_index < 0 || t->device_index >= visible)
    bad_argument(name + ": a buffer on CUDA device " + std::to_string(t->device_index) + ", but " +
                 (visible == 0 ? std::string("this process sees no CUDA device")
                               : std::to_string(visible) + " are visible (0 to " + std::to_string(visible - 1) + ")"));
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(t->device_index));
}

// The caller's buffer as a tensor over the same memory (strides for the layout).
torch::Tensor view_of(const skein_tensor* t, const char* what) {
  const std::string name(what);
  if (!t) bad_argument(name + " is NULL");
  const torch::ScalarType type = scalar_type(t->dtype, what);
  if (t->rank < 1 || t->rank > SKEIN_MAX_RANK)
    bad_argument(name + ": rank " + std::to_string(t->rank) + " (expected 1 to " + std::to_string(SKEIN_MAX_RANK) + ")");
  if (!t->shape) bad_argument(name + ": shape is NULL");
  if (!t->data) bad_argument(name + ": data is NULL");
  if (t->layout != SKEIN_ROW_MAJOR && t->layout != SKEIN_COLUMN_MAJOR)
    bad_argument(name + ": layout " + std::to_string(t->layout) +
                 " is neither SKEIN_ROW_MAJOR nor SKEIN_COLUMN_MAJOR");
  std::vector<std::int64_t> sizes(t->shape, t->shape + t->rank), strides(sizes.size());
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / 8;
  std::int64_t count = 1;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1) bad_argument(name + ": shape[" + std::to_string(i) + "] is " + std::to_string(sizes[i]) + " (sizes are at least 1)");
    if (count > limit / sizes[i]) bad_argument(name + ": the shape holds more elements than memory can");
    count *= sizes[i];
  }
  std::int64_t stride = 1;
  if (t->layout == SKEIN_ROW_MAJOR) {
    for (std::size_t i = sizes.size(); i-- > 0;) strides[i] = stride, stride *= sizes[i];
  } else {
    for (std::size_t i = 0; i < sizes.size(); ++i) strides[i] = stride, stride *= sizes[i];
  }
  return torch::from_blob(t->data, sizes, strides, torch::TensorOptions().dtype(type).device(device_of(t, name)));
}

std::string text_of(const char* s, const char* what) {
  if (!s) bad_argument(std::string(what) + " is NULL");
  return s;
}

skein::SessionOptions options_of(const char* options_json) {
  skein::SessionOptions o;
  if (!options_json) return o;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(options_json);
  } catch (const nlohmann::json::exception& e) {
    bad_argument(std::string("options_json: invalid JSON: ") + e.what());
  }
  if (!j.is_object()) bad_argument("options_json: expected a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const auto& v = it.value();
    auto want = [&](bool ok, const char* type) {
      if (!ok) bad_argument("options_json: \"" + key + "\" must be " + type + ", got " + v.dump());
    };
    if (key == "run_dir") want(v.is_string(), "a string"), o.run_dir = v.get<std::string>();
    else if (key == "resume") want(v.is_string(), "a string"), o.resume = v.get<std::string>();
    else if (key == "overwrite") want(v.is_boolean(), "true or false"), o.overwrite = v.get<bool>();
    else if (key == "echo_log") want(v.is_boolean(), "true or false"), o.echo_log = v.get<bool>();
    else if (key == "allow_outside_run_dir")
      want(v.is_boolean(), "true or false"), o.allow_outside_run_dir = v.get<bool>();
    else if (key == "batches_per_epoch")
      want(v.is_number_integer() && v.get<long>() >= 0, "an integer >= 0"), o.batches_per_epoch = v.get<long>();
    else if (key == "plugin_dirs") {
      want(v.is_array(), "a list of strings");
      for (const auto& d : v) want(d.is_string(), "a list of strings"), o.plugin_dirs.push_back(d.get<std::string>());
    } else {
      bad_argument("options_json: unknown key \"" + key +
                   "\" (run_dir, overwrite, resume, plugin_dirs, batches_per_epoch, echo_log, "
                   "allow_outside_run_dir)");
    }
  }
  return o;
}

skein_status create(const nlohmann::json& config, const char* options_json, skein_session** out, const char* call) {
  if (!out) {
    t_error = std::string(call) + ": out is NULL";
    return SKEIN_ERROR_ARGUMENT;
  }
  *out = nullptr;
  std::unique_ptr<skein_session> handle;
  const skein_status status = guarded(t_error, call, [&] {
    skein::SessionOptions options = options_of(options_json);
    handle = std::make_unique<skein_session>();
    handle->session = std::make_unique<skein::Session>(config, std::move(options));
    handle->run_dir = handle->session->run_dir();
  });
  if (status != SKEIN_OK) return status;
  std::lock_guard<std::mutex> lock(g_live_mutex);
  live().insert(handle.get());
  *out = handle.release();
  return SKEIN_OK;
}

// Runs a train or eval step.
template <class Step>
skein_status step(skein_session* s, const skein_tensor* inputs, const skein_tensor* targets, double* loss,
                  const char* call, Step&& run) {
  return with_session(s, call, [&](skein::Session& session) {
    const torch::Tensor x = view_of(inputs, "inputs");
    const torch::Tensor y = view_of(targets, "targets");
    const skein::StepResult r = run(session, x, y);
    if (loss) *loss = r.loss;
  });
}

}  // namespace

extern "C" {

int skein_c_api_version(void) { return SKEIN_C_API_VERSION; }

skein_status skein_session_create(const char* config_json, const char* options_json, skein_session** out) {
  nlohmann::json config;
  if (!config_json) {
    t_error = "skein_session_create: config_json is NULL";
    if (out) *out = nullptr;
    return SKEIN_ERROR_ARGUMENT;
  }
  try {
    config = nlohmann::json::parse(config_json);
  } catch (const std::exception& e) {
    t_error = std::string("skein_session_create: config_json: invalid JSON: ") + e.what();
    if (out) *out = nullptr;
    return SKEIN_ERROR_CONFIG;
  }
  if (config.is_string()) {  // a path belongs to skein_session_create_from_file
    t_error = "skein_session_create: config_json is a JSON string; pass the path to skein_session_create_from_file";
    if (out) *out = nullptr;
    return SKEIN_ERROR_ARGUMENT;
  }
  return create(config, options_json, out, "skein_session_create");
}

skein_status skein_session_create_from_file(const char* config_path, const char* options_json, skein_session** out) {
  if (!config_path) {
    t_error = "skein_session_create_from_file: config_path is NULL";
    if (out) *out = nullptr;
    return SKEIN_ERROR_ARGUMENT;
  }
  return create(nlohmann::json(std::string(config_path)), options_json, out, "skein_session_create_from_file");
}

skein_status skein_session_destroy(skein_session* s) {
  {
    std::lock_guard<std::mutex> lock(g_live_mutex);
    if (!s || !live().count(s)) {
      t_error = std::string("skein_session_destroy: ") +
                (s ? "not a live session (destroyed, or never created)" : "session is NULL");
      return SKEIN_ERROR_HANDLE;
    }
    live().erase(s);
  }
  skein_status status;
  {
    std::lock_guard<std::mutex> lock(s->mutex);  // a call in flight ends first
    status = guarded(t_error, "skein_session_destroy", [&] { s->session->finish(); });
  }
  try {
    delete s;
  } catch (...) {
  }
  return status;
}

skein_status skein_train_step(skein_session* s, const skein_tensor* inputs, const skein_tensor* targets,
                              double* loss) {
  return step(s, inputs, targets, loss, "skein_train_step",
              [](skein::Session& session, const torch::Tensor& x, const torch::Tensor& y) {
                return session.train_step(x, y);
              });
}

skein_status skein_eval_step(skein_session* s, const skein_tensor* inputs, const skein_tensor* targets,
                             double* loss) {
  return step(s, inputs, targets, loss, "skein_eval_step",
              [](skein::Session& session, const torch::Tensor& x, const torch::Tensor& y) {
                return session.eval_step(x, y);
              });
}

skein_status skein_predict(skein_session* s, const skein_tensor* inputs, skein_tensor* outputs) {
  return with_session(s, "skein_predict", [&](skein::Session& session) {
    const torch::Tensor x = view_of(inputs, "inputs");
    torch::Tensor out = view_of(outputs, "outputs");
    if (out.scalar_type() != torch::kFloat && out.scalar_type() != torch::kDouble)
      bad_argument("outputs: dtype must be SKEIN_FLOAT32 or SKEIN_FLOAT64");
    const torch::Tensor y = session.predict(x);
    if (y.sizes() != out.sizes()) {
      std::ostringstream m;
      m << "outputs: the buffer has shape " << out.sizes() << ", the model's outputs have shape " << y.sizes();
      bad_argument(m.str());
    }
    out.copy_(y);
  });
}

skein_status skein_end_epoch(skein_session* s, int* stop) {
  return with_session(s, "skein_end_epoch", [&](skein::Session& session) {
    const bool stopped = session.end_epoch();
    if (stop) *stop = stopped ? 1 : 0;
  });
}

skein_status skein_save_checkpoint(skein_session* s, const char* dir) {
  return with_session(s, "skein_save_checkpoint",
                      [&](skein::Session& session) { session.save_checkpoint(text_of(dir, "dir")); });
}

skein_status skein_load_checkpoint(skein_session* s, const char* dir) {
  return with_session(s, "skein_load_checkpoint",
                      [&](skein::Session& session) { session.load_checkpoint(text_of(dir, "dir")); });
}

skein_status skein_finish(skein_session* s) {
  return with_session(s, "skein_finish", [&](skein::Session& session) { session.finish(); });
}

skein_status skein_last_value(skein_session* s, const char* key, double* value) {
  return with_session(s, "skein_last_value", [&](skein::Session& session) {
    const std::string k = text_of(key, "key");
    if (!value) bad_argument("value is NULL");
    const skein::History& history = session.history();
    const long closed = session.epoch();
    if (closed < 1) bad_argument("no epoch has ended yet");
    const nlohmann::json v = history.get(closed - 1, k);
    if (v.is_boolean()) *value = v.get<bool>() ? 1.0 : 0.0;
    else if (v.is_number()) *value = v.get<double>();
    else bad_argument("epoch " + std::to_string(closed) + " has no number \"" + k + "\"");
  });
}

skein_status skein_epoch(skein_session* s, int64_t* epoch) {
  return with_session(s, "skein_epoch", [&](skein::Session& session) {
    if (!epoch) bad_argument("epoch is NULL");
    *epoch = session.epoch();
  });
}

skein_status skein_rank(skein_session* s, int* rank, int* world_size) {
  return with_session(s, "skein_rank", [&](skein::Session& session) {
    if (!rank && !world_size) bad_argument("rank and world_size are NULL");
    const skein::RunInfo& run = session.context().run();
    if (rank) *rank = run.rank;
    if (world_size) *world_size = run.world_size;
  });
}

const char* skein_run_dir(skein_session* s) {
  std::lock_guard<std::mutex> lock(g_live_mutex);
  if (!s || !live().count(s)) return "";
  return s->run_dir.c_str();
}

const char* skein_last_error(const skein_session* s) {
  if (!s) return t_error.c_str();
  std::lock_guard<std::mutex> lock(g_live_mutex);
  if (!live().count(s)) return "skein_last_error: not a live session (destroyed, or never created)";
  return s->error.c_str();
}

const char* skein_status_name(int status) {
  switch (status) {
    case SKEIN_OK: return "SKEIN_OK";
    case SKEIN_ERROR_ARGUMENT: return "SKEIN_ERROR_ARGUMENT";
    case SKEIN_ERROR_HANDLE: return "SKEIN_ERROR_HANDLE";
    case SKEIN_ERROR_CONFIG: return "SKEIN_ERROR_CONFIG";
    case SKEIN_ERROR_STATE: return "SKEIN_ERROR_STATE";
    case SKEIN_ERROR_RUNTIME: return "SKEIN_ERROR_RUNTIME";
    case SKEIN_ERROR_MEMORY: return "SKEIN_ERROR_MEMORY";
  }
  return "unknown status";
}

}  // extern "C"
