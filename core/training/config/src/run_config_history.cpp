#include "skein/training/config/run_config_history.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <boost/filesystem.hpp>

#include "skein/io/atomic_file.hpp"
#include "skein/errors.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/run.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

namespace {

constexpr const char* kHistoryFile = run_files::kConfigHistory;

std::string now_iso() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::ostringstream s;
  s << std::put_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  return s.str();
}

// The first path at which `a` and `b` differ ("optimizer.lr"), or "".
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& at) {
  if (a == b) return "";
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string path = at + "." + it.key();
      if (!b.contains(it.key())) return path;
      auto d = first_difference(it.value(), b.at(it.key()), path);
      if (!d.empty()) return d;
    }
    for (auto it = b.begin(); it != b.end(); ++it)
      if (!a.contains(it.key())) return at + "." + it.key();
  }
  return at;
}

const nlohmann::json& at_path(const nlohmann::json& j, const std::string& dotted) {
  static const nlohmann::json missing = "(not set)";
  const nlohmann::json* node = &j;
  std::stringstream ss(dotted);
  for (std::string seg; std::getline(ss, seg, '.');) {
    if (!node->is_object() || !node->contains(seg)) return missing;
    node = &node->at(seg);
  }
  return *node;
}

}  // namespace

nlohmann::json latest_run_config(const std::string& dir) {
  std::ifstream history(dir + "/" + kHistoryFile);
  std::string line, last;
  while (std::getline(history, line))
    if (!line.empty()) last = line;
  if (!last.empty()) {
    try {
      return nlohmann::json::parse(last).at("config");
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError(dir + "/" + kHistoryFile + ": last line unreadable: " + e.what());
    }
  }
  return read_config_file(run_files::path(dir, run_files::kConfig));
}

namespace {

// "history, parallel, ..., device and data_workers" (what a user may set; not
// the plugin versions skein records itself).
std::string changeable_words() {
  std::vector<std::string> keys = keys_changeable_on_resume();
  keys.erase(std::remove(keys.begin(), keys.end(), run_key::kPluginVersions), keys.end());
  std::string words;
  for (std::size_t i = 0; i < keys.size(); ++i)
    words += (i == 0 ? "" : i + 1 == keys.size() ? " and " : ", ") + keys[i];
  return words;
}

}  // namespace

void check_resume_changes(const nlohmann::json& before, const nlohmann::json& after) {
  const std::vector<std::string> allowed = keys_changeable_on_resume();
  for (auto it = after.begin(); it != after.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
    const nlohmann::json old = before.contains(it.key()) ? before.at(it.key()) : nlohmann::json();
    const std::string path = first_difference(old, it.value(), it.key());
    if (path.empty()) continue;
    throw ConfigError("command line: '" + path + "' cannot change on --resume (" + at_path(before, path).dump() +
                      " in the run, " + at_path(after, path).dump() +
                      " asked): the run continues from its checkpoint; a resume may change only " +
                      changeable_words() + ". To train on with other " +
                      "settings, start a new run with --set init_from=<this run's checkpoint directory>");
  }
}

void use_recorded_plugins(const nlohmann::json& config, PluginRegistry& registry) {
  const auto versions = config.find(run_key::kPluginVersions);
  if (versions == config.end() || !versions->is_object()) return;
  for (auto it = versions->begin(); it != versions->end(); ++it) {
    const std::string path = it.value().value("path", "");
    if (path.empty()) continue;
    boost::system::error_code ec;
    if (fs::exists(path, ec)) {
      registry.load_file(path);
    } else {
      skein::warn("plugin '" + it.key() + "' was loaded from " + path +
                  " when the run started; that file is gone, so the resume uses the plugin found by name");
    }
  }
}

void warn_changed_versions(const nlohmann::json& before, const nlohmann::json& after) {
  using run_key::kPluginVersions;
  if (!before.contains(kPluginVersions) || !after.contains(kPluginVersions)) return;
  const auto& old = before[kPluginVersions];
  for (auto it = after[kPluginVersions].begin(); it != after[kPluginVersions].end(); ++it) {
    if (!old.contains(it.key())) continue;
    const auto& was = old[it.key()];
    if (was.value("version", "") != it.value().value("version", "") || was.value("path", "") != it.value().value("path", ""))
      skein::warn("plugin '" + it.key() + "' is now version " + it.value().value("version", "?") + " from " +
                  it.value().value("path", "?") + "; the run started with version " + was.value("version", "?") +
                  " from " + was.value("path", "?"));
  }
}

void append_config_history(const std::string& dir, const std::string& event, const ConfigSources& command_line,
                           const nlohmann::json& config, const std::string& launched_by) {
  nlohmann::json line = {{"event", event},
                         {"time", now_iso()},
                         {"command_line", {{"plugins", command_line.plugins}, {"sets", command_line.sets}}},
                         {"config", config}};
  if (!launched_by.empty()) line["launched_by"] = launched_by;
  const std::string path = dir + "/" + kHistoryFile;
  const int fd = open_no_follow(path, O_WRONLY | O_APPEND | O_CREAT);
  const std::string text = line.dump() + "\n";
  const ssize_t written = ::write(fd, text.data(), text.size());
  ::close(fd);
  if (written != static_cast<ssize_t>(text.size())) throw std::runtime_error("cannot write " + path);
}

}  // namespace skein::core
