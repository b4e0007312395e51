#include "skein/training/checkpoint_dir.hpp"

#include <fstream>
#include <optional>
#include <utility>

#include <boost/filesystem.hpp>

#include "skein/training/checkpoint_meta.hpp"

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
// trainer.json, or an unreadable one).
std::optional<std::pair<long, long>> position_of(const fs::path& dir) {
  boost::system::error_code ec;
  if (!fs::exists(dir / checkpoint_files::kMeta, ec)) return std::nullopt;
  try {
    return checkpoint_position(nlohmann::json::parse(std::ifstream((dir / checkpoint_files::kMeta).string())));
  } catch (const std::exception&) {
    return std::nullopt;  // not a complete checkpoint
  }
}

std::optional<long> epoch_of(const fs::path& dir) {
  const auto position = position_of(dir);
  return position ? std::optional<long>(position->first) : std::nullopt;
}

// The periodic checkpoints resume picks from (checkpoint callback names).
bool periodic(const std::string& name) { return name.rfind("epoch_", 0) == 0 || name.rfind("step_", 0) == 0; }

}  // namespace

std::string find_latest_checkpoint(const std::string& root) {
  boost::system::error_code ec;
  std::string best;
  std::pair<long, long> best_position{-1, 0};
  if (!fs::is_directory(root, ec)) return "";
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!periodic(it->path().filename().string())) continue;
    const auto position = position_of(it->path());
    if (position && *position > best_position) {
      best_position = *position;
      best = it->path().string();
    }
  }
  return best;
}

std::string find_model_checkpoint(const std::string& root) {
  const std::string latest = find_latest_checkpoint(root);
  const fs::path final_dir = fs::path(root) / kFinalModel;
  const auto final_epoch = epoch_of(final_dir);
  if (!final_epoch) return latest;
  if (!latest.empty() && epoch_of(latest).value_or(-1) > *final_epoch) return latest;
  return final_dir.string();
}

}  // namespace skein::core
