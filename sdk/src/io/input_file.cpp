#include "skein/io/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace skein {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "of an unknown kind";
}

[[noreturn]] void cannot_read(const std::string& path) {
  throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
}

// The size of a regular file from its status; throws naming the path otherwise.
std::uint64_t size_if_regular(const struct stat& st, const std::string& path) {
  if (!S_ISREG(st.st_mode))
    throw std::runtime_error("'" + path + "' is not a regular file (" + kind_of(st.st_mode) + ")");
  return static_cast<std::uint64_t>(st.st_size);
}

}  // namespace

std::uint64_t regular_file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) cannot_read(path);
  return size_if_regular(st, path);
}

RegularFileReader::RegularFileReader(const std::string& path) : path_(path) {
  regular_file_size(path);  // a device is not even opened
  // O_NONBLOCK: should a FIFO take the file's place meanwhile, the open does
  // not wait for a writer; fstat below then refuses it.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) cannot_read(path);
  struct stat st {};
  try {
    if (::fstat(fd_, &st) != 0) cannot_read(path);
    size_ = size_if_regular(st, path);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

RegularFileReader::~RegularFileReader() { ::close(fd_); }

std::size_t RegularFileReader::read(char* into, std::size_t most) {
  const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(most, size_ - done_));
  std::size_t got = 0;
  while (got < want) {
    const ssize_t n = ::read(fd_, into + got, want - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) cannot_read(path_);
    if (n == 0) break;  // the file shrank
    got += static_cast<std::size_t>(n);
  }
  done_ = got < want ? size_ : done_ + got;
  return got;
}

std::string read_regular_file(const std::string& path) {
  RegularFileReader file(path);
  std::string bytes(static_cast<std::size_t>(file.size()), '\0');
  bytes.resize(file.read(bytes.data(), bytes.size()));
  return bytes;
}

std::optional<std::string> read_whole_file(const std::string& path) {
  try {
    return read_regular_file(path);
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
}

}  // namespace skein
