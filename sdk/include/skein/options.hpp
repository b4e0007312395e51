#pragma once
// Plugin options: the schema a plugin declares, and the validated values it reads.
#include <cstdint>
#include <string>
#include <vector>

#include "skein/detail/json.hpp"

#include "skein/detail/export.hpp"

namespace skein {

enum class OptionType : std::uint32_t {
  boolean = 1,
  integer,
  number,
  string,
  int_list,
  number_list,
  string_list,
  object,
  list,    // a list of anything (e.g. of objects)
  choice,  // API 3.1: a string, one of the option's declared choices
};

// "bool", "int", "number", "string", "int list", ... (constexpr: plugin
// manifests are built at compile time).
constexpr const char* option_type_name(OptionType t) {
  switch (t) {
    case OptionType::boolean: return "bool";
    case OptionType::integer: return "int";
    case OptionType::number: return "number";
    case OptionType::string: return "string";
    case OptionType::int_list: return "int list";
    case OptionType::number_list: return "number list";
    case OptionType::string_list: return "string list";
    case OptionType::object: return "object";
    case OptionType::list: return "list";
    case OptionType::choice: return "choice";
  }
  return "unknown";
}
inline const char* to_string(OptionType t) { return option_type_name(t); }

// One option of a plugin's schema: plain data, readable before the plugin runs.
// `default_json` is the default as JSON text; nullptr marks a required option.
// The host checks a value against `choices` and `range` before the plugin is
// made, and the error names the plugin and the option (SKEIN_CHOICES,
// SKEIN_RANGE in skein/plugin.hpp declare them).
struct OptionSpec {
  const char* name;
  OptionType type;
  const char* default_json;
  const char* doc;
  // API 3.1 (new fields go at the end; the host reads options from a plugin's
  // manifest, never from this array):
  const char* choices = nullptr;  // a choice's allowed values, '|' between them: "min|max"
  // The values an int or number option (or each value of such a list) may take,
  // as an interval: "[0, 1]", "(0, 1)", "[1, )" (no upper bound), "(0, )" (positive).
  const char* range = nullptr;
};

// What SKEIN_CHOICES and SKEIN_RANGE write: the limits an option declaration
// may end with, applied by option_spec().
struct OptionChoices {
  const char* text;
};
struct OptionRange {
  const char* text;
};
constexpr void apply_limit(OptionSpec& spec, OptionChoices choices) { spec.choices = choices.text; }
constexpr void apply_limit(OptionSpec& spec, OptionRange range) { spec.range = range.text; }

// One option's spec, with its limits (SKEIN_OPTION writes it).
template <class... Limits>
constexpr OptionSpec option_spec(const char* name, OptionType type, const char* default_json, const char* doc,
                                 Limits... limits) {
  OptionSpec spec{name, type, default_json, doc};
  (apply_limit(spec, limits), ...);
  return spec;
}

// Validated option values of one plugin instance (defaults filled in).
// Getters throw skein::ConfigError naming the owner and the key.
class SKEIN_EXPORT Options {
 public:
  Options() = default;
  Options(std::string owner, nlohmann::json values);

  const std::string& owner() const { return owner_; }
  const nlohmann::json& json() const { return values_; }
  bool has(const std::string& key) const;

  bool get_bool(const std::string& key) const;
  std::int64_t get_int(const std::string& key) const;
  double get_number(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<std::int64_t> get_int_list(const std::string& key) const;
  std::vector<double> get_number_list(const std::string& key) const;
  std::vector<std::string> get_string_list(const std::string& key) const;

  // Error for a value that has the right type but is out of range.
  [[noreturn]] void fail(const std::string& key, const std::string& why) const;

 private:
  const nlohmann::json& at(const std::string& key) const;
  std::string owner_;
  nlohmann::json values_ = nlohmann::json::object();
};

// The C++ type of an option's value and how it is read (for
// SKEIN_OPTIONS_STRUCT, skein/plugin.hpp): bool, std::int64_t, double,
// std::string, vectors of these; JSON for an object or a list of anything.
template <OptionType T> struct OptionValue;
template <> struct OptionValue<OptionType::boolean> {
  using type = bool;
  static type read(const Options& o, const std::string& k) { return o.get_bool(k); }
};
template <> struct OptionValue<OptionType::integer> {
  using type = std::int64_t;
  static type read(const Options& o, const std::string& k) { return o.get_int(k); }
};
template <> struct OptionValue<OptionType::number> {
  using type = double;
  static type read(const Options& o, const std::string& k) { return o.get_number(k); }
};
template <> struct OptionValue<OptionType::string> {
  using type = std::string;
  static type read(const Options& o, const std::string& k) { return o.get_string(k); }
};
template <> struct OptionValue<OptionType::int_list> {
  using type = std::vector<std::int64_t>;
  static type read(const Options& o, const std::string& k) { return o.get_int_list(k); }
};
template <> struct OptionValue<OptionType::number_list> {
  using type = std::vector<double>;
  static type read(const Options& o, const std::string& k) { return o.get_number_list(k); }
};
template <> struct OptionValue<OptionType::string_list> {
  using type = std::vector<std::string>;
  static type read(const Options& o, const std::string& k) { return o.get_string_list(k); }
};
template <> struct OptionValue<OptionType::object> {
  using type = nlohmann::json;
  static type read(const Options& o, const std::string& k) { return o.json().value(k, nlohmann::json()); }
};
template <> struct OptionValue<OptionType::list> : OptionValue<OptionType::object> {};
template <> struct OptionValue<OptionType::choice> : OptionValue<OptionType::string> {};
template <OptionType T> using option_value_t = typename OptionValue<T>::type;

}  // namespace skein
