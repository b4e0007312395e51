#include "skein/training/config/config.hpp"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "skein/host/option_limit_check.hpp"
#include "skein/training/device/device.hpp"
#include "skein/host/option_schema.hpp"
#include "skein/host/suggest.hpp"
#include "skein/errors.hpp"

namespace skein::core {

namespace {

// The config's single-plugin slots: the key, the kind of plugin it holds and
// where RunConfig keeps it, in the order they are resolved. The one table of
// them (callbacks, a list, are apart; defaults are in top_level_schema()).
struct Slot {
  const char* key;
  PluginKind kind;
  PluginUse RunConfig::*use;
};
constexpr Slot kSlots[] = {{run_key::kModel, PluginKind::model, &RunConfig::model},
                           {run_key::kData, PluginKind::dataset, &RunConfig::data},
                           {run_key::kHistory, PluginKind::history, &RunConfig::history},
                           {run_key::kParallel, PluginKind::parallel, &RunConfig::parallel},
                           {run_key::kLoss, PluginKind::loss, &RunConfig::loss},
                           {run_key::kOptimizer, PluginKind::optimizer, &RunConfig::optimizer}};

const char* slot_for(PluginKind kind) {
  for (const auto& s : kSlots)
    if (s.kind == kind) return s.key;
  return nullptr;  // callbacks
}

// JSON strings (and so config.json) hold only UTF-8: a key or value with
// other bytes would make every later dump() throw. Text from the command line
// is checked as it enters the config; a config file is checked by its parser.
void require_utf8(const std::string& text, const std::string& what) {
  try {
    (void)nlohmann::json(text).dump();
  } catch (const nlohmann::json::type_error&) {
    throw ConfigError(what + " is not valid UTF-8");
  }
}

// `flag` names the value in errors.
// Deeper JSON is refused while parsing: nlohmann copies, dumps and compares
// values recursively, so a document nested ~100k levels would overflow the
// stack later. No config needs more than a handful of levels.
constexpr int kMaxJsonDepth = 100;

template <typename Input>
nlohmann::json parse_json_bounded(Input&& input, const std::string& what) {
  return nlohmann::json::parse(
      std::forward<Input>(input), [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxJsonDepth)
          throw ConfigError(what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        return true;
      });
}

nlohmann::json parse_value(const std::string& text, const std::string& flag) {
  try {
    return parse_json_bounded(text, flag);
  } catch (const nlohmann::json::exception&) {
  }
  // A bare word is a string.
  require_utf8(text, flag + ": the value");
  return text;
}

// Splits "a=1,b=[1,2],c=x" at commas outside brackets and quotes.
std::vector<std::string> split_top_level(const std::string& s) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  bool quoted = false;
  for (char c : s) {
    if (c == '"') quoted = !quoted;
    if (!quoted && (c == '[' || c == '{')) ++depth;
    if (!quoted && (c == ']' || c == '}')) --depth;
    if (c == ',' && depth == 0 && !quoted) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  return parts;
}

bool looks_like_path(const std::string& name) {
  return name.find('/') != std::string::npos ||
         (name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0);
}

// A plugin file's canonical path (as given when it cannot be resolved):
// recorded in plugin_versions so that a resume can load the very same file.
std::string absolute_path(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

// Whether a config's "plugin" value (a name or a file) means `rec`.
bool names_plugin(const nlohmann::json& value, const PluginRecord& rec) {
  if (!value.is_string()) return false;
  const std::string v = value.get<std::string>();
  return v == rec.name || (looks_like_path(v) && absolute_path(v) == absolute_path(rec.path));
}

}  // namespace

Options PluginUse::make_options() const {
  return Options(where + " (plugin '" + record->name + "')", options);
}

nlohmann::json read_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot read config file '" + path + "'");
  try {
    auto j = parse_json_bounded(in, path);
    if (!j.is_object()) throw ConfigError(path + ": the config must be a JSON object");
    return j;
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e400
    // Without nlohmann's "[json.exception.ID] " tag; a parse error's message
    // already says "at line L, column C".
    std::string what = e.what();
    auto tag_end = what.find("] ");
    if (what.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos) what.erase(0, tag_end + 2);
    throw ConfigError(path + ": invalid JSON: " + what);
  }
}

void apply_set(nlohmann::json& config, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set '" + assignment + "': expected dotted.key=VALUE");
  std::string path = assignment.substr(0, eq);
  require_utf8(path, "--set: the key");
  // getline below drops a last empty segment: "model." would set "model".
  if (path.back() == '.') throw ConfigError("--set '" + assignment + "': empty key in '" + path + "'");
  nlohmann::json value = parse_value(assignment.substr(eq + 1), "--set " + path);

  nlohmann::json* node = &config;
  std::stringstream ss(path);
  std::string segment, walked;
  std::vector<std::string> segments;
  while (std::getline(ss, segment, '.')) segments.push_back(segment);
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const auto& seg = segments[i];
    if (seg.empty()) throw ConfigError("--set '" + assignment + "': empty key in '" + path + "'");
    walked += (walked.empty() ? "" : ".") + seg;
    bool last = i + 1 == segments.size();
    if (node->is_array()) {
      std::size_t idx = 0;
      try {
        std::size_t used = 0;
        idx = std::stoul(seg, &used);
        if (used != seg.size()) throw std::invalid_argument(seg);
      } catch (const std::exception&) {
        throw ConfigError("--set " + path + ": '" + walked + "' indexes a list; use a number");
      }
      if (idx >= node->size())
        throw ConfigError("--set " + path + ": index " + seg + " is out of range (the list has " +
                          std::to_string(node->size()) + " entries)");
      node = &(*node)[idx];
    } else {
      if (node->is_null()) *node = nlohmann::json::object();
      if (!node->is_object())
        throw ConfigError("--set " + path + ": '" + walked + "' is inside a " + node->type_name() +
                          ", not an object");
      node = &(*node)[seg];
    }
    if (last) *node = value;
  }
}

