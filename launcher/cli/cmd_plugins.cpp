#include <algorithm>
#include <iomanip>
#include <iostream>

#include <boost/program_options.hpp>
#include "skein/detail/json.hpp"

#include "commands.hpp"
#include "skein/host/option_limit_check.hpp"
#include "skein/host/plugin_registry.hpp"
#include "skein/errors.hpp"

namespace po = boost::program_options;

namespace skein::launcher {

namespace {

nlohmann::json describe_json(const core::PluginRecord& rec) {
  nlohmann::json options = nlohmann::json::array();
  for (const auto& o : rec.options) {
    nlohmann::json option = {{"name", o.name},
                             {"type", to_string(o.type)},
                             {"default", o.default_json ? nlohmann::json(o.default_json) : nullptr},
                             {"required", o.default_json == nullptr},
                             {"doc", o.doc ? o.doc : ""}};
    if (o.choices) option["choices"] = core::choices_list(o.choices);
    if (o.range) option["range"] = o.range;
    options.push_back(option);
  }
  return {{"name", rec.name},          {"kind", to_string(rec.kind)},
          {"version", rec.version},    {"path", rec.path},
          {"description", rec.description}, {"options", options}};
}

void print_table(const core::PluginRegistry& registry) {
  // Columns as wide as their longest entry plus two spaces: never run together.
  std::size_t name_w = 4, kind_w = 4, version_w = 7;
  for (const auto* rec : registry.plugins()) {
    name_w = std::max(name_w, rec->name.size());
    kind_w = std::max(kind_w, std::string(to_string(rec->kind)).size());
    version_w = std::max(version_w, rec->version.size());
  }
  const auto col = [](std::size_t w) { return std::setw(static_cast<int>(w + 2)); };
  std::cout << std::left << col(name_w) << "NAME" << col(kind_w) << "KIND" << col(version_w) << "VERSION"
            << "DESCRIPTION\n";
  for (const auto* rec : registry.plugins()) {
    std::cout << col(name_w) << rec->name << col(kind_w) << to_string(rec->kind) << col(version_w)
              << rec->version << rec->description << "\n"
              << std::setw(static_cast<int>(name_w + kind_w + version_w + 6)) << "" << rec->path << "\n";
  }
}

void print_description(const core::PluginRecord& rec) {
  std::cout << rec.name << " (" << to_string(rec.kind) << " plugin, version " << rec.version
            << ")\n  " << rec.description << "\n  file: " << rec.path << "\n\noptions:\n";
  if (rec.options.empty()) std::cout << "  (none)\n";
  std::size_t w = 4;
  for (const auto& o : rec.options) w = std::max(w, std::string(o.name).size());
  for (const auto& o : rec.options) {
    std::cout << "  " << std::left << std::setw(static_cast<int>(w) + 2) << o.name
              << std::setw(13) << to_string(o.type)
              << "default: " << (o.default_json ? o.default_json : "(required)") << "\n"
              << "  " << std::setw(static_cast<int>(w) + 2) << "" << (o.doc ? o.doc : "") << "\n";
    if (o.choices || o.range)
      std::cout << "  " << std::setw(static_cast<int>(w) + 2) << "" << "must be "
                << (o.choices ? core::choices_words(o.choices) : core::range_words(o.range))
                << (o.range && o.type != OptionType::integer && o.type != OptionType::number ? " (each value)" : "")
                << "\n";
  }
}

}  // namespace

int cmd_plugins(const std::vector<std::string>& args) {
  bool json = false;
  std::vector<std::string> dirs, files, positional;
  po::options_description opts("skein plugins options");
  opts.add_options()("help,h", "show this help")("json", po::bool_switch(&json),
                                                 "print JSON instead of a table")(
      "plugin-dir", po::value(&dirs)->composing(), "also scan this directory (repeatable)")(
      "plugin", po::value(&files)->composing(), "also load this plugin file (repeatable)");
  // The words after "plugins" (describe NAME): positional only, so not in --help.
  po::options_description hidden;
  hidden.add_options()("words", po::value(&positional)->composing());
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("words", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: skein plugins [--json] [--plugin-dir DIR]...\n"
                 "       skein plugins describe NAME|PATH.so [--json]\n\n"
              << opts;
    return 0;
  }
  po::notify(vm);

  core::PluginRegistry registry;
  core::scan_plugins(registry, dirs, false);  // problems are listed below
  for (const auto& f : files) registry.load_file(f);

  if (!positional.empty()) {
    if (positional[0] != "describe" || positional.size() != 2)
      throw ConfigError("usage: skein plugins describe NAME|PATH.so");
    // A file is described from its manifest, as when listed (no plugin code runs).
    const std::string& what = positional[1];
    const bool is_file = what.find('/') != std::string::npos ||
                         (what.size() > 3 && what.compare(what.size() - 3, 3, ".so") == 0);
    const auto& rec = is_file ? registry.load_file(what) : registry.require(what);
    if (json)
      std::cout << describe_json(rec).dump(2) << "\n";
    else
      print_description(rec);
    return 0;
  }

  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto* rec : registry.plugins()) out.push_back(describe_json(*rec));
    std::cout << out.dump(2) << "\n";
  } else {
    print_table(registry);
  }
  // Broken files are reported, never fatal.
  for (const auto& p : registry.problems()) skein::warn(p.message);
  return 0;
}

}  // namespace skein::launcher
