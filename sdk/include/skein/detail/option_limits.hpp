#pragma once
// The limits an option declares (OptionSpec::choices, OptionSpec::range),
// read by constexpr code: SKEIN_PLUGIN checks them and the defaults against
// them at compile time (option_default.hpp), the host checks users' values
// against them at run time. One reading of the text for both.
#include <cstddef>

#include "skein/options.hpp"

namespace skein::option_limits {

constexpr std::size_t npos = static_cast<std::size_t>(-1);

constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr std::size_t skip_space(const char* s, std::size_t i) {
  while (s[i] == ' ') ++i;
  return i;
}

// The end of the JSON number at s[i], or npos; `value` becomes its value
// (closely enough to compare bounds: both sides are read alike), `integral`
// whether it has neither fraction nor exponent.
constexpr std::size_t read_number(const char* s, std::size_t i, double& value, bool& integral) {
  integral = true;
  const bool negative = s[i] == '-';
  if (negative) ++i;
  if (!is_digit(s[i]) || (s[i] == '0' && is_digit(s[i + 1]))) return npos;
  value = 0;
  for (; is_digit(s[i]); ++i) value = value * 10 + (s[i] - '0');
  if (s[i] == '.') {
    integral = false;
    if (!is_digit(s[++i])) return npos;
    for (double scale = 0.1; is_digit(s[i]); ++i, scale /= 10) value += (s[i] - '0') * scale;
  }
  if (s[i] == 'e' || s[i] == 'E') {
    integral = false;
    const bool down = s[++i] == '-';
    if (s[i] == '-' || s[i] == '+') ++i;
    if (!is_digit(s[i])) return npos;
    int exponent = 0;
    for (; is_digit(s[i]); ++i) exponent = exponent * 10 + (s[i] - '0');
    for (; exponent > 0; --exponent) value = down ? value / 10 : value * 10;
  }
  if (negative) value = -value;
  return i;
}
constexpr std::size_t read_number(const char* s, std::size_t i, double& value) {
  bool integral = true;
  return read_number(s, i, value, integral);
}

// One bound of a range: absent, or a value with its text (s[at, at + length)).
struct Bound {
  bool present = false;
  bool open = false;  // excluded: ( or )
  double value = 0;
  std::size_t at = 0, length = 0;
};

struct Range {
  bool valid = false;
  Bound low, high;
};

// The bound at s[i] unless s[i] is `end` (no bound): the index after it and
// its spaces, or npos.
constexpr std::size_t read_bound(const char* s, std::size_t i, char end, Bound& b) {
  if (s[i] == end) return i;
  b.at = i;
  i = read_number(s, i, b.value);
  if (i == npos) return npos;
  b.present = true;
  b.length = i - b.at;
  return skip_space(s, i);
}

// Reads "[lo, hi]", "(lo, hi)", "[lo, )", "(, hi]", ...: a missing bound
// needs the open bracket; at least one bound; low below high.
constexpr Range parse_range(const char* s) {
  Range r;
  std::size_t i = skip_space(s, 0);
  if (s[i] != '[' && s[i] != '(') return r;
  r.low.open = s[i] == '(';
  i = read_bound(s, skip_space(s, i + 1), ',', r.low);
  if (i == npos || s[i] != ',') return r;
  const char high_end = s[skip_space(s, i + 1)] == ']' ? ']' : ')';
  i = read_bound(s, skip_space(s, i + 1), high_end, r.high);
  if (i == npos || (s[i] != ']' && s[i] != ')')) return r;
  r.high.open = s[i] == ')';
  if (s[skip_space(s, i + 1)] != '\0') return r;
  if ((!r.low.present && !r.low.open) || (!r.high.present && !r.high.open)) return r;
  if (!r.low.present && !r.high.present) return r;
  if (r.low.present && r.high.present && !(r.low.value < r.high.value)) return r;
  r.valid = true;
  return r;
}

constexpr bool in_range(const Range& r, double v) {
  if (r.low.present && (r.low.open ? !(v > r.low.value) : !(v >= r.low.value))) return false;
  if (r.high.present && (r.high.open ? !(v < r.high.value) : !(v <= r.high.value))) return false;
  return true;
}

// Whether s[begin, begin + length) is one of `choices` ("a|b|c").
constexpr bool is_choice(const char* choices, const char* word, std::size_t length) {
  for (std::size_t at = 0;; ++at) {
    std::size_t k = 0;
    while (k < length && choices[at + k] == word[k]) ++k;
    if (k == length && (choices[at + k] == '|' || choices[at + k] == '\0')) return true;
    while (choices[at] != '|' && choices[at] != '\0') ++at;
    if (choices[at] == '\0') return false;
  }
}

// Choices are one or more words, '|' between them, none empty, no spaces.
constexpr bool valid_choices(const char* choices) {
  if (!choices || choices[0] == '\0' || choices[0] == '|') return false;
  for (std::size_t i = 0; choices[i]; ++i)
    if (choices[i] == ' ' || (choices[i] == '|' && (choices[i + 1] == '|' || choices[i + 1] == '\0'))) return false;
  return true;
}

// Whether the option's type takes a range (each value of a list).
constexpr bool ranged_type(OptionType type) {
  return type == OptionType::integer || type == OptionType::number || type == OptionType::int_list ||
         type == OptionType::number_list;
}

}  // namespace skein::option_limits
