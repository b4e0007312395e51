#include "skein/training/engine/callback_list.hpp"

#include <stdexcept>

#include "skein/training/engine/crash_report.hpp"
#include "skein/errors.hpp"

namespace skein::core {

void CallbackList::add(std::string plugin, std::shared_ptr<Callback> callback) {
  names_.push_back(std::move(plugin));
  callbacks_.push_back(std::move(callback));
}

void CallbackList::each(const char* hook, const std::function<void(Callback&)>& call) const {
  for (std::size_t i = 0; i < callbacks_.size(); ++i) {
    PluginScope scope(names_[i].c_str(), hook);
    try {
      call(*callbacks_[i]);
    } catch (const std::exception&) {
      throw;  // callbacks' own messages say what went wrong; tests and users rely on them
    } catch (...) {
      throw std::runtime_error("callback '" + names_[i] + "' threw a non-standard exception in " + hook);
    }
  }
}

void CallbackList::notify_failure(TrainContext& context, const std::string& error) const {
  const std::string line = first_line(error);
  for (std::size_t i = 0; i < callbacks_.size(); ++i) {
    PluginScope scope(names_[i].c_str(), "on_exception");
    try {
      callbacks_[i]->on_exception(context, line);
    } catch (const std::exception& e) {
      warn("callback '" + names_[i] + "' failed in on_exception: " + first_line(e.what()));
    } catch (...) {
      warn("callback '" + names_[i] + "' failed in on_exception");
    }
  }
}

std::vector<CheckpointMeta::CallbackState> CallbackList::states() const {
  std::vector<CheckpointMeta::CallbackState> states;
  for (std::size_t i = 0; i < callbacks_.size(); ++i) states.push_back({names_[i], callbacks_[i]->state()});
  return states;
}

void CallbackList::restore(const std::vector<CheckpointMeta::CallbackState>& states, const std::string& where) const {
  for (std::size_t i = 0; i < callbacks_.size() && i < states.size(); ++i) {
    if (states[i].plugin != names_[i] || states[i].state.is_null()) continue;
    try {
      callbacks_[i]->load_state(states[i].state);
    } catch (const ConfigError&) {
      throw;
    } catch (const std::exception& e) {
      throw ConfigError(where + ": the state of callback '" + names_[i] + "' does not fit: " + first_line(e.what()));
    }
  }
}

}  // namespace skein::core
