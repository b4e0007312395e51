#include "skein/training/script_pin.hpp"

#include <cstdlib>

#include "skein/host/env_vars.hpp"
#include "skein/errors.hpp"
#include "skein/io/scripted_model.hpp"

namespace skein::core {

nlohmann::json script_pin(const Model& model) {
  const auto* scripted = dynamic_cast<const ScriptedModel*>(&model);
  if (!scripted) return nullptr;
  return {{"path", scripted->path()}, {"sha256", scripted->sha256()}};
}

void check_script_unchanged(const Model& model, const CheckpointMeta& meta, const std::string& where) {
  const auto* scripted = dynamic_cast<const ScriptedModel*>(&model);
  if (!scripted || !meta.script || scripted->sha256() == meta.script->sha256) return;
  const std::string change = where + " was trained with TorchScript file '" + meta.script->path + "' of SHA-256 " +
                             meta.script->sha256.substr(0, 16) + "..., and '" + scripted->path() +
                             "' now has SHA-256 " + scripted->sha256().substr(0, 16) +
                             "...: its code may compute something else with the same weights";
  const char* allow = std::getenv(env::kAllowChangedScript);
  if (allow && std::string(allow) == "1") {
    warn(change + " (accepted: " + env::kAllowChangedScript + "=1)");
    return;
  }
  throw ConfigError(change + "; restore the file, or accept the change with --allow-changed-script (or " +
                    env::kAllowChangedScript + "=1)");
}

}  // namespace skein::core
