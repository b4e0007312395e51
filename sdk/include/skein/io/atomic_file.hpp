#pragma once
// Files written so that a crash never leaves half of one (header-only, as
// the torch-free host uses it too).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>

namespace skein {


// Writes `content` to `path` so that readers see the old file or the whole new
// one, never a part: a temporary file in the same directory, fsync, rename,
// fsync of the directory. Throws std::runtime_error naming the path.
//
// A path naming one of the process's open files (/dev/stdout, /dev/stderr,
// /dev/fd/N, /proc/self/fd/N) is written to that descriptor, whatever it is
// (a pipe, a terminal, a file stdout was redirected to). Otherwise a path
// that exists and is not a regular file is never replaced:
//  - a character device or a FIFO (/dev/null, /dev/stdout, a pipe) is written
//    in place, as a shell's `>` would: that is what naming one means;
//  - a directory, a block device or a socket is refused.
// A symbolic link to a regular file is replaced by the new file (the file it
// points to is left alone).
inline void write_file_atomic(const std::string& path, const std::string& content);

// PREFIX + NAME + SUFFIX as one directory entry's name, NAME cut so that the
// whole fits NAME_MAX (255 bytes): a temporary name beside a file whose own
// name is legal, however long.
inline std::string fitting_name(const std::string& prefix, const std::string& name, const std::string& suffix) {
  const std::size_t added = prefix.size() + suffix.size();
  return prefix + name.substr(0, NAME_MAX > added ? NAME_MAX - added : 0) + suffix;
}

// open(2) of one of a run's own files with O_NOFOLLOW and O_CLOEXEC added: a
// symbolic link planted in its place is refused, never followed. Throws
// std::runtime_error naming the path (and saying when it is a link).
inline int open_no_follow(const std::string& path, int flags, int mode = 0644);

// fsync(2) of a file or directory (flags: O_RDONLY, O_RDONLY | O_DIRECTORY),
// best effort: what write_file_atomic does to the directory it renamed in.
inline void fsync_path(const std::string& path, int flags);


namespace atomic_file_detail {
[[noreturn]] inline void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error("cannot " + what + " " + path + ": " + std::strerror(errno));
}

inline std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Writes all of `content` to `fd`; false (errno set) on failure.
inline bool write_all(int fd, const std::string& content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

// A character device or FIFO the user named: written like a shell's `>`. A
// FIFO nobody reads is an error, not a hang (O_NONBLOCK on open).
inline void write_in_place(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENXIO) throw std::runtime_error("cannot write " + path + ": a FIFO that nobody reads");
    fail("open", path);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const bool ok = write_all(fd, content);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (!ok) fail("write", path);
}

// The descriptor a path such as /dev/stdout, /dev/fd/3 or /proc/self/fd/1
// names (the process's own open file), or -1.
inline int named_descriptor(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const std::string prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (path.rfind(prefix, 0) != 0 || path.size() == prefix.size()) continue;
    const std::string digits = path.substr(prefix.size());
    if (digits.size() < 6 && digits.find_first_not_of("0123456789") == std::string::npos) return std::stoi(digits);
  }
  return -1;
}

// The temporary file write_file_atomic writes first: PATH.tmp.PID, with the
// name cut so that it fits a directory entry when PATH's own name is near
// the limit.
inline std::string temporary_beside(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::size_t name_at = slash == std::string::npos ? 0 : slash + 1;
  return path.substr(0, name_at) + fitting_name("", path.substr(name_at), ".tmp." + std::to_string(::getpid()));
}

// What `path` is when it exists and is neither missing, a regular file, nor
// a link to one: "" when an atomic replace is right.
inline std::string special_kind(const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "";
}
}  // namespace atomic_file_detail

inline void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

inline void write_file_atomic(const std::string& path, const std::string& content) {
  // The user named one of this process's open files (stdout redirected to a
  // file, a pipe): it is written there, as a shell's `>&N` would.
  if (const int fd = atomic_file_detail::named_descriptor(path); fd >= 0) {
    if (!atomic_file_detail::write_all(fd, content)) atomic_file_detail::fail("write", path);
    return;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return atomic_file_detail::write_in_place(path, content);
    throw std::runtime_error("cannot write " + path + ": it is " + atomic_file_detail::special_kind(st) +
                             ", not a file; name a file to write");
  }
  const std::string tmp = atomic_file_detail::temporary_beside(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) atomic_file_detail::fail("create", tmp);
  if (!atomic_file_detail::write_all(fd, content)) {
    const int saved = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    errno = saved;
    atomic_file_detail::fail("write", tmp);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    atomic_file_detail::fail("flush", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    atomic_file_detail::fail("rename onto", path);
  }
  fsync_path(atomic_file_detail::parent_of(path), O_RDONLY | O_DIRECTORY);
}

inline int open_no_follow(const std::string& path, int flags, int mode) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0) return fd;
  struct stat st {};
  if (errno == ELOOP || (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)))
    throw std::runtime_error("cannot open " + path +
                             ": it is a symbolic link, and skein does not follow links in place of a run's own files");
  atomic_file_detail::fail("open", path);
}

}  // namespace skein
