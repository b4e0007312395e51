#include "skein/training/checkpoint/script_pin.hpp"

#include <cstdlib>
#include <optional>

#include "skein/host/env_vars.hpp"
#include "skein/errors.hpp"
#include "skein/io/exported_model.hpp"
#include "skein/io/scripted_model.hpp"

namespace skein::core {

namespace {

// The file whose code a model runs: a TorchScript module or a torch.export program.
struct ProgramFile {
  std::string kind;
  std::string path;
  std::string sha256;
};

std::optional<ProgramFile> program_file(const Model& model) {
  if (const auto* scripted = dynamic_cast<const ScriptedModel*>(&model))
    return ProgramFile{"TorchScript file", scripted->path(), scripted->sha256()};
  if (const auto* exported = dynamic_cast<const ExportedModel*>(&model))
    return ProgramFile{"exported program", exported->path(), exported->sha256()};
  return std::nullopt;
}

}  // namespace

std::optional<CheckpointMeta::Script> script_pin(const Model& model) {
  const auto file = program_file(model);
  if (!file) return std::nullopt;
  return CheckpointMeta::Script{file->path, file->sha256};
}

void check_script_unchanged(const Model& model, const CheckpointMeta& meta, const std::string& where) {
  const auto file = program_file(model);
  if (!file || !meta.script || file->sha256 == meta.script->sha256) return;
  const std::string change = where + " was trained with " + file->kind + " '" + meta.script->path + "' of SHA-256 " +
                             meta.script->sha256.substr(0, 16) + "..., and '" + file->path +
                             "' now has SHA-256 " + file->sha256.substr(0, 16) +
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
