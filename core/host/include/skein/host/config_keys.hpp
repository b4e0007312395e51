#pragma once
// The config's top-level keys: their schema (types, defaults, limits, docs)
// and whether a resume may change them, the one table of them. Their names
// are skein::run_key's (skein/run.hpp); everything about a key that core
// checks or writes is derived from this table.
#include <string>
#include <vector>

#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"
#include "skein/options.hpp"
#include "skein/run.hpp"

namespace skein::core {

// One top-level key: its spec (name, type, default, doc, limits) and whether
// `skein train --resume` may change it (what cannot alter the results so far).
struct TopLevelKey {
  OptionSpec spec;
  bool resume_may_change = false;
};

// Every top-level key, in the order docs and --help list them.
SKEIN_EXPORT const std::vector<TopLevelKey>& top_level_keys();
// Their specs (for validation, docs and errors).
SKEIN_EXPORT const std::vector<OptionSpec>& top_level_schema();
// The default of a top-level key, parsed from top_level_schema() (the one
// table of the config's defaults).
SKEIN_EXPORT nlohmann::json schema_default(const std::string& key);
// The keys a resume may change, in the table's order.
SKEIN_EXPORT std::vector<std::string> keys_changeable_on_resume();

// The run settings of `config` (a config as plugins see it, keys absent or
// null taking the schema's defaults); no limits are checked here.
SKEIN_EXPORT RunSettings run_settings_of(const nlohmann::json& config);
// Writes `settings` into `config` under their keys.
SKEIN_EXPORT void put_run_settings(nlohmann::json& config, const RunSettings& settings);

}  // namespace skein::core