std::string apply_plugin_flag(nlohmann::json& config, const std::string& spec, PluginRegistry& registry,
                              std::vector<std::string>& single_slots_taken) {
  // NAME or PATH, then options after the first ':'.
  std::string target = spec, rest;
  auto colon = spec.find(':');
  if (colon != std::string::npos) {
    target = spec.substr(0, colon);
    rest = spec.substr(colon + 1);
  }
  if (target.empty()) throw ConfigError("--plugin '" + spec + "': missing plugin name");
  require_utf8(target, "--plugin: the plugin name or path");
  const PluginRecord& rec = looks_like_path(target) ? registry.load_file(target) : registry.require(target);

  nlohmann::json options = nlohmann::json::object();
  for (const auto& kv : split_top_level(rest)) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError("--plugin '" + spec + "': expected key=value, got '" + kv + "'");
    const std::string key = kv.substr(0, eq);
    require_utf8(key, "--plugin " + target + ": an option name");
    options[key] = parse_value(kv.substr(eq + 1), "--plugin " + target + ": option '" + key + "'");
  }

  if (const char* slot = slot_for(rec.kind)) {
    for (const auto& taken : single_slots_taken) {
      auto sep = taken.find('=');
      if (taken.substr(0, sep) == slot)
        throw ConfigError("two " + std::string(to_string(rec.kind)) + " plugins given: '" +
                          taken.substr(sep + 1) + "' and '" + rec.name + "'; a run has one " + slot);
    }
    single_slots_taken.push_back(std::string(slot) + "=" + rec.name);
    // The same plugin as the config's (by name or by file): its options are
    // updated, as for callbacks. Another plugin replaces the slot.
    nlohmann::json entry = options;
    auto existing = config.find(slot);
    if (existing != config.end() && existing->is_object() && names_plugin(existing->value("plugin", nlohmann::json()), rec)) {
      entry = *existing;
      entry.update(options);
    }
    entry["plugin"] = rec.name;
    config[slot] = entry;
    return slot;
  }
  using run_key::kCallbacks;
  if (!config.contains(kCallbacks)) config[kCallbacks] = schema_default(kCallbacks);
  auto& callbacks = config[kCallbacks];
  if (!callbacks.is_array()) throw ConfigPathError(kCallbacks, std::string(kCallbacks) + ": expected a list");
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    auto& cb = callbacks[i];
    if (cb.is_object() && cb.contains("plugin") && cb["plugin"] == rec.name) {
      cb.update(options);
      return std::string(kCallbacks) + "." + std::to_string(i);
    }
  }
  options["plugin"] = rec.name;
  callbacks.push_back(options);
  return std::string(kCallbacks) + "." + std::to_string(callbacks.size() - 1);
}

