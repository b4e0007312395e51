// Fuzz target: a config file and command-line flags through resolve_config,
// exactly as `skein train --config FILE [--plugin SPEC]... [--set K=V]...`
// resolves them, against a registry of every bundled plugin's manifest.
//
// Input: the config file's bytes; optionally, after a NUL byte, up to 8
// NUL-separated flags: "+SPEC" is --plugin SPEC, anything else --set.
//
// Properties:
//  - only skein::ConfigError or skein::PluginError escape (the documented
//    errors, which the CLI prints as one line with exit code 2);
//  - a resolved config can be written as config.json (dump does not throw),
//    and that file resolves again, with no flags, to the same config (what
//    --resume relies on).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <boost/filesystem.hpp>

#include "fuzz_support.hpp"
#include "skein/training/config/config.hpp"
#include "skein/host/plugin_registry.hpp"
#include "skein/errors.hpp"

namespace {

skein::core::PluginRegistry* registry = nullptr;
skein_fuzz::MemFile* config_file = nullptr;
skein_fuzz::MemFile* resolved_file = nullptr;

// A plugin named by path is loaded with dlopen() when the file exists and has
// no manifest. The fuzzer must not load the system's libraries: inputs that
// name an existing file are skipped (a missing one is fine: an error).
bool names_existing_file(const std::string& s) {
  const bool path_like = s.find('/') != std::string::npos ||
                         (s.size() > 3 && s.compare(s.size() - 3, 3, ".so") == 0);
  if (!path_like || s.find('\0') != std::string::npos) return false;
  boost::system::error_code ec;
  return boost::filesystem::exists(s, ec);
}

// Whether a string in a JSON value names an existing file: every string, or
// only the values of "plugin" keys (the only ones a config file can use as a
// plugin name). Without recursion: inputs may nest deeply.
bool json_names_existing_file(const nlohmann::json& root, bool plugin_keys_only) {
  std::vector<std::pair<const nlohmann::json*, bool>> todo{{&root, !plugin_keys_only}};
  while (!todo.empty()) {
    auto [j, check] = todo.back();
    todo.pop_back();
    if (check && j->is_string() && names_existing_file(j->get_ref<const std::string&>())) return true;
    if (j->is_object())
      for (auto it = j->begin(); it != j->end(); ++it)
        todo.push_back({&*it, !plugin_keys_only || it.key() == "plugin"});
    if (j->is_array())
      for (const auto& e : *j) todo.push_back({&e, !plugin_keys_only});
  }
  return false;
}

// A flag's value: as text, and every string in it when it is JSON.
bool text_names_existing_file(const std::string& text) {
  if (names_existing_file(text)) return true;
  try {
    return json_names_existing_file(nlohmann::json::parse(text), false);
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

bool config_names_existing_file(const std::string& text) {
  try {
    return json_names_existing_file(nlohmann::json::parse(text), true);
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  registry = new skein::core::PluginRegistry();
  registry->scan_directory(SKEIN_FUZZ_MANIFEST_DIR);
  for (const auto& p : registry->problems()) std::fprintf(stderr, "fuzz_config: %s: %s\n", p.path.c_str(), p.message.c_str());
  if (registry->plugins().size() != SKEIN_FUZZ_PLUGIN_COUNT || !registry->problems().empty())
    skein_fuzz::finding("fuzz_config: expected " + std::to_string(SKEIN_FUZZ_PLUGIN_COUNT) +
                        " plugin manifests in " SKEIN_FUZZ_MANIFEST_DIR ", found " +
                        std::to_string(registry->plugins().size()));
  config_file = new skein_fuzz::MemFile("config.json");
  resolved_file = new skein_fuzz::MemFile("resolved.json");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  skein::core::ConfigSources sources;
  const std::size_t nul = input.find('\0');
  const std::string config_text = input.substr(0, nul);
  if (config_names_existing_file(config_text)) return -1;
  if (nul != std::string::npos) {
    std::size_t at = nul + 1;
    for (int n = 0; n < 8 && at <= input.size(); ++n) {
      std::size_t end = std::min(input.find('\0', at), input.size());
      std::string flag = input.substr(at, end - at);
      at = end + 1;
      if (flag.empty()) continue;
      if (flag[0] == '+') {
        flag.erase(0, 1);
        if (names_existing_file(flag.substr(0, flag.find(':')))) return -1;
        sources.plugins.push_back(flag);
      } else {
        sources.sets.push_back(flag);
      }
      // A value may name a plugin file (--set model.plugin=/x.so, name:k=/x.so).
      for (std::size_t eq = flag.find_first_of("=:"); eq != std::string::npos;
           eq = flag.find_first_of("=:,", eq + 1))
        if (text_names_existing_file(flag.substr(eq + 1))) return -1;
    }
  }
  config_file->write(config_text);
  sources.config_path = config_file->path();

  std::string stage = "resolve_config";
  try {
    skein::core::RunConfig rc = skein::core::resolve_config(sources, *registry);

    stage = "config.json dump";
    const std::string resolved = rc.resolved.dump(2) + "\n";  // what run_training writes
    resolved_file->write(resolved);

    stage = "resolving the written config.json again";
    skein::core::ConfigSources again;
    again.config_path = resolved_file->path();
    skein::core::RunConfig rc2 = skein::core::resolve_config(again, *registry);
    if (rc2.resolved != rc.resolved)
      skein_fuzz::finding("config.json resolves to another config:\n" + resolved + "\nvs\n" + rc2.resolved.dump(2));
    if (rc.batch_size <= 0 || rc.max_epochs <= 0 || rc.accumulate_steps <= 0 ||
        !(rc.valid_split >= 0 && rc.valid_split < 1))
      skein_fuzz::finding("resolve_config accepted out-of-range values: " + resolved);
  } catch (const skein::ConfigError& e) {
    if (stage != "resolve_config") skein_fuzz::unexpected(e, stage);
    if (std::string(e.what()).empty()) skein_fuzz::finding("ConfigError without a message");
  } catch (const skein::PluginError& e) {
    if (stage != "resolve_config") skein_fuzz::unexpected(e, stage);
  } catch (const std::exception& e) {
    skein_fuzz::unexpected(e, stage);
  } catch (...) {
    skein_fuzz::unexpected_unknown(stage);
  }
  return 0;
}
