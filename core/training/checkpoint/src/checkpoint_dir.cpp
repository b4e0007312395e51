#include "skein/training/checkpoint/checkpoint_dir.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <boost/filesystem.hpp>

#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/errors.hpp"
#include "skein/io/input_file.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

void remove_partial_checkpoints(const std::string& root) {
  boost::system::error_code ec;
  std::vector<fs::path> partial;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(".tmp-", 0) == 0 || name.rfind(".old-", 0) == 0) partial.push_back(it->path());
  }
  for (const auto& p : partial) {
    // A crash between install_checkpoint's two renames leaves the previous
    // checkpoint only under .old-NAME-PID: it goes back to NAME.
    const std::string name = p.filename().string();
    const auto dash = name.rfind('-');
    if (name.rfind(".old-", 0) == 0 && dash > 5) {
      const fs::path original = p.parent_path() / name.substr(5, dash - 5);
      if (!fs::exists(original, ec)) {
        fs::rename(p, original, ec);
        if (!ec) continue;
      }
    }
    fs::remove_all(p, ec);
  }
}

namespace {

// Where a complete checkpoint stands (checkpoint_position), or nullopt (no
// trainer.json, or an unreadable one: then `unreadable`, when given, gets
// "DIR/trainer.json: why").
std::optional<std::pair<long, long>> position_of(const fs::path& dir, std::vector<std::string>* unreadable = nullptr) {
  boost::system::error_code ec;
  const fs::path meta = dir / checkpoint_files::kMeta;
  if (!fs::exists(meta, ec)) return std::nullopt;
  try {
    // Every field checked, as resume will check it: a tampered one passes
    // the checkpoint over (aloud) instead of failing the resume after it.
    const CheckpointMeta m = parse_checkpoint_meta(read_regular_file(meta.string()), "checkpoint " + dir.string());
    return std::make_pair(m.epoch, m.open_epoch ? m.open_epoch->next_batch : 0L);
  } catch (const std::exception& e) {
    if (unreadable) unreadable->push_back(meta.string() + ": " + first_line(e.what()));
    return std::nullopt;  // not a complete checkpoint
  }
}

std::optional<long> epoch_of(const fs::path& dir) {
  const auto position = position_of(dir);
  return position ? std::optional<long>(position->first) : std::nullopt;
}

// The checkpoint callback's periodic names (epoch_*, step_*).
bool periodic(const std::string& name) { return name.rfind("epoch_", 0) == 0 || name.rfind("step_", 0) == 0; }

// What resume may continue from: the callback's periodic checkpoints and a
// session's own (save_checkpoint), not `final` (the model only) nor the
// callback's `best` (a model to keep, not where training stopped), nor
// what a crash left half-written (.tmp-*, .old-*).
bool resumable(const std::string& name) { return name != kFinalModel && name != "best" && name.rfind('.', 0) != 0; }

}  // namespace

std::string find_latest_checkpoint(const std::string& root, std::vector<std::string>* unreadable) {
  boost::system::error_code ec;
  std::string best;
  // Furthest into training first; among equals the callback's periodic
  // one, then the first name (directory order is arbitrary).
  std::tuple<long, long, bool> best_rank{-1, 0, false};
  std::string best_name;
  if (!fs::is_directory(root, ec)) return "";
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!resumable(name)) continue;
    const auto position = position_of(it->path(), unreadable);
    if (!position) continue;
    const std::tuple<long, long, bool> rank{position->first, position->second, periodic(name)};
    if (rank > best_rank || (rank == best_rank && name < best_name)) {
      best_rank = rank;
      best_name = name;
      best = it->path().string();
    }
  }
  return best;
}

std::string checkpoint_to_resume(const std::string& root, bool main_rank) {
  std::vector<std::string> unreadable;
  const std::string checkpoint = find_latest_checkpoint(root, &unreadable);
  std::sort(unreadable.begin(), unreadable.end());
  for (const std::string& file : unreadable)
    if (main_rank) warn("passed over the checkpoint of unreadable " + file + "; resuming from " + checkpoint);
  return checkpoint;
}

std::string find_model_checkpoint(const std::string& root) {
  const std::string latest = find_latest_checkpoint(root);
  const fs::path final_dir = fs::path(root) / kFinalModel;
  const auto final_epoch = epoch_of(final_dir);
  if (!final_epoch) return latest;
  if (!latest.empty() && epoch_of(latest).value_or(-1) > *final_epoch) return latest;
  return final_dir.string();
}