namespace {

// `where` names the entry in messages ("callbacks[1]"), `path` in data ("callbacks.1").
PluginUse resolve_plugin(const nlohmann::json& entry, const std::string& where, const std::string& path,
                         PluginKind kind, PluginRegistry& registry) {
  if (!entry.is_object()) throw ConfigPathError(path, where + ": expected an object with a \"plugin\" key");
  auto it = entry.find("plugin");
  if (it == entry.end() || !it->is_string())
    throw ConfigPathError(path + ".plugin", where + ".plugin: missing (name of a " + std::string(to_string(kind)) +
                                                " plugin)");
  std::string name = it->get<std::string>();
  const PluginRecord& rec = [&]() -> const PluginRecord& {
    try {
      return looks_like_path(name) ? registry.load_file(name) : registry.require(name);
    } catch (const ConfigPathError&) {
      throw;
    } catch (const ConfigError& e) {  // an unknown name: located, so that a --set that gave it is named
      throw ConfigPathError(path + ".plugin", e.what());
    }
  }();
  if (rec.kind != kind)
    throw ConfigPathError(path + ".plugin", where + ".plugin: '" + rec.name + "' is a " + to_string(rec.kind) +
                                                " plugin, not a " + to_string(kind) + " plugin");
  PluginUse use;
  use.record = &rec;
  use.where = where;
  use.path = path;
  use.options = validate_options(rec.options, entry, where, path, {"plugin"});
  check_option_limits(rec.options, use.options, use.make_options().owner(), path);
  return use;
}

// Configs written before optimizers were plugins say {"name": "adam", ...}:
// that still means the plugin of that name.
void migrate_optimizer_name(nlohmann::json& optimizer) {
  if (!optimizer.is_object() || !optimizer.contains("name")) return;
  if (optimizer.contains("plugin"))
    throw ConfigPathError(run_key::kOptimizer, std::string(run_key::kOptimizer) +
                                                   ": give \"plugin\" only (\"name\" is its old spelling)");
  const std::string name_path = std::string(run_key::kOptimizer) + ".name";
  if (!optimizer["name"].is_string())
    throw ConfigPathError(name_path, name_path + ": expected string, got " + optimizer["name"].dump());
  optimizer["plugin"] = optimizer["name"];
  optimizer.erase("name");
}

}  // namespace

namespace {

bool under(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '.');
}

// Object-valued keys with a default (optimizer, loss, ...): a --set inside
// one that the config does not name refines the default plugin.
void fill_default_slot(nlohmann::json& raw, const std::string& assignment) {
  const std::string top = assignment.substr(0, assignment.find_first_of(".="));
  if (raw.contains(top)) return;
  for (const auto& spec : top_level_schema())
    if (top == spec.name && spec.type == OptionType::object && spec.default_json && top != assignment.substr(0, assignment.find('=')))
      raw[top] = nlohmann::json::parse(spec.default_json);
}

// The object a dotted path names in `raw` (list entries by number), or null.
nlohmann::json* find_node(nlohmann::json& raw, const std::string& path) {
  nlohmann::json* node = &raw;
  std::stringstream ss(path);
  std::string seg;
  while (std::getline(ss, seg, '.')) {
    if (node->is_object() && node->contains(seg)) {
      node = &(*node)[seg];
    } else if (node->is_array() && !seg.empty() && seg.find_first_not_of("0123456789") == std::string::npos &&
               std::stoul(seg) < node->size()) {
      node = &(*node)[std::stoul(seg)];
    } else {
      return nullptr;
    }
  }
  return node;
}

// `--set SLOT.plugin=OTHER` starts SLOT afresh: the options of the plugin it
// replaces would be unknown to OTHER. Options given by earlier --set flags
// for SLOT are kept (applied again), as the user wrote them for this run.
void switch_plugin(nlohmann::json& raw, const std::vector<std::string>& sets, std::size_t i) {
  const std::string& set = sets[i];
  if (set.find('=') == std::string::npos) return;  // apply_set reports it
  const std::string key = set.substr(0, set.find('='));
  const std::string suffix = ".plugin";
  if (key.size() <= suffix.size() || key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) return;
  const std::string slot = key.substr(0, key.size() - suffix.size());
  nlohmann::json* node = find_node(raw, slot);
  if (!node || !node->is_object() || !node->contains("plugin")) return;
  if ((*node)["plugin"] == parse_value(set.substr(set.find('=') + 1), "--set " + key)) return;
  *node = nlohmann::json::object();
  for (std::size_t j = 0; j < i; ++j) {
    const std::string earlier = sets[j].substr(0, sets[j].find('='));
    if (earlier != key && under(earlier, slot)) apply_set(raw, sets[j]);
  }
}

