#pragma once
// A TorchScript model's (or an exported program's) file is its code: each checkpoint records the file's
// SHA-256 ("script" in trainer.json), and resume, export and predict refuse
// a file that changed since, unless the user accepts it.
#include <optional>
#include <string>

#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"
#include "skein/model.hpp"

namespace skein::core {

// The file of a model made from a TorchScript file (skein::ScriptedModel) or
// a torch.export program (skein::ExportedModel) and its SHA-256; nullopt for
// any other model.
SKEIN_EXPORT std::optional<CheckpointMeta::Script> script_pin(const Model& model);

// Throws ConfigError naming the checkpoint (`where`) and the file when
// `model`'s file differs from the one `meta` recorded; with
// SKEIN_ALLOW_CHANGED_SCRIPT=1 (--allow-changed-script) warns instead.
// Checkpoints without a record, and other models, pass.
SKEIN_EXPORT void check_script_unchanged(const Model& model, const CheckpointMeta& meta, const std::string& where);

}  // namespace skein::core
