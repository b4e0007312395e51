#pragma once
// The limits options declare (OptionSpec::choices and ::range, API 3.1),
// checked by the host on validated values before a plugin is made, and said
// in words for messages and listings.
#include <string>
#include <vector>

#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"
#include "skein/options.hpp"

namespace skein::core {

// Checks `values` (validated against `schema`, defaults filled in) against
// the options' choices and ranges. The first value outside them is a
// ConfigPathError at `path` + the key ("" for the top), whose message names
// `owner` (e.g. "callbacks[1] (plugin 'grad_clip')") as Options::fail does:
// "<owner>: option 'mode' must be norm or value, got 'clip'"; with no owner
// (the config's top-level keys) "seed: must be at least 0, got -3". null
// ("not set") is never checked.
SKEIN_EXPORT void check_option_limits(const std::vector<OptionSpec>& schema, const nlohmann::json& values,
                                      const std::string& owner, const std::string& path);

// A range in words: "positive", "at least 1", "less than 1", "in [0, 1)".
SKEIN_EXPORT std::string range_words(const char* range);
// Choices in words: "a, b or c".
SKEIN_EXPORT std::string choices_words(const char* choices);
// Choices one by one: {"a", "b", "c"}.
SKEIN_EXPORT std::vector<std::string> choices_list(const char* choices);

}  // namespace skein::core
