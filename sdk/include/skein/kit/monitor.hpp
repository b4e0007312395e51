#pragma once
// Watching one history key for improvement, as early stopping, checkpoints
// and reduce-on-plateau do: direction from the key's name unless given,
// a relative or absolute threshold, and NaN never an improvement.
#include <limits>
#include <string>

#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"
#include "skein/options.hpp"

namespace skein {

class SKEIN_EXPORT Monitor {
 public:
  // Reads options "monitor", "threshold", "threshold_mode" (rel|abs) and
  // "lower_is_better" (a bool; null: from the key's name) where the schema has them.
  // Errors name the options' owner (the plugin, where the config has it).
  explicit Monitor(const Options& options);

  const std::string& key() const { return key_; }
  bool lower_is_better() const { return lower_; }
  // Whether `value` beats the best so far by the threshold; records it if so.
  bool update(double value);
  // The monitored value in `epoch` (a history epoch object). A key the
  // epoch does not hold is an OptionError naming the owner, the key and the keys
  // it does hold: every callback that monitors (early_stopping, checkpoint,
  // lr_scheduler) fails the same way, at the first epoch's end, rather than
  // silently never deciding.
  double value_in(const nlohmann::json& epoch) const;

  double best() const { return best_; }
  nlohmann::json state() const;
  void load_state(const nlohmann::json& state);

 private:
  std::string owner_;
  std::string key_;
  bool lower_ = true;
  double threshold_ = 0;
  bool relative_ = true;
  double best_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace skein

// The options Monitor reads, declared once for every plugin that watches a
// history key: entries of a SKEIN_PLUGIN option list. MONITOR_DEFAULT and
// THRESHOLD_DEFAULT are JSON texts; MONITOR_DOC says what the key decides;
// WHEN prefixes every doc line (e.g. "plateau: ", or "" for none).
#define SKEIN_MONITOR_OPTIONS(MONITOR_DEFAULT, MONITOR_DOC, THRESHOLD_DEFAULT, WHEN)                 \
  SKEIN_OPTION("monitor", string, MONITOR_DEFAULT, WHEN MONITOR_DOC),                                \
      SKEIN_OPTION("threshold", number, THRESHOLD_DEFAULT, WHEN "smallest change that counts as an improvement"), \
      SKEIN_OPTION("threshold_mode", string, "\"rel\"",                                             \
                   WHEN "rel: threshold is a share of the best value; abs: an amount"),              \
      SKEIN_OPTION("lower_is_better", boolean, "null",                                                \
                   WHEN "direction (null: from the key's name: *_loss and the like lower, others higher)")
