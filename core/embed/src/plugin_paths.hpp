#pragma once
// The registry the test harnesses create plugins from: the default plugin
// folders (as skein train), then the test's own files and folders.
#include <filesystem>
#include <string>
#include <vector>

#include "skein/host/plugin_registry.hpp"

namespace skein::testing {

inline void load_plugins(core::PluginRegistry& registry, const std::vector<std::string>& paths) {
  core::scan_plugins(registry, {}, false);
  for (const auto& path : paths) {
    if (std::filesystem::is_directory(path))
      registry.scan_directory(path);
    else
      registry.load_file(path);
  }
}

}  // namespace skein::testing
