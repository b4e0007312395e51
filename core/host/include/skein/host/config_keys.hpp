#pragma once
// The config's top-level keys: their schema (types, defaults, docs), the one
// table of the config's defaults.
#include <string>
#include <vector>

#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"
#include "skein/options.hpp"

namespace skein::core {

// Top-level keys (for docs and errors).
SKEIN_EXPORT const std::vector<OptionSpec>& top_level_schema();
// The default of a top-level key, parsed from top_level_schema() (the one
// table of the config's defaults).
SKEIN_EXPORT nlohmann::json schema_default(const std::string& key);

}  // namespace skein::core
