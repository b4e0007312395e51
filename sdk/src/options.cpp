#include "skein/options.hpp"

#include "skein/errors.hpp"

namespace skein {

Options::Options(std::string owner, nlohmann::json values)
    : owner_(std::move(owner)), values_(std::move(values)) {}

bool Options::has(const std::string& key) const {
  auto it = values_.find(key);
  return it != values_.end() && !it->is_null();
}

void Options::fail(const std::string& key, const std::string& why) const {
  throw OptionError(key, owner_ + ": option '" + key + "' " + why);
}

const nlohmann::json& Options::at(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end() || it->is_null()) fail(key, "is required but not set");
  return *it;
}

bool Options::get_bool(const std::string& key) const {
  const auto& v = at(key);
  if (!v.is_boolean()) fail(key, "must be a bool, got " + v.dump());
  return v.get<bool>();
}

std::int64_t Options::get_int(const std::string& key) const {
  const auto& v = at(key);
  if (!v.is_number_integer()) fail(key, "must be an int, got " + v.dump());
  return v.get<std::int64_t>();
}

double Options::get_number(const std::string& key) const {
  const auto& v = at(key);
  if (!v.is_number()) fail(key, "must be a number, got " + v.dump());
  return v.get<double>();
}

std::string Options::get_string(const std::string& key) const {
  const auto& v = at(key);
  if (!v.is_string()) fail(key, "must be a string, got " + v.dump());
  return v.get<std::string>();
}

std::vector<std::int64_t> Options::get_int_list(const std::string& key) const {
  const auto& v = at(key);
  std::vector<std::int64_t> out;
  if (!v.is_array()) fail(key, "must be a list of ints, got " + v.dump());
  for (const auto& e : v) {
    if (!e.is_number_integer()) fail(key, "must be a list of ints, got " + v.dump());
    out.push_back(e.get<std::int64_t>());
  }
  return out;
}

std::vector<double> Options::get_number_list(const std::string& key) const {
  const auto& v = at(key);
  std::vector<double> out;
  if (!v.is_array()) fail(key, "must be a list of numbers, got " + v.dump());
  for (const auto& e : v) {
    if (!e.is_number()) fail(key, "must be a list of numbers, got " + v.dump());
    out.push_back(e.get<double>());
  }
  return out;
}

std::vector<std::string> Options::get_string_list(const std::string& key) const {
  const auto& v = at(key);
  std::vector<std::string> out;
  if (!v.is_array()) fail(key, "must be a list of strings, got " + v.dump());
  for (const auto& e : v) {
    if (!e.is_string()) fail(key, "must be a list of strings, got " + v.dump());
    out.push_back(e.get<std::string>());
  }
  return out;
}

}  // namespace skein
