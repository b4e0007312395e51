#pragma once
// A run's config over its life. config.json holds the config the run started
// with and is never rewritten; config_history.jsonl gets one line per start
// and per resume (the config in force from then on, and the command line
// that changed it). A resume may change only what cannot change its results
// so far: the other keys are refused, never silently ignored.
#include <ostream>
#include <string>
#include <vector>

#include "skein/training/config/config.hpp"
#include "skein/detail/json.hpp"

namespace skein::core {

// The config in force at the end of the run in `dir`: the last line of its
// config history, else its config.json.
SKEIN_EXPORT nlohmann::json latest_run_config(const std::string& dir);

// (The top-level keys a resume may change: keys_changeable_on_resume(),
// skein/host/config_keys.hpp, from the keys' table.)

// Throws ConfigError naming the first value the command line changed that a
// resume cannot change.
SKEIN_EXPORT void check_resume_changes(const nlohmann::json& before, const nlohmann::json& after);

// Makes the registry use the plugin files the run recorded in
// plugin_versions; warns (skein::warn) when a file is gone or now has another version.
SKEIN_EXPORT void use_recorded_plugins(const nlohmann::json& config, PluginRegistry& registry);
// After resolving: warns about plugins whose version differs from the record.
SKEIN_EXPORT void warn_changed_versions(const nlohmann::json& before, const nlohmann::json& after);

// Appends the config now in force to <dir>/config_history.jsonl, with the
// launcher that started this start or resume (launcher_env.hpp's label).
SKEIN_EXPORT void append_config_history(const std::string& dir, const std::string& event,
                                        const ConfigSources& command_line, const nlohmann::json& config,
                                        const std::string& launched_by = "");

}  // namespace skein::core
