#pragma once
// Errors of a plugin's own code located in the config.
#include <utility>

#include "skein/training/config/config.hpp"
#include "skein/errors.hpp"

namespace skein::core {

// Runs `step`, code of the plugin `use`: an error about one of its options
// (OptionError) is located in the config at the plugin's path + the option,
// so that blame() names the file or --set flag that gave the value.
template <class Step>
auto located(const PluginUse& use, Step&& step) -> decltype(step()) {
  try {
    return std::forward<Step>(step)();
  } catch (const OptionError& e) {
    throw ConfigPathError(use.path + "." + e.option(), e.what());
  }
}

}  // namespace skein::core
