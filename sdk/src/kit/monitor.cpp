#include "skein/kit/monitor.hpp"

#include <cmath>

#include "skein/errors.hpp"
#include "skein/history.hpp"

namespace skein {

namespace {
constexpr const char* kMonitorOption = "monitor";  // SKEIN_MONITOR_OPTIONS
}  // namespace

Monitor::Monitor(const Options& options) : Monitor(options, options.get_string(kMonitorOption)) {}

std::optional<std::string> Monitor::key_in(const Options& options) {
  if (!options.has(kMonitorOption)) return std::nullopt;
  return options.get_string(kMonitorOption);
}

Monitor::Monitor(const Options& options, std::string key) : owner_(options.owner()), key_(std::move(key)) {
  if (key_.empty()) options.fail(kMonitorOption, "must name a history key");
  lower_ = skein::lower_is_better(key_);
  if (options.has("lower_is_better")) lower_ = options.get_bool("lower_is_better");
  if (options.has("threshold")) {
    threshold_ = options.get_number("threshold");
    if (!(threshold_ >= 0)) options.fail("threshold", "must be >= 0");
  }
  if (options.has("threshold_mode")) {
    const std::string mode = options.get_string("threshold_mode");
    if (mode != "rel" && mode != "abs") options.fail("threshold_mode", "must be rel or abs");
    relative_ = mode == "rel";
  }
}

bool Monitor::update(double value) {
  if (std::isnan(value)) return false;
  bool better;
  if (std::isnan(best_)) {
    better = true;
  } else {
    const double margin = relative_ ? std::abs(best_) * threshold_ : threshold_;
    better = lower_ ? value < best_ - margin : value > best_ + margin;
  }
  if (better) best_ = value;
  return better;
}

double Monitor::value_in(const nlohmann::json& epoch) const {
  auto it = epoch.find(key_);
  if (it != epoch.end() && it->is_number()) return it->get<double>();
  std::string held;
  for (auto k = epoch.begin(); k != epoch.end(); ++k) {
    if (!k.value().is_number() || k.key() == history_key::kEpoch || k.key() == history_key::kDuration ||
        history_key::is_best_mark(k.key()))
      continue;
    held += (held.empty() ? "" : ", ") + k.key();
  }
  throw OptionError(kMonitorOption, owner_ + ": option '" + kMonitorOption + "' names '" + key_ + "', which the history does not hold" +
                    (it != epoch.end() ? " as a number" : "") + " (it holds: " + (held.empty() ? "nothing" : held) +
                    ")");
}

nlohmann::json Monitor::state() const {
  return {{"best", encode_nonfinite(best_)}};
}

void Monitor::load_state(const nlohmann::json& state) {
  best_ = decode_nonfinite(state.at("best")).get<double>();
}

}  // namespace skein
