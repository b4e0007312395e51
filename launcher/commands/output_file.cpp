#include "output_file.hpp"

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

}  // namespace skein::launcher
