#pragma once
// MLflow's REST API 2.0 over libcurl: the few calls the mlflow callback makes
// (experiments, runs, log-batch, the artifact proxy), each one HTTP request
// bounded by a timeout. Not thread-safe: one client per thread (the send
// queue's). Nothing here retries or warns; the caller decides from Reply.
#include <atomic>
#include <cstdint>
#include <string>

#include "skein/detail/json.hpp"

namespace skein_mlflow {

// What one request came to.
struct Reply {
  bool reached = false;  // an HTTP answer came back (else: `error` says why not)
  long status = 0;       // its HTTP status
  std::string body;
  std::string error;  // libcurl's message when not reached
  bool ok() const { return reached && status >= 200 && status < 300; }
  // MLflow's error_code of a 4xx/5xx answer ("RESOURCE_DOES_NOT_EXIST"), or "".
  std::string error_code() const;
  // One line for a warning: "HTTP 400: <message>" or libcurl's error.
  std::string summary() const;
};

// The tracking server's base URL, checked: "http(s)://host[:port][/path]",
// without a trailing slash. Throws std::invalid_argument saying what is wrong
// (the URL in it without its password).
std::string checked_tracking_uri(const std::string& uri);

// `text` with the password of each URL's user-info replaced by "***"
// ("http://alice:***@host:5000"): what is printed or stored of a tracking
// URI, and of any config value logged as a param.
std::string without_password(const std::string& text);

// MLflow's own environment variables for a server behind authentication:
// MLFLOW_TRACKING_USERNAME and _PASSWORD (HTTP basic), MLFLOW_TRACKING_TOKEN
// (a bearer token); empty when unset. A URI's user-info works too.
struct Credentials {
  std::string username, password, token;
  static Credentials from_environment();
};

class Client {
 public:
  // `base`: checked_tracking_uri's result. `abort` (optional): set to end a
  // request in flight at once (its Reply is then not reached).
  Client(std::string base, double timeout_s, const std::atomic<bool>* abort = nullptr, Credentials credentials = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // POST /api/2.0/mlflow/<endpoint> with a JSON body.
  Reply post(const std::string& endpoint, const nlohmann::json& body);
  // GET /api/2.0/mlflow/<endpoint>?<key>=<value> (the value URL-encoded).
  Reply get(const std::string& endpoint, const std::string& key, const std::string& value);
  // PUT of `bytes` to the artifact proxy: /api/2.0/mlflow-artifacts/artifacts/<path>.
  Reply put_artifact(const std::string& path, const std::string& bytes);

 private:
  Reply perform(const std::string& url, const char* method, const std::string* body, const char* content_type,
                bool upload);
  std::string base_;
  double timeout_s_;
  const std::atomic<bool>* abort_;
  Credentials credentials_;
  void* curl_;  // CURL*, reused: its connection stays open between requests
};

// The endpoints the callback calls, by MLflow's names.
namespace endpoint {
inline constexpr const char* kExperimentByName = "experiments/get-by-name";
inline constexpr const char* kCreateExperiment = "experiments/create";
inline constexpr const char* kCreateRun = "runs/create";
inline constexpr const char* kGetRun = "runs/get";
inline constexpr const char* kUpdateRun = "runs/update";
inline constexpr const char* kLogBatch = "runs/log-batch";
}  // namespace endpoint

// Milliseconds since the epoch, MLflow's timestamps.
std::int64_t now_ms();

}  // namespace skein_mlflow