// The data a run trains on: a dataset plugin (skein train always), or for a
// session fed by its program, data_info sizing the model.
void resolve_data_info(const nlohmann::json& cfg, bool data_required, RunConfig& rc) {
  using run_key::kDataInfo;
  const nlohmann::json& info = cfg[kDataInfo];
  if (!cfg[run_key::kData].is_null()) {
    if (!info.is_null())
      throw ConfigPathError(kDataInfo, "data_info: give it only without data (the dataset tells the shapes)");
    return;
  }
  if (data_required)
    throw ConfigPathError(run_key::kData, "data: required option is missing (object: Dataset plugin and its options)");
  const std::string expected = "data_info: without data, a session needs {\"input_shape\": [dims of one sample], "
                               "\"num_classes\": classes, or the output width of a regression}";
  if (!info.is_object()) throw ConfigPathError(kDataInfo, expected);
  for (auto it = info.begin(); it != info.end(); ++it)
    if (it.key() != "input_shape" && it.key() != "num_classes")
      throw ConfigPathError(std::string(kDataInfo) + "." + it.key(), "data_info: unknown key '" + it.key() + "' (input_shape, num_classes)");
  const auto shape = info.find("input_shape");
  const auto classes = info.find("num_classes");
  if (shape == info.end() || !shape->is_array() || shape->empty() || classes == info.end())
    throw ConfigPathError(kDataInfo, expected);
  for (const auto& d : *shape)
    if (!d.is_number_integer() || d.get<std::int64_t>() <= 0)
      throw ConfigPathError(std::string(kDataInfo) + ".input_shape", "data_info.input_shape: expected positive integers, got " + shape->dump());
  if (!classes->is_number_integer() || classes->get<std::int64_t>() <= 0)
    throw ConfigPathError("data_info.num_classes", "data_info.num_classes: expected a positive integer, got " + classes->dump());
  rc.data_info.input_shape = shape->get<std::vector<std::int64_t>>();
  rc.data_info.num_classes = classes->get<std::int64_t>();
}

}  // namespace

namespace {

// What a --set of `key` is answerable for in `config` (before it is
// applied): the key, or the first part of it the config does not have, which
// the flag makes (an unknown key "Model" from --set Model.x=1).
std::string set_by_flag(const nlohmann::json& config, const std::string& key) {
  const nlohmann::json* node = &config;
  std::string walked;
  std::stringstream segments(key);
  for (std::string seg; std::getline(segments, seg, '.');) {
    walked += (walked.empty() ? "" : ".") + seg;
    if (node->is_object() && node->contains(seg)) {
      node = &(*node)[seg];
    } else if (node->is_array() && !seg.empty() && seg.find_first_not_of("0123456789") == std::string::npos &&
               seg.size() < 10 && std::stoul(seg) < node->size()) {
      node = &(*node)[std::stoul(seg)];
    } else {
      return walked;
    }
  }
  return key;
}

std::string blame(const std::string& message, const std::string& path, const RunConfig& config) {
  if (!path.empty()) {
    // The last flag that set the value wins, as when it was applied.
    for (auto it = config.from_command_line.rbegin(); it != config.from_command_line.rend(); ++it)
      if (under(path, it->first)) return "command line (" + it->second + "): " + message;
  }
  return config.config_path.empty() ? message : config.config_path + ": " + message;
}

}  // namespace

std::string blame(const ConfigError& error, const RunConfig& config) {
  const auto* located = dynamic_cast<const ConfigPathError*>(&error);
  return blame(error.what(), located ? located->path() : std::string(), config);
}

