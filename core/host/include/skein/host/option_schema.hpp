#pragma once
#include <string>
#include <vector>

#include "skein/detail/json.hpp"

#include "skein/options.hpp"

namespace skein::core {

// Checks `given` (a JSON object) against `schema`: unknown keys (with a
// suggestion), wrong types and missing required options are ConfigErrors
// naming `where` (e.g. "model" or "callbacks[1]") and the key, located at
// `path` (the object's dotted path, "" for the top) + the key
// (ConfigPathError). Returns the values with defaults filled in. `ignore`
// lists keys that are not options (e.g. "plugin").
SKEIN_EXPORT nlohmann::json validate_options(const std::vector<OptionSpec>& schema, const nlohmann::json& given,
                                             const std::string& where, const std::string& path,
                                             const std::vector<std::string>& ignore = {});

// True when `value` has the JSON shape of `type`.
SKEIN_EXPORT bool matches_type(OptionType type, const nlohmann::json& value);

}  // namespace skein::core
