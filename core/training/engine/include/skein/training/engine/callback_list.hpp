#pragma once
// The run's callbacks in config order, each with its plugin name: every hook
// runs through here, so that a crash report names the plugin that ran and a
// non-standard exception becomes one naming it.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "skein/callback.hpp"
#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"

namespace skein::core {

class SKEIN_EXPORT CallbackList {
 public:
  void add(std::string plugin, std::shared_ptr<Callback> callback);
  std::size_t size() const { return callbacks_.size(); }

  // Runs `hook` (its name, for crash reports and errors) of every callback in order.
  void each(const char* hook, const std::function<void(Callback&)>& call) const;
  // The same for the callbacks that also implement `Role` (EpochReporter, ...).
  template <class Role>
  void each_as(const char* hook, const std::function<void(Role&)>& call) const {
    each(hook, [&](Callback& cb) {
      if (auto* role = dynamic_cast<Role*>(&cb)) call(*role);
    });
  }
  // Every callback's on_exception with the error's first line; what they
  // throw becomes a warning (the original failure matters more).
  void notify_failure(TrainContext& context, const std::string& error) const;

  // Every callback's state, in order, as checkpoints hold them.
  std::vector<CheckpointMeta::CallbackState> states() const;
  // Loads the states matched by position and plugin name; one that does not
  // fit is a ConfigError naming `where` and the callback.
  void restore(const std::vector<CheckpointMeta::CallbackState>& states, const std::string& where) const;

 private:
  std::vector<std::string> names_;
  std::vector<std::shared_ptr<Callback>> callbacks_;
};

}  // namespace skein::core
