#include "skein/core/checkpoint_dir.hpp"

#include <fstream>

#include <boost/filesystem.hpp>

#include "skein/core/checkpoint_meta.hpp"

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

std::string find_latest_checkpoint(const std::string& root) {
  boost::system::error_code ec;
  std::string best;
  long best_epoch = -1;
  if (!fs::is_directory(root, ec)) return "";
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("epoch_", 0) != 0 || !fs::exists(it->path() / "trainer.json")) continue;
    try {
      auto meta = nlohmann::json::parse(std::ifstream((it->path() / "trainer.json").string()));
      const auto epoch = checkpoint_epoch(meta);
      if (epoch && *epoch > best_epoch) {
        best_epoch = *epoch;
        best = it->path().string();
      }
    } catch (const std::exception&) {
      // An unreadable trainer.json: not a complete checkpoint.
    }
  }
  return best;
}

}  // namespace skein::core
