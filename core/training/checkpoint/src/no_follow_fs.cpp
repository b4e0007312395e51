#include "skein/training/checkpoint/no_follow_fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace skein::core::no_follow {

namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

std::vector<std::string> components(const std::string& rel) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= rel.size()) {
    const auto slash = rel.find('/', start);
    const std::string part = rel.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!part.empty() && part != ".") parts.push_back(part);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return parts;
}

void remove_children(int dirfd);

// Removes `name` in `dirfd` and, for a real directory, all it holds.
void remove_tree_at(int dirfd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    ::unlinkat(dirfd, name.c_str(), 0);
    return;
  }
  const int sub = ::openat(dirfd, name.c_str(), kDirFlags);
  if (sub < 0) return;
  remove_children(sub);  // closes sub
  ::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR);
}

void remove_children(int dirfd) {
  DIR* d = ::fdopendir(dirfd);
  if (!d) {
    ::close(dirfd);
    return;
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  for (const auto& n : names) remove_tree_at(::dirfd(d), n);
  ::closedir(d);
}

}  // namespace

Dir& Dir::operator=(Dir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

Dir::~Dir() {
  if (fd_ >= 0) ::close(fd_);
}

Dir open_dir(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open directory " + path + ": " + std::strerror(errno));
  return Dir(fd);
}

Dir open_subdir(const Dir& parent, const std::string& name, bool create) {
  if (!parent || name == "..") return Dir();
  int fd = ::openat(parent.fd(), name.c_str(), kDirFlags);
  if (fd < 0 && errno == ENOENT && create && ::mkdirat(parent.fd(), name.c_str(), 0755) == 0)
    fd = ::openat(parent.fd(), name.c_str(), kDirFlags);
  return Dir(fd);
}

Dir open_parent(const Dir& root, const std::string& rel, std::string& leaf, bool create) {
  auto parts = components(rel);
  if (parts.empty() || !root) return Dir();
  leaf = parts.back();
  if (leaf == "..") return Dir();
  parts.pop_back();
  Dir current(::fcntl(root.fd(), F_DUPFD_CLOEXEC, 0));
  for (const auto& part : parts) {
    current = open_subdir(current, part, create);
    if (!current) return Dir();
  }
  return current;
}

Kind kind_of(const Dir& parent, const std::string& name) {
  struct stat st {};
  if (!parent || ::fstatat(parent.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return Kind::missing;
  if (S_ISREG(st.st_mode)) return Kind::file;
  if (S_ISDIR(st.st_mode)) return Kind::directory;
  return Kind::other;
}

bool remove(const Dir& root, const std::string& rel, bool whole_tree) {
  std::string leaf;
  const Dir parent = open_parent(root, rel, leaf);
  const Kind kind = kind_of(parent, leaf);
  if (kind == Kind::missing) return false;
  if (kind != Kind::directory) return ::unlinkat(parent.fd(), leaf.c_str(), 0) == 0;
  if (!whole_tree) return ::unlinkat(parent.fd(), leaf.c_str(), AT_REMOVEDIR) == 0;
  remove_tree_at(parent.fd(), leaf);
  return kind_of(parent, leaf) == Kind::missing;
}

bool move(const Dir& from, const Dir& to, const std::string& rel) {
  std::string leaf, to_leaf;
  const Dir source = open_parent(from, rel, leaf);
  if (kind_of(source, leaf) == Kind::missing) return false;
  const Dir target = open_parent(to, rel, to_leaf, true);
  if (!target) throw std::runtime_error("cannot make the directories for " + rel);
  if (::renameat(source.fd(), leaf.c_str(), target.fd(), to_leaf.c_str()) == 0) return true;
  if (errno != ENOTEMPTY && errno != EEXIST && errno != EISDIR && errno != ENOTDIR)
    throw std::runtime_error("cannot move " + rel + ": " + std::strerror(errno));
  // A directory (or a file where one was) is in the way: it goes first.
  remove_tree_at(target.fd(), to_leaf);
  if (::renameat(source.fd(), leaf.c_str(), target.fd(), to_leaf.c_str()) != 0)
    throw std::runtime_error("cannot move " + rel + ": " + std::strerror(errno));
  return true;
}

}  // namespace skein::core::no_follow
