#pragma once
// Whether a plugin file may be loaded, judged from the file system alone:
// nobody but root and the current user can have written it or replaced it.
#include <string>

namespace skein::core {

// SKEIN_ALLOW_UNSAFE_PLUGIN_DIR=1: the one opt-out of these checks.
bool unsafe_plugins_allowed();

// Why `dir` (its real path and every directory above it) could hold files
// planted by someone else, or "" when it is safe: a directory not owned by
// root or the effective user, or group- or world-writable without the sticky
// bit. "" too when unsafe_plugins_allowed().
std::string unsafe_directory_reason(const std::string& dir);

// As unsafe_directory_reason, for a plugin file: symlinks resolved, the file
// itself (owner, group/world write bits) and every directory on its real path.
std::string unsafe_file_reason(const std::string& path);

}  // namespace skein::core
