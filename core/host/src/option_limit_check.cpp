#include "skein/host/option_limit_check.hpp"

#include <sstream>

#include "skein/host/config_error.hpp"
#include "skein/detail/option_limits.hpp"

namespace skein::core {

namespace {

std::string text_of(const char* range, const option_limits::Bound& b) { return std::string(range + b.at, b.length); }

bool is_one_of(const char* choices, const std::string& value) {
  return option_limits::is_choice(choices, value.c_str(), value.size());
}

}  // namespace

std::string range_words(const char* range) {
  const option_limits::Range r = option_limits::parse_range(range);
  if (r.low.present && r.high.present) return std::string("in ") + range;
  if (r.low.present) {
    if (r.low.open && r.low.value == 0) return "positive";
    return (r.low.open ? "more than " : "at least ") + text_of(range, r.low);
  }
  return (r.high.open ? "less than " : "at most ") + text_of(range, r.high);
}

std::vector<std::string> choices_list(const char* choices) {
  std::vector<std::string> words;
  std::istringstream in(choices);
  for (std::string w; std::getline(in, w, '|');) words.push_back(w);
  return words;
}

std::string choices_words(const char* choices) {
  const std::vector<std::string> words = choices_list(choices);
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i)
    out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}

void check_option_limits(const std::vector<OptionSpec>& schema, const nlohmann::json& values,
                         const std::string& owner, const std::string& path) {
  for (const auto& spec : schema) {
    auto it = values.find(spec.name);
    if (it == values.end() || it->is_null() || !(spec.choices || spec.range)) continue;
    auto fail = [&](const std::string& why) {
      throw ConfigPathError(path.empty() ? spec.name : path + "." + spec.name,
                            (owner.empty() ? std::string(spec.name) + ":" : owner + ": option '" + spec.name + "'") +
                                " " + why);
    };
    if (spec.choices && !is_one_of(spec.choices, it->get<std::string>()))
      fail("must be " + choices_words(spec.choices) + ", got '" + it->get<std::string>() + "'");
    if (!spec.range) continue;
    const option_limits::Range range = option_limits::parse_range(spec.range);
    if (!it->is_array()) {
      if (!option_limits::in_range(range, it->get<double>()))
        fail("must be " + range_words(spec.range) + ", got " + it->dump());
      continue;
    }
    for (const auto& v : *it)
      if (!option_limits::in_range(range, v.get<double>()))
        fail("has a value that is not " + range_words(spec.range) + ": " + v.dump() + " (in " + it->dump() + ")");
  }
}

}  // namespace skein::core
