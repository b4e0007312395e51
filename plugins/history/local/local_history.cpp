// History backend "local": each process keeps its own history in memory.
#include "skein/history_backend.hpp"
#include "skein/plugin.hpp"

namespace {

class LocalHistory final : public skein::HistoryBackend {
 public:
  explicit LocalHistory(const skein::PluginArgs&) {}
  void sync_epoch(skein::History& history) override { history.commit_batches(); }
};

}  // namespace

SKEIN_PLUGIN(LocalHistory, history, "local", "1.0.0",
             "In-memory history of this process only (no sync across ranks)")
