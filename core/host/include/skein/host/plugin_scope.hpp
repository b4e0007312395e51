#pragma once
// Which plugin's code runs now, for the line the fatal-signal handler writes
// (skein/training/engine/crash_report.hpp): the registry marks a plugin while its
// library loads (static initializers) and while it is created, the trainer
// while one of its hooks runs. Two pointer stores, so cheap enough for every
// batch. Torch-free: the registry lives in libskein_host.
#include "skein/detail/export.hpp"

namespace skein::core {

// Marks `plugin` (its name, which must outlive the scope) as running `hook`
// on the training thread, until the scope ends.
class SKEIN_EXPORT PluginScope {
 public:
  PluginScope(const char* plugin, const char* hook);
  ~PluginScope();
  PluginScope(const PluginScope&) = delete;
  PluginScope& operator=(const PluginScope&) = delete;

 private:
  const char* saved_plugin_;
  const char* saved_hook_;
};

// The plugin and hook marked now (nullptr when none); async-signal-safe.
SKEIN_EXPORT const char* running_plugin();
SKEIN_EXPORT const char* running_hook();

}  // namespace skein::core
