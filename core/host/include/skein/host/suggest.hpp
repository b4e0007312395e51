#pragma once
#include <string>
#include <vector>

#include "skein/detail/export.hpp"

namespace skein::core {

// " (did you mean 'x'?)" for the closest candidate by edit distance, or "".
SKEIN_EXPORT std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace skein::core
