#define BOOST_TEST_MODULE option_limits
#include <boost/test/unit_test.hpp>

#include <functional>

#include "skein/host/config_error.hpp"
#include "skein/host/option_limit_check.hpp"
#include "skein/host/option_schema.hpp"
#include "skein/detail/manifest.hpp"
#include "skein/detail/option_default.hpp"
#include "skein/detail/option_limits.hpp"
#include "skein/plugin.hpp"

// Options' declared limits (API 3.1): a choice's allowed values and a
// number's range, checked by the compiler on the declaration and its default,
// by the host on users' values, and written into the manifest.

using skein::OptionType;
using skein::core::ConfigPathError;

namespace {

constexpr skein::OptionSpec kSchema[] = {
    SKEIN_CHOICE_OPTION("mode", "min", "min|max", "Which way is better"),
    SKEIN_OPTION("patience", integer, "3", "Epochs to wait", SKEIN_RANGE("[1, )")),
    SKEIN_OPTION("rate", number, "0.5", "A share", SKEIN_RANGE("(0, 1]")),
    SKEIN_OPTION("weights", number_list, "[]", "Per class", SKEIN_RANGE("(0, )")),
    SKEIN_OPTION("start", number, "null", "Unset by default", SKEIN_RANGE("[0, 10)")),
};

// The error check_option_limits gives `given` ("" when none), after the
// schema's own validation filled in the defaults.
std::string limits_error(const nlohmann::json& given, std::string* path = nullptr) {
  const std::vector<skein::OptionSpec> schema(std::begin(kSchema), std::end(kSchema));
  const nlohmann::json values = skein::core::validate_options(schema, given, "callbacks[0]", "callbacks.0");
  try {
    skein::core::check_option_limits(schema, values, "callbacks[0] (plugin 'x')", "callbacks.0");
  } catch (const ConfigPathError& e) {
    if (path) *path = e.path();
    return e.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_listed_choice_and_values_in_range_are_accepted) {
  BOOST_TEST(limits_error(nlohmann::json::object()) == "");  // the defaults keep to the limits
  BOOST_TEST(limits_error({{"mode", "max"}, {"patience", 1}, {"rate", 1.0}, {"weights", {0.5, 2}}, {"start", 0}}) ==
             "");
}

BOOST_AUTO_TEST_CASE(another_choice_is_refused_with_the_choices_listed) {
  std::string path;
  BOOST_TEST(limits_error({{"mode", "up"}}, &path) ==
             "callbacks[0] (plugin 'x'): option 'mode' must be min or max, got 'up'");
  BOOST_TEST(path == "callbacks.0.mode");  // located: blame() names the file or --set flag
}

BOOST_AUTO_TEST_CASE(values_out_of_range_are_refused_in_words) {
  BOOST_TEST(limits_error({{"patience", 0}}) == "callbacks[0] (plugin 'x'): option 'patience' must be at least 1, got 0");
  BOOST_TEST(limits_error({{"rate", 0}}) == "callbacks[0] (plugin 'x'): option 'rate' must be in (0, 1], got 0");
  BOOST_TEST(limits_error({{"start", 10}}) == "callbacks[0] (plugin 'x'): option 'start' must be in [0, 10), got 10");
  BOOST_TEST(limits_error({{"weights", {1, -2}}}) ==
             "callbacks[0] (plugin 'x'): option 'weights' has a value that is not positive: -2 (in [1,-2])");
}

BOOST_AUTO_TEST_CASE(a_value_of_the_wrong_type_is_the_schemas_error_not_a_limits_one) {
  const std::vector<skein::OptionSpec> schema(std::begin(kSchema), std::end(kSchema));
  BOOST_CHECK_THROW(skein::core::validate_options(schema, {{"mode", 3}}, "callbacks[0]", "callbacks.0"),
                    ConfigPathError);
}

BOOST_AUTO_TEST_CASE(ranges_and_choices_in_words) {
  using skein::core::range_words;
  BOOST_TEST(range_words("(0, )") == "positive");
  BOOST_TEST(range_words("[1, )") == "at least 1");
  BOOST_TEST(range_words("(0.5, )") == "more than 0.5");
  BOOST_TEST(range_words("(, 1)") == "less than 1");
  BOOST_TEST(range_words("(, 1e3]") == "at most 1e3");
  BOOST_TEST(range_words("[0, 1)") == "in [0, 1)");
  BOOST_TEST(skein::core::choices_words("a") == "a");
  BOOST_TEST(skein::core::choices_words("a|b|c") == "a, b or c");
  BOOST_TEST(skein::core::choices_list("a|b") == std::vector<std::string>({"a", "b"}), boost::test_tools::per_element());
}

// What SKEIN_PLUGIN's static_assert (check_defaults) refuses.
BOOST_AUTO_TEST_CASE(malformed_limits_and_defaults_outside_them_do_not_compile) {
  using skein::option_spec;
  using skein::option_default::limits_fit;
  using skein::option_limits::parse_range;
  static_assert(parse_range("[0, 1)").valid && parse_range(" (, -2.5e1] ").valid);
  static_assert(!parse_range("[1, 0]").valid && !parse_range("[, 1]").valid && !parse_range("(,)").valid &&
                !parse_range("0, 1").valid && !parse_range("[0, 1) x").valid && !parse_range("[01, 2]").valid);
  const skein::OptionChoices min_max{"min|max"};
  const skein::OptionRange positive{"(0, )"};
  const std::vector<std::pair<skein::OptionSpec, bool>> cases = {
      {option_spec("a", OptionType::choice, "\"max\"", "", min_max), true},
      {option_spec("a", OptionType::choice, "null", "", min_max), true},
      {option_spec("a", OptionType::choice, "\"mean\"", "", min_max), false},   // not a choice
      {option_spec("a", OptionType::choice, "\"min\"", ""), false},             // no choices
      {option_spec("a", OptionType::string, "\"min\"", "", min_max), false},    // choices on a string
      {option_spec("a", OptionType::choice, "\"a\"", "", skein::OptionChoices{"a||b"}), false},
      {option_spec("a", OptionType::choice, "\"a\"", "", skein::OptionChoices{"a | b"}), false},
      {option_spec("a", OptionType::integer, "0", "", positive), false},        // default out of range
      {option_spec("a", OptionType::integer, nullptr, "", positive), true},     // required: no default
      {option_spec("a", OptionType::int_list, "[3, 1]", "", positive), true},
      {option_spec("a", OptionType::int_list, "[3, 0]", "", positive), false},
      {option_spec("a", OptionType::number, "1e-8", "", positive), true},
      {option_spec("a", OptionType::string, "\"x\"", "", positive), false},     // a range on a string
      {option_spec("a", OptionType::number, "1", "", skein::OptionRange{"[2, 1]"}), false}};
  for (const auto& [spec, ok] : cases)
    BOOST_TEST(limits_fit(spec) == ok, skein::to_string(spec.type) << " " << (spec.default_json ? spec.default_json : "-")
                                                                  << " " << (spec.choices ? spec.choices : "")
                                                                  << (spec.range ? spec.range : ""));
}

BOOST_AUTO_TEST_CASE(the_manifest_carries_the_limits) {
  static constexpr skein::OptionSpec options[] = {kSchema[0], kSchema[2], {nullptr, OptionType::object, nullptr, nullptr}};
  static constexpr skein::manifest::Fields fields = {"3", "1", "x", "callback", "1.0.0", "", "fp", options, 2};
  static constexpr auto text = skein::manifest::build<skein::manifest::length(fields)>(fields);
  const auto manifest = nlohmann::json::parse(text.data());
  const auto& mode = manifest.at("options").at(0);
  BOOST_TEST(mode.at("type").get<std::string>() == "choice");
  BOOST_TEST(mode.at("choices") == nlohmann::json({"min", "max"}));
  BOOST_TEST(!mode.contains("range"));
  BOOST_TEST(manifest.at("options").at(1).at("range").get<std::string>() == "(0, 1]");
}