namespace {

bool is_checkpoint_file(const std::string& name) {
  for (const char* f : {checkpoint_files::kModel, checkpoint_files::kStateDict, checkpoint_files::kOptimizer,
                        checkpoint_files::kHistory, checkpoint_files::kRng, checkpoint_files::kCudaRng,
                        checkpoint_files::kParallel, checkpoint_files::kOpenEpochParts,
                        checkpoint_files::kOpenEpochBatches, checkpoint_files::kMeta})
    if (name == f) return true;
  return false;
}

fs::path without_trailing_slash(fs::path p) {
  while (!p.empty() && p.filename() == "." && p.has_parent_path()) p = p.parent_path();
  return p;
}

// Component-wise: "runs/a/b" is within "runs/a", "runs/ab" is not.
bool within(const fs::path& p, const fs::path& root) {
  auto q = p.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++q)
    if (q == p.end() || *q != *r) return false;
  return true;
}

// `p` made absolute, normalized and with links resolved as far as it exists.
fs::path real(const fs::path& p) {
  boost::system::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p), ec);
  if (ec) r = fs::absolute(p);
  return without_trailing_slash(r.lexically_normal());
}

// `rel` (inside the run) among the run's outputs, each directory above it
// as a container (skein removes those only when empty).
void record_inside(const RunInfo& run, const fs::path& rel) {
  fs::path prefix;
  for (auto it = rel.begin(); it != rel.end(); ++it) {
    prefix /= *it;
    run_files::record(run, prefix.generic_string() + (std::next(it) == rel.end() ? "" : "/"));
  }
}

}  // namespace

std::string why_not_replaceable(const std::string& dir) {
  boost::system::error_code ec;
  const fs::file_status status = fs::symlink_status(dir, ec);
  if (!fs::exists(status)) return "";
  if (!fs::is_directory(status)) return "exists and is not a checkpoint (not a directory)";
  bool has_meta = false, empty = true;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    empty = false;
    const std::string name = it->path().filename().string();
    if (!is_checkpoint_file(name) || !fs::is_regular_file(it->symlink_status()))
      return "exists and is not a checkpoint (it holds '" + name + "')";
    has_meta = has_meta || name == checkpoint_files::kMeta;
  }
  if (ec) return "exists and cannot be read: " + ec.message();
  if (!empty && !has_meta) return std::string("exists and is not a checkpoint (no ") + checkpoint_files::kMeta + ")";
  return "";
}

void check_checkpoint_files(const std::string& dir) {
  boost::system::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (is_checkpoint_file(it->path().filename().string())) names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());  // the same file named whatever the directory's order
  for (const std::string& name : names) {
    try {
      regular_file_size(dir + "/" + name);
    } catch (const std::runtime_error& e) {
      throw ConfigError("checkpoint " + dir + ": " + e.what());
    }
  }
}

std::string checkpoint_save_path(const RunInfo& run, const std::string& name, bool allow_outside) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("save_checkpoint: '" + name + "' " + why);
  };
  if (name.empty()) fail("is empty; name a checkpoint (it lands in the run's checkpoints/)");
  if (name.find_first_of("\n\r") != std::string::npos) fail("contains a line break; choose another name");
  const fs::path root = real(run.run_dir.empty() ? fs::path(".") : fs::path(run.run_dir));
  const fs::path checkpoints = root / run_files::kCheckpoints;
  // POSIX takes "//x" for "/x"; boost would take "//" for a network name.
  const std::size_t slashes = name.find_first_not_of('/');
  const fs::path given(slashes > 1 && slashes != std::string::npos ? name.substr(slashes - 1)
                       : slashes == std::string::npos         ? std::string("/")
                                                              : name);
  const fs::path p = real(given.is_absolute() ? given : checkpoints / given);
  if (within(root, p))
    fail("is the run directory " + root.string() + " or one above it; name a checkpoint (it lands in " +
         checkpoints.string() + "/)");
  if (within(p, root)) {
    const fs::path rel = p.lexically_relative(root);
    const std::string first = rel.begin()->string();
    const bool in_checkpoints = first == run_files::kCheckpoints && std::next(rel.begin()) != rel.end();
    const auto& own = run_files::reserved();
    if (!in_checkpoints && std::find(own.begin(), own.end(), first) != own.end())
      fail("is the run's own '" + first + "'; name a checkpoint (it lands in " + checkpoints.string() + "/)");
    if (run.is_main()) {
      if (const std::string why = why_not_replaceable(p.string()); !why.empty()) fail(why);
    }
    record_inside(run, rel);
    return p.string();
  }
  if (!allow_outside && !outside_run_dir_allowed())
    fail("is outside the run directory " + root.string() +
         "; name a checkpoint (it lands in its checkpoints/), or allow paths outside the run "
         "(allow_outside_run_dir, or SKEIN_ALLOW_OUTSIDE_RUN_DIR=1)");
  if (run.is_main()) {
    if (const std::string why = why_not_replaceable(p.string()); !why.empty()) fail(why);
  }
  run_files::record(run, p.string());
  return p.string();
}

std::string checkpoint_load_path(const RunInfo& run, const std::string& name) {
  const fs::path given(name);
  if (name.empty() || given.is_absolute()) return name;
  return (fs::path(run.run_dir.empty() ? "." : run.run_dir) / run_files::kCheckpoints / given).string();
}

}  // namespace skein::core