RunConfig resolve_config(const ConfigSources& sources, PluginRegistry& registry) {
  RunConfig rc;
  rc.config_path = sources.config_path;
  nlohmann::json raw = nlohmann::json::object();
  if (!sources.base.is_null()) raw = sources.base;
  else if (!sources.config_path.empty()) raw = read_config_file(sources.config_path);
  std::vector<std::string> taken;
  for (const auto& spec : sources.plugins)
    rc.from_command_line.push_back({apply_plugin_flag(raw, spec, registry, taken), "--plugin " + spec});
  for (std::size_t i = 0; i < sources.sets.size(); ++i) {
    const std::string& set = sources.sets[i];
    fill_default_slot(raw, set);
    switch_plugin(raw, sources.sets, i);
    const std::string answerable = set_by_flag(raw, set.substr(0, set.find('=')));
    apply_set(raw, set);
    rc.from_command_line.push_back({answerable, "--set " + set});
  }

  // Several processes and no parallel plugin: data parallel, as Lightning
  // picks its DDP strategy (one process keeps the schema's default, none).
  if (sources.world_size > 1 && raw.is_object() && !raw.contains(run_key::kParallel)) {
    raw[run_key::kParallel] = {{"plugin", "ddp"}};
    rc.parallel_chosen = "parallel: ddp (the run has " + std::to_string(sources.world_size) +
                         " processes and the config names no parallel plugin)";
  }
  // precision 32 written as a number (`--set precision=32`, Lightning's
  // precision=32) is the string "32".
  if (raw.is_object() && raw.contains(run_key::kPrecision) && raw[run_key::kPrecision] == 32)
    raw[run_key::kPrecision] = "32";
  try {
    using namespace run_key;
    nlohmann::json cfg = validate_options(top_level_schema(), raw, "config", "");
    // Every limit of the table (no owner: "batch_size: must be positive, got 0").
    check_option_limits(top_level_schema(), cfg, "", "");
    const RunSettings settings = run_settings_of(cfg);
    rc.batch_size = settings.batch_size;
    rc.max_epochs = settings.max_epochs;
    rc.accumulate_steps = settings.accumulate_steps;
    rc.precision = precision_of(cfg[kPrecision].get<std::string>());
    rc.device = cfg[kDevice].get<std::string>();
    check_device_spec(rc.device);
    rc.seed = cfg[kSeed].get<std::uint64_t>();
    rc.valid_split = cfg[kValidSplit].get<double>();
    rc.valid_stratified = cfg[kValidStratified].get<bool>();
    rc.standardize = cfg[kStandardize].get<bool>();
    rc.init_from = cfg[kInitFrom].get<std::string>();
    rc.init_strict = cfg[kInitStrict].get<bool>();
    rc.data_workers = cfg[kDataWorkers].get<std::int64_t>();
    rc.checkpoint_background = cfg[kCheckpointBackground].get<bool>();
    migrate_optimizer_name(cfg[kOptimizer]);

    resolve_data_info(cfg, sources.data_required, rc);
    for (const auto& slot : kSlots)
      if (!cfg[slot.key].is_null() || slot.use != &RunConfig::data)
        rc.*slot.use = resolve_plugin(cfg[slot.key], slot.key, slot.key, slot.kind, registry);
    const auto& cbs = cfg[kCallbacks];
    for (std::size_t i = 0; i < cbs.size(); ++i)
      rc.callbacks.push_back(resolve_plugin(cbs[i], kCallbacks + ("[" + std::to_string(i) + "]"),
                                            kCallbacks + ("." + std::to_string(i)), PluginKind::callback, registry));

    // The resolved config: every option explicit, plus the plugin versions used.
    nlohmann::json versions = nlohmann::json::object();
    auto put = [&](nlohmann::json& slot, const PluginUse& use) {
      slot = use.options;
      slot["plugin"] = use.record->name;
      versions[use.record->name] = {{"kind", to_string(use.record->kind)},
                                    {"version", use.record->version},
                                    {"path", absolute_path(use.record->path)}};
    };
    for (const auto& slot : kSlots)
      if ((rc.*slot.use).record) put(cfg[slot.key], rc.*slot.use);
    if (cfg[kDataInfo].is_null()) cfg.erase(kDataInfo);  // configs of skein train stay as they were
    for (std::size_t i = 0; i < rc.callbacks.size(); ++i) put(cfg[kCallbacks][i], rc.callbacks[i]);
    cfg[kPluginVersions] = versions;
    rc.resolved = cfg;
    return rc;
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    if (msg.rfind("config.", 0) == 0) msg = msg.substr(7);  // top-level keys are named bare
    const auto* located = dynamic_cast<const ConfigPathError*>(&e);
    throw ConfigError(blame(msg, located ? located->path() : std::string(), rc));
  }
}

}  // namespace skein::core
