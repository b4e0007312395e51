#include "mlflow_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

namespace skein_mlflow {
namespace {

// curl_global_init is not thread-safe: once per process, never cleaned up
// (another plugin or library may use libcurl too).
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw std::runtime_error("mlflow: libcurl failed to start");
  });
}

std::size_t append_body(char* data, std::size_t size, std::size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

struct Upload {
  const std::string* bytes;
  std::size_t at = 0;
};

std::size_t read_upload(char* buffer, std::size_t size, std::size_t count, void* in) {
  auto* up = static_cast<Upload*>(in);
  const std::size_t n = std::min(size * count, up->bytes->size() - up->at);
  std::copy_n(up->bytes->data() + up->at, n, buffer);
  up->at += n;
  return n;
}

// Non-zero ends the transfer: called about once a second at least, also
// while connecting, so an abort is seen at once.
int check_abort(void* flag, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* abort = static_cast<const std::atomic<bool>*>(flag);
  return abort != nullptr && abort->load() ? 1 : 0;
}

}  // namespace

std::string checked_url(const std::string& uri);  // checked_tracking_uri's checks, the URL as given in messages

std::string Reply::error_code() const {
  if (!reached) return "";
  const auto j = nlohmann::json::parse(body, nullptr, false);
  return j.is_object() && j.contains("error_code") && j["error_code"].is_string() ? j["error_code"].get<std::string>()
                                                                                  : "";
}

std::string Reply::summary() const {
  if (!reached) return error;
  std::string message = body;
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) message = j["message"].get<std::string>();
  const std::size_t line_end = message.find('\n');
  if (line_end != std::string::npos) message.resize(line_end);
  if (message.size() > 300) message = message.substr(0, 300) + "...";
  return "HTTP " + std::to_string(status) + (message.empty() ? "" : ": " + message);
}

std::string without_password(const std::string& text) {
  std::string out = text;
  for (std::size_t scheme = out.find("://"); scheme != std::string::npos; scheme = out.find("://", scheme + 3)) {
    const std::size_t from = scheme + 3;
    const std::size_t end = std::min(out.find_first_of("/ \t\n'\",", from), out.size());  // the authority's end
    const std::size_t at = out.rfind('@', end == 0 ? 0 : end - 1);
    if (at == std::string::npos || at < from) continue;
    const std::size_t colon = out.find(':', from);
    if (colon == std::string::npos || colon > at) continue;  // a user name alone is no secret
    out.replace(colon + 1, at - colon - 1, "***");
  }
  return out;
}

Credentials Credentials::from_environment() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  return {env("MLFLOW_TRACKING_USERNAME"), env("MLFLOW_TRACKING_PASSWORD"), env("MLFLOW_TRACKING_TOKEN")};
}

std::string checked_tracking_uri(const std::string& uri) {
  try {
    return checked_url(uri);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(without_password(e.what()));
  }
}

std::string checked_url(const std::string& uri) {
  std::string rest;
  bool http = false;
  for (const std::string scheme : {"http://", "https://"})
    if (uri.rfind(scheme, 0) == 0) rest = uri.substr(scheme.size()), http = true;
  if (!http)
    throw std::invalid_argument("'" + uri +
                                "' is no http:// or https:// URL (the REST API of an MLflow tracking "
                                "server, e.g. http://127.0.0.1:5000)");
  const std::string host_port = rest.substr(0, rest.find('/'));
  const std::size_t colon = host_port.rfind(':');
  const bool bracketed = !host_port.empty() && host_port[0] == '[';  // [::1]:5000
  const std::string host =
      colon == std::string::npos || (bracketed && host_port.back() == ']') ? host_port : host_port.substr(0, colon);
  if (host.empty()) throw std::invalid_argument("'" + uri + "' names no host");
  for (char c : uri)
    if (static_cast<unsigned char>(c) <= ' ' || c == '"' || c == '\\' || c == '?' || c == '#')
      throw std::invalid_argument("'" + uri + "' holds a character a server URL cannot have");
  if (colon != std::string::npos && !(bracketed && host_port.back() == ']')) {
    const std::string port = host_port.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stol(port) == 0 || std::stol(port) > 65535)
      throw std::invalid_argument("'" + uri + "' has no valid port (1 to 65535)");
  }
  std::string base = uri;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

Client::Client(std::string base, double timeout_s, const std::atomic<bool>* abort, Credentials credentials)
    : base_(std::move(base)), timeout_s_(timeout_s), abort_(abort), credentials_(std::move(credentials)) {
  init_curl_once();
  curl_ = curl_easy_init();
  if (curl_ == nullptr) throw std::runtime_error("mlflow: libcurl could not make a handle");
}

Client::~Client() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

Reply Client::post(const std::string& endpoint, const nlohmann::json& body) {
  const std::string text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return perform(base_ + "/api/2.0/mlflow/" + endpoint, "POST", &text, "application/json", false);
}

Reply Client::get(const std::string& endpoint, const std::string& key, const std::string& value) {
  char* escaped = curl_easy_escape(static_cast<CURL*>(curl_), value.data(), static_cast<int>(value.size()));
  const std::string url = base_ + "/api/2.0/mlflow/" + endpoint + "?" + key + "=" + (escaped ? escaped : "");
  curl_free(escaped);
  return perform(url, "GET", nullptr, nullptr, false);
}

Reply Client::put_artifact(const std::string& path, const std::string& bytes) {
  std::string url = base_ + "/api/2.0/mlflow-artifacts/artifacts/";
  CURL* curl = static_cast<CURL*>(curl_);
  std::size_t from = 0;
  while (from <= path.size()) {  // each segment escaped, the slashes kept
    const std::size_t to = std::min(path.find('/', from), path.size());
    const std::string segment = path.substr(from, to - from);
    char* escaped = curl_easy_escape(curl, segment.data(), static_cast<int>(segment.size()));
    url += escaped ? escaped : "";
    curl_free(escaped);
    if (to < path.size()) url += '/';
    from = to + 1;
  }
  return perform(url, "PUT", &bytes, "application/octet-stream", true);
}

Reply Client::perform(const std::string& url, const char* method, const std::string* body, const char* content_type,
                      bool upload) {
  CURL* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);  // the connection cache stays
  Reply reply;
  char error[CURL_ERROR_SIZE] = "";
  curl_slist* headers = nullptr;
  if (content_type) headers = curl_slist_append(headers, (std::string("Content-Type: ") + content_type).c_str());
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  if (!credentials_.token.empty())
    headers = curl_slist_append(headers, ("Authorization: Bearer " + credentials_.token).c_str());
  Upload source{body};
  const long timeout_ms = static_cast<long>(timeout_s_ * 1000);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // a background thread: no SIGALRM for timeouts
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "skein-mlflow");
  if (!credentials_.username.empty()) {
    curl_easy_setopt(curl, CURLOPT_USERNAME, credentials_.username.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, credentials_.password.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, check_abort);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, abort_);
  if (upload) {
    // A file may be large: bounded by progress (nothing moving for timeout_s), not by total time.
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, read_upload);
    curl_easy_setopt(curl, CURLOPT_READDATA, &source);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body->size()));
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, std::max(1L, timeout_ms / 1000));
  } else {
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    if (body) {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
    }
  }
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
  const CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (code == CURLE_OK) {
    reply.reached = true;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  } else {
    reply.error = error[0] ? error : curl_easy_strerror(code);  // the buffer's is the more precise
  }
  return reply;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace skein_mlflow
