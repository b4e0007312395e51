#include "skein/host/option_schema.hpp"

#include <algorithm>
#include <cstdint>

#include "skein/host/config_error.hpp"
#include "skein/host/suggest.hpp"
#include "skein/errors.hpp"

namespace skein::core {

namespace {
bool all_of(const nlohmann::json& v, bool (*pred)(const nlohmann::json&)) {
  return v.is_array() && std::all_of(v.begin(), v.end(), pred);
}

// Options of type int are read as int64: nlohmann keeps a number above
// INT64_MAX as unsigned, which would wrap negative when read.
bool is_int64(const nlohmann::json& v) {
  return v.is_number_integer() &&
         !(v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX));
}
}  // namespace

bool matches_type(OptionType type, const nlohmann::json& v) {
  switch (type) {
    case OptionType::boolean: return v.is_boolean();
    case OptionType::integer: return is_int64(v);
    case OptionType::number: return v.is_number();
    case OptionType::string:
    case OptionType::choice: return v.is_string();
    case OptionType::int_list:
      return all_of(v, is_int64);
    case OptionType::number_list:
      return all_of(v, [](const nlohmann::json& e) { return e.is_number(); });
    case OptionType::string_list:
      return all_of(v, [](const nlohmann::json& e) { return e.is_string(); });
    case OptionType::object: return v.is_object();
    case OptionType::list: return v.is_array();
  }
  return false;
}

nlohmann::json validate_options(const std::vector<OptionSpec>& schema, const nlohmann::json& given,
                                const std::string& where, const std::string& path,
                                const std::vector<std::string>& ignore) {
  auto at = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (!given.is_object()) throw ConfigPathError(path, where + ": expected an object, got " + given.dump());
  std::vector<std::string> names;
  for (const auto& spec : schema) names.push_back(spec.name);

  nlohmann::json out = nlohmann::json::object();
  for (auto it = given.begin(); it != given.end(); ++it) {
    if (std::find(ignore.begin(), ignore.end(), it.key()) != ignore.end()) continue;
    auto spec = std::find_if(schema.begin(), schema.end(),
                             [&](const OptionSpec& s) { return it.key() == s.name; });
    if (spec == schema.end())
      throw ConfigPathError(at(it.key()), where + "." + it.key() + ": unknown key" + did_you_mean(it.key(), names));
    // An int is a fine number; a whole-valued float is not an int. null is
    // accepted where it is the default ("unset").
    const bool null_default = spec->default_json && std::string(spec->default_json) == "null";
    if (!(it.value().is_null() && null_default) && !matches_type(spec->type, it.value()))
      throw ConfigPathError(at(it.key()), where + "." + it.key() + ": expected " + to_string(spec->type) +
                        (it.value().is_number_integer() ? " (64-bit)" : "") + ", got " + it.value().dump());
    out[it.key()] = it.value();
  }
  for (const auto& spec : schema) {
    if (out.contains(spec.name)) continue;
    if (!spec.default_json)
      throw ConfigPathError(at(spec.name), where + "." + spec.name + ": required option is missing (" +
                        to_string(spec.type) + ": " + (spec.doc ? spec.doc : "") + ")");
    try {
      out[spec.name] = nlohmann::json::parse(spec.default_json);
    } catch (const nlohmann::json::exception&) {
      throw PluginError(where + "." + spec.name + ": the plugin's default '" + spec.default_json +
                        "' is not valid JSON");
    }
  }
  return out;
}

}  // namespace skein::core
