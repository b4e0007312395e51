#pragma once
// The environment variables the SDK and the kit read themselves (set by users,
// or by the launcher for its --allow-* flags). The host's table,
// core/host/include/skein/host/env_vars.hpp, includes these: one home per name.
namespace skein::env {
constexpr const char* kAllowOutsideRunDir = "SKEIN_ALLOW_OUTSIDE_RUN_DIR";  // "1": outputs may leave the run dir
constexpr const char* kAllowScriptFileOps = "SKEIN_ALLOW_SCRIPT_FILE_OPS";  // "1": TorchScript may reach files
}  // namespace skein::env
