#pragma once
// Watching one history key for improvement, as early stopping, checkpoints
// and reduce-on-plateau do: direction from the key's name unless given,
// a relative or absolute threshold, and NaN never an improvement.
#include <limits>
#include <optional>
#include <string>

#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"
#include "skein/kit/option_lists.hpp"  // SKEIN_MONITOR_OPTIONS
#include "skein/options.hpp"

namespace skein {

class SKEIN_EXPORT Monitor {
 public:
  // Reads options "monitor", "threshold", "threshold_mode" (rel|abs) and
  // "lower_is_better" (a bool; null: from the key's name) where the schema has them.
  // Errors name the options' owner (the plugin, where the config has it).
  explicit Monitor(const Options& options);
  // The same, watching `key` whatever the options say of "monitor" (kit 1.1).
  Monitor(const Options& options, std::string key);

  // The key the options name: nullopt when "monitor" is not set (null: the
  // plugin may pick one), "" when set empty (kit 1.1).
  static std::optional<std::string> key_in(const Options& options);

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
