#include "skein/host/plugin_file_check.hpp"
#include "skein/host/env_vars.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace skein::core {

namespace {

const char* kFix = " (fix its owner or mode, or set SKEIN_ALLOW_UNSAFE_PLUGIN_DIR=1)";

std::string real_path_of(const std::string& path, std::string& error) {
  char buffer[PATH_MAX];
  if (!::realpath(path.c_str(), buffer)) {
    error = "cannot resolve '" + path + "': " + std::strerror(errno);
    return "";
  }
  return buffer;
}

// Why the entry at the real path `p` is unsafe, or "".
std::string unsafe_entry(const std::string& p, bool directory) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return "cannot stat '" + p + "': " + std::strerror(errno);
  const std::string what = (directory ? "directory '" : "file '") + p + "'";
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    return what + " is owned by uid " + std::to_string(st.st_uid) + ", neither root nor this user (uid " +
           std::to_string(::geteuid()) + ")";
  // Others cannot replace entries they do not own in a sticky directory (/tmp).
  if (directory && (st.st_mode & S_ISVTX)) return "";
  if (st.st_mode & S_IWOTH) return what + " is world-writable";
  if (st.st_mode & S_IWGRP) return what + " is group-writable";
  return "";
}

// Checks the real directory `dir` and each one above it.
std::string unsafe_chain(std::string dir) {
  for (;;) {
    if (auto why = unsafe_entry(dir, true); !why.empty()) return why;
    if (dir == "/") return "";
    const auto slash = dir.find_last_of('/');
    dir = slash == 0 ? "/" : dir.substr(0, slash);
  }
}

}  // namespace

bool unsafe_plugins_allowed() {
  const char* allow = std::getenv(env::kAllowUnsafePluginDir);
  return allow && std::string(allow) == "1";
}

std::string unsafe_directory_reason(const std::string& dir) {
  if (unsafe_plugins_allowed()) return "";
  std::string error;
  const std::string real = real_path_of(dir, error);
  if (real.empty()) return error;
  const std::string why = unsafe_chain(real);
  return why.empty() ? "" : why + kFix;
}

std::string unsafe_file_reason(const std::string& path) {
  if (unsafe_plugins_allowed()) return "";
  std::string error;
  const std::string real = real_path_of(path, error);
  if (real.empty()) return error;
  std::string why = unsafe_entry(real, false);
  if (why.empty()) why = unsafe_chain(real.substr(0, std::max<std::size_t>(1, real.find_last_of('/'))));
  if (why.empty()) return "";
  return (real == path ? "" : "'" + path + "' is '" + real + "': ") + why + kFix;
}

}  // namespace skein::core
