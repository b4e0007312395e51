#pragma once
// File operations on paths relative to a directory that never follow a
// symbolic link: each component is opened with openat(O_NOFOLLOW), so an
// entry named "link/file" with `link` a symlink leads nowhere, wherever the
// link points. Used for every deletion and move inside a run directory, whose
// list of outputs (.skein-outputs) is a file anyone with access may edit.
// No torch here.
#include <string>

#include "skein/detail/export.hpp"

namespace skein::core::no_follow {

// An open directory (closed on destruction); invalid when it could not be opened.
class SKEIN_EXPORT Dir {
 public:
  Dir() = default;
  explicit Dir(int fd) : fd_(fd) {}
  Dir(Dir&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Dir& operator=(Dir&& other) noexcept;
  Dir(const Dir&) = delete;
  Dir& operator=(const Dir&) = delete;
  ~Dir();
  int fd() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// `path` itself may be a link (the user named it); throws std::runtime_error.
SKEIN_EXPORT Dir open_dir(const std::string& path);
// The real directory `name` inside `parent` (not a link); invalid when missing
// or not a directory, or created first when `create`.
SKEIN_EXPORT Dir open_subdir(const Dir& parent, const std::string& name, bool create = false);
// The directory that holds the relative path `rel` below `root`, walked
// component by component; `leaf` receives the last component. Invalid when a
// component is missing, a link, or "..".
SKEIN_EXPORT Dir open_parent(const Dir& root, const std::string& rel, std::string& leaf, bool create = false);

enum class Kind { missing, file, directory, other };  // a link is `other`, never its target
SKEIN_EXPORT Kind kind_of(const Dir& parent, const std::string& name);

// Removes `rel` below `root`: a file or link is unlinked; a directory is
// removed with everything in it when `whole_tree`, else only when empty.
// Returns false when `rel` is not there or was left (a non-empty directory).
SKEIN_EXPORT bool remove(const Dir& root, const std::string& rel, bool whole_tree);

// Renames `rel` below `from` to the same relative path below `to`, creating
// the directories above it there; what was at the destination is replaced.
// Returns false when `rel` is not there.
SKEIN_EXPORT bool move(const Dir& from, const Dir& to, const std::string& rel);

}  // namespace skein::core::no_follow
