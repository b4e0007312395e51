#pragma once
#include <string>

#include "skein/export.hpp"

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
SKEIN_EXPORT void write_file_atomic(const std::string& path, const std::string& content);

// open(2) of one of a run's own files with O_NOFOLLOW and O_CLOEXEC added: a
// symbolic link planted in its place is refused, never followed. Throws
// std::runtime_error naming the path (and saying when it is a link).
SKEIN_EXPORT int open_no_follow(const std::string& path, int flags, int mode = 0644);

}  // namespace skein
