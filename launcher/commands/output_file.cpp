#include "output_file.hpp"

#include <sys/stat.h>

#include <climits>

#include <boost/filesystem.hpp>

#include "skein/errors.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/run.hpp"

namespace fs = boost::filesystem;

namespace skein::launcher {

namespace {

// A directory skein ran in: it has skein's list of outputs or its lock.
bool is_run_directory(const fs::path& dir) {
  boost::system::error_code ec;
  return fs::exists(dir / run_files::kOutputList, ec) || fs::exists(dir / run_files::kLock, ec);
}

}  // namespace

void check_output_file(const std::string& out, const std::string& flag) {
  if (out.empty()) throw ConfigError(flag + ": an empty file name; name the file to write");
  boost::system::error_code ec;
  const fs::path real = fs::weakly_canonical(fs::absolute(out), ec);
  if (ec) return;  // the write reports what is wrong with the path
  for (fs::path dir = real.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (is_run_directory(dir)) {
      const std::string first = real.lexically_relative(dir).begin()->string();
      for (const auto& own : run_files::reserved())
        if (first == own)
          throw ConfigError(flag + " " + out + ": that is the run's own '" + own + "' in run directory " +
                            dir.string() + "; write somewhere else (e.g. " + (dir / "exported").string() + ")");
    }
    if (dir == dir.root_path()) break;
  }
}

void check_companion_file(const std::string& path, const std::string& flag) {
  check_output_file(path, flag);
  const fs::path name = fs::path(path).filename();
  if (name.string().size() > NAME_MAX)
    throw ConfigError(flag + " " + path + ": a name of " + std::to_string(name.string().size()) +
                      " bytes, longer than a file name may be (" + std::to_string(NAME_MAX) +
                      "); choose a shorter --out");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw ConfigError(flag + " " + path + ": it is " +
                      (S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "not a regular file") +
                      ", which skein does not replace; remove it or choose another --out");
}

void check_not_the_input(const std::string& out, const std::string& input, const std::string& input_flag) {
  struct stat a {}, b {};
  if (::stat(out.c_str(), &a) == 0 && ::stat(input.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    throw ConfigError("--out " + out + ": that is the " + input_flag + " file; write the outputs elsewhere");
}

}  // namespace skein::launcher
