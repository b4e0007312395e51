#pragma once
// Input files named by a user: a reader must see a regular file before it
// opens one, as a FIFO blocks the open and /dev/zero never ends.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "skein/detail/export.hpp"

namespace skein {

// The size in bytes of the regular file `path` (a symbolic link is followed).
// Throws std::runtime_error naming the path when it does not exist or is not
// a regular file: "'/dev/zero' is not a regular file (a character device)".
SKEIN_EXPORT std::uint64_t regular_file_size(const std::string& path);

// A regular file open for reading, read no further than the size it had when
// it was opened (a file that grows meanwhile ends there). A FIFO or a device
// is refused before and after the open (which never waits for a FIFO's writer).
class SKEIN_EXPORT RegularFileReader {
 public:
  // Throws std::runtime_error naming the path, as regular_file_size does.
  explicit RegularFileReader(const std::string& path);
  ~RegularFileReader();
  RegularFileReader(const RegularFileReader&) = delete;
  RegularFileReader& operator=(const RegularFileReader&) = delete;

  std::uint64_t size() const { return size_; }
  // Up to `most` bytes into `into`; 0 once `size()` bytes were read. Throws
  // std::runtime_error naming the path when reading fails.
  std::size_t read(char* into, std::size_t most);

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0, done_ = 0;
};

// The whole content of the regular file `path`, at most the size it had when
// opened. Throws std::runtime_error naming the path (RegularFileReader).
SKEIN_EXPORT std::string read_regular_file(const std::string& path);

// read_regular_file, or nullopt when the file cannot be opened or read or is
// not a regular file (the caller names the file in its own error).
SKEIN_EXPORT std::optional<std::string> read_whole_file(const std::string& path);

}  // namespace skein
