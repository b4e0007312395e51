#pragma once
// Compile-time checks of option defaults: SKEIN_PLUGIN refuses to compile a
// plugin whose SKEIN_OPTION default is not JSON of the option's declared type
// ("null", meaning "not set", fits every type). The default is pasted into the
// plugin's manifest as is, so a bad one would otherwise surface only when a
// user runs the plugin. A small recursive-descent JSON validator, constexpr.
// The same goes for an option's limits (API 3.1): well formed, and kept by
// the default (option_limits.hpp reads them).
#include <cstddef>

#include "skein/detail/option_limits.hpp"
#include "skein/options.hpp"

namespace skein::option_default {

// What a JSON value is, as far as option types care.
enum class Kind { invalid, null, boolean, integer, number, string, array, object };

using option_limits::is_digit;
constexpr bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
constexpr bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

constexpr std::size_t skip_space(const char* s, std::size_t i) {
  while (is_space(s[i])) ++i;
  return i;
}

// Each parse_* takes the index of the value's first character and returns
// the index just past it, or npos when the text is not valid JSON there.
constexpr std::size_t npos = static_cast<std::size_t>(-1);

constexpr std::size_t parse_literal(const char* s, std::size_t i, const char* word) {
  for (; *word; ++word, ++i)
    if (s[i] != *word) return npos;
  return i;
}

constexpr std::size_t parse_string(const char* s, std::size_t i) {
  if (s[i] != '"') return npos;
  for (++i; s[i] != '"'; ++i) {
    if (s[i] == '\0' || static_cast<unsigned char>(s[i]) < 0x20) return npos;
    if (s[i] != '\\') continue;
    ++i;
    if (s[i] == 'u') {
      for (int k = 1; k <= 4; ++k)
        if (!is_hex(s[i + k])) return npos;
      i += 4;
    } else if (s[i] != '"' && s[i] != '\\' && s[i] != '/' && s[i] != 'b' && s[i] != 'f' && s[i] != 'n' &&
               s[i] != 'r' && s[i] != 't') {
      return npos;
    }
  }
  return i + 1;
}

// Sets `integral` to whether the number has neither fraction nor exponent.
constexpr std::size_t parse_number(const char* s, std::size_t i, bool& integral) {
  double value = 0;
  return option_limits::read_number(s, i, value, integral);
}

constexpr std::size_t parse_value(const char* s, std::size_t i, Kind& kind, Kind& element);

// An array or object; `element` becomes the common kind of an array's
// elements (integer and number mixed count as number; anything else mixed
// is invalid as an element kind), Kind::null for an empty array.
constexpr std::size_t parse_container(const char* s, std::size_t i, char close, Kind& element) {
  element = Kind::null;
  i = skip_space(s, i + 1);
  if (s[i] == close) return i + 1;
  while (true) {
    if (close == '}') {
      i = parse_string(s, i);
      if (i == npos) return npos;
      i = skip_space(s, i);
      if (s[i] != ':') return npos;
      i = skip_space(s, i + 1);
    }
    Kind kind = Kind::invalid, inner = Kind::invalid;
    i = parse_value(s, i, kind, inner);
    if (i == npos) return npos;
    if (element == Kind::null) {
      element = kind;
    } else if (element != kind) {
      const bool numeric = (element == Kind::integer || element == Kind::number) &&
                           (kind == Kind::integer || kind == Kind::number);
      element = numeric ? Kind::number : Kind::invalid;
    }
    i = skip_space(s, i);
    if (s[i] == close) return i + 1;
    if (s[i] != ',') return npos;
    i = skip_space(s, i + 1);
  }
}

constexpr std::size_t parse_value(const char* s, std::size_t i, Kind& kind, Kind& element) {
  element = Kind::invalid;
  switch (s[i]) {
    case 'n': kind = Kind::null; return parse_literal(s, i, "null");
    case 't': kind = Kind::boolean; return parse_literal(s, i, "true");
    case 'f': kind = Kind::boolean; return parse_literal(s, i, "false");
    case '"': kind = Kind::string; return parse_string(s, i);
    case '[': kind = Kind::array; return parse_container(s, i, ']', element);
    case '{': kind = Kind::object; return parse_container(s, i, '}', element);
    default: {
      bool integral = true;
      const std::size_t end = parse_number(s, i, integral);
      kind = integral ? Kind::integer : Kind::number;
      return end;
    }
  }
}

// Whether `json` is one JSON value (surrounding spaces allowed) that an
// option of `type` accepts.
constexpr bool fits(OptionType type, const char* json) {
  Kind kind = Kind::invalid, element = Kind::invalid;
  std::size_t end = parse_value(json, skip_space(json, 0), kind, element);
  if (end == npos || json[skip_space(json, end)] != '\0') return false;
  if (kind == Kind::null) return true;
  const bool empty = element == Kind::null;
  switch (type) {
    case OptionType::boolean: return kind == Kind::boolean;
    case OptionType::integer: return kind == Kind::integer;
    case OptionType::number: return kind == Kind::integer || kind == Kind::number;
    case OptionType::string: return kind == Kind::string;
    case OptionType::int_list: return kind == Kind::array && (empty || element == Kind::integer);
    case OptionType::number_list:
      return kind == Kind::array && (empty || element == Kind::integer || element == Kind::number);
    case OptionType::string_list: return kind == Kind::array && (empty || element == Kind::string);
    case OptionType::object: return kind == Kind::object;
    case OptionType::list: return kind == Kind::array;
    case OptionType::choice: return kind == Kind::string;
  }
  return false;
}

// Whether the number, or each number of the list, `json` holds (it fits its
// type) is in `range`.
constexpr bool numbers_in_range(const char* json, const option_limits::Range& range) {
  std::size_t i = skip_space(json, 0);
  if (json[i] == 'n') return true;  // null: not set
  const bool list = json[i] == '[';
  if (list) i = skip_space(json, i + 1);
  while (json[i] != ']' && json[i] != '\0') {
    double value = 0;
    i = option_limits::read_number(json, i, value);
    if (i == npos || !option_limits::in_range(range, value)) return false;
    i = skip_space(json, i);
    if (json[i] == ',') i = skip_space(json, i + 1);
    if (!list) break;
  }
  return true;
}

// Whether the string `json` holds (it fits its type) is one of `choices`.
constexpr bool is_one_of(const char* json, const char* choices) {
  std::size_t i = skip_space(json, 0);
  if (json[i] == 'n') return true;  // null: not set
  std::size_t end = i + 1;
  while (json[end] != '"') ++end;
  return option_limits::is_choice(choices, json + i + 1, end - i - 1);
}

// Whether the option's limits are well formed for its type (a choice has
// choices, and only a choice; a range goes with int, number and their lists)
// and its default keeps to them.
constexpr bool limits_fit(const OptionSpec& o) {
  const bool choice = o.type == OptionType::choice;
  if (choice != (o.choices != nullptr) || (choice && !option_limits::valid_choices(o.choices))) return false;
  if (o.range && !(option_limits::ranged_type(o.type) && option_limits::parse_range(o.range).valid)) return false;
  if (!o.default_json) return true;
  if (choice) return is_one_of(o.default_json, o.choices);
  return !o.range || numbers_in_range(o.default_json, option_limits::parse_range(o.range));
}

// The index of the first option whose default does not fit its type, or
// whose limits are malformed or refuse its default; -1 if none. `options`
// ends with a spec whose name is nullptr (as SKEIN_PLUGIN writes).
constexpr int first_bad_default(const OptionSpec* options) {
  for (int i = 0; options[i].name; ++i)
    if ((options[i].default_json && !fits(options[i].type, options[i].default_json)) || !limits_fit(options[i]))
      return i;
  return -1;
}

// Instantiated by SKEIN_PLUGIN with first_bad_default(...): the compiler's
// message names the offending option's position, counting from 0.
template <int BadOptionIndex>
struct check_defaults {
  static_assert(BadOptionIndex < 0,
                "SKEIN_OPTION: the option at position BadOptionIndex (from 0) has a default that is not "
                "JSON of its declared type (a string default needs quotes: \"\\\"text\\\"\"), or malformed "
                "choices or range (SKEIN_CHOICES, SKEIN_RANGE), or a default outside them");
  static constexpr bool ok = true;
};

}  // namespace skein::option_default
