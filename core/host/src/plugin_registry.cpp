#include "skein/host/plugin_registry.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <mutex>
#include <sstream>

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <boost/filesystem.hpp>

#include "skein/host/elf_section.hpp"
#include "skein/host/plugin_file_check.hpp"
#include "skein/host/plugin_scope.hpp"
#include "skein/host/suggest.hpp"
#include "skein/host/env_vars.hpp"
#include "skein/errors.hpp"
#include "skein/detail/json.hpp"
#include "skein/detail/option_default.hpp"  // limits_fit
#include "skein/detail/version.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

namespace {

// Libraries stay loaded for the life of the process, whatever happens to the
// registry or the objects: deliberately never destroyed.
// Ranks on threads (EngineRun, sessions) load plugins at once: one lock.
void keep_alive(std::shared_ptr<boost::dll::shared_library> library) {
  static auto* mutex = new std::mutex();
  static auto* libraries = new std::vector<std::shared_ptr<boost::dll::shared_library>>();
  std::lock_guard<std::mutex> lock(*mutex);
  libraries->push_back(std::move(library));
}

std::string version_string(std::uint32_t major, std::uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

bool valid_kind(PluginKind kind) {
  return std::find(std::begin(kAllPluginKinds), std::end(kAllPluginKinds), kind) != std::end(kAllPluginKinds);
}

// Minimum struct_size of an API 1.x PluginInfo: every field up to fingerprint.
// Pinned: a plugin built against any 1.x SDK passes this layout, so a change
// to it is an API major bump (docs/plugin-authoring.md, "ABI rules").
constexpr std::uint32_t kInfoSizeV1 = 72;
static_assert(sizeof(void*) != 8 || (sizeof(PluginInfo) == kInfoSizeV1 && offsetof(PluginInfo, fingerprint) == 64),
              "PluginInfo's v1 layout changed: that needs SKEIN_API_MAJOR + 1");

}  // namespace

PluginRegistry::PluginRegistry() = default;
PluginRegistry::~PluginRegistry() = default;

void PluginRegistry::debug(const std::string& msg) const {
  if (debug_) std::cerr << "skein: plugins: " << msg << '\n';
}

namespace {

void check_api(std::uint32_t major, std::uint32_t minor, const std::string& path) {
  if (major != SKEIN_API_MAJOR || minor > SKEIN_API_MINOR)
    throw PluginError("Wrong API version on plugin '" + path + "': got " + version_string(major, minor) +
                      ", host supports " + version_string(SKEIN_API_MAJOR, SKEIN_API_MINOR));
}

// One field of a build fingerprint ("sdk=0.1.0;torch=2.15;...").
std::string fingerprint_field(const std::string& fingerprint, const std::string& key) {
  const auto at = (";" + fingerprint).find(";" + key + "=");
  if (at == std::string::npos) return "";
  const auto begin = at + key.size() + 1;
  return fingerprint.substr(begin, fingerprint.find(';', begin) - begin);
}

void check_fingerprint(const std::string& fingerprint, const std::string& name, const std::string& path) {
  if (fingerprint == host_fingerprint()) return;
  // The usual cause, said first: a plugin built against the other libtorch.
  const std::string torch = fingerprint_field(fingerprint, "torch"), host_torch = fingerprint_field(host_fingerprint(), "torch");
  const std::string why = torch != host_torch ? "was built against libtorch " + torch + ", this skein against libtorch " +
                                                    host_torch + ": rebuild it with the same libtorch ("
                                              : "was built differently (";
  throw PluginError("plugin '" + name + "' (" + path + ") " + why + "plugin '" + fingerprint + "', host '" +
                    host_fingerprint() + "')");
}

void check_file_safety(const std::string& path) {
  const std::string why = unsafe_file_reason(path);
  if (!why.empty()) throw PluginError("refused plugin file '" + path + "': " + why);
}

// The names a file could be asked for by: "foo" for libfoo.so and foo.so.
std::string name_from_file(const std::string& path) {
  std::string stem = fs::path(path).stem().string();
  return stem.rfind("lib", 0) == 0 ? stem.substr(3) : stem;
}

// One option of a manifest; its text is kept by `keep`. `who` names the plugin in errors.
template <class Keep>
OptionSpec option_from_manifest(const nlohmann::json& o, Keep& keep, const std::string& who) {
  OptionSpec spec{};
  spec.name = keep(o.at("name").get<std::string>());
  const std::string type = o.at("type").get<std::string>();
  bool typed = false;
  for (int t = static_cast<int>(OptionType::boolean); t <= static_cast<int>(OptionType::choice); ++t)
    if (type == option_type_name(static_cast<OptionType>(t))) spec.type = static_cast<OptionType>(t), typed = true;
  if (!typed) throw PluginError(who + ": option type '" + type + "' is unknown");
  spec.default_json = o.at("default").is_null() ? nullptr : keep(o.at("default").get<std::string>());
  spec.doc = keep(o.at("doc").get<std::string>());
  if (o.contains("choices")) {
    std::string choices;
    for (const auto& c : o.at("choices")) choices += (choices.empty() ? "" : "|") + c.get<std::string>();
    spec.choices = keep(choices);
  }
  if (o.contains("range")) spec.range = keep(o.at("range").get<std::string>());
  if (!option_default::limits_fit(spec))
    throw PluginError(who + ": option '" + spec.name + "' has malformed choices or range, or a default outside them");
  return spec;
}

}  // namespace

// Nothing of a file is loaded before it passes here: a file without a
// manifest is never dlopen'ed, as its static initializers would run.
PluginRecord PluginRegistry::inspect(const std::string& path) const {
  check_file_safety(path);
  if (auto rec = read_manifest(path)) return std::move(*rec);
  throw PluginError("'" + path + "' is not a Skein plugin: it has no " + SKEIN_MANIFEST_SECTION +
                    " section (SKEIN_PLUGIN writes one); not loaded");
}

void PluginRegistry::remember_refused(const std::string& path, const std::string& why) {
  std::vector<std::string> names{name_from_file(path)};
  try {
    if (auto rec = read_manifest(path)) names.push_back(rec->name);  // reads, never loads
  } catch (const std::exception&) {
  }
  for (const auto& n : names) refused_.emplace(n, "plugin '" + n + "' (" + path + ") cannot be used: " + why);
}

std::optional<PluginRecord> PluginRegistry::read_manifest(const std::string& path) const {
  auto section = read_elf_section(path, SKEIN_MANIFEST_SECTION);
  if (!section) return std::nullopt;
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(section->c_str());  // NUL-terminated text
  } catch (const nlohmann::json::exception& e) {
    throw PluginError("'" + path + "': unreadable plugin manifest: " + e.what());
  }
  try {
    if (m.at("skein_manifest").get<int>() != 1) throw PluginError("'" + path + "': unknown manifest format");
    check_api(m.at("api").at(0).get<std::uint32_t>(), m.at("api").at(1).get<std::uint32_t>(), path);
    PluginRecord rec;
    rec.path = path;
    rec.name = m.at("name").get<std::string>();
    if (rec.name.empty()) throw PluginError("'" + path + "': plugin declares no name");
    const std::string kind = m.at("kind").get<std::string>();
    bool known = false;
    for (auto k : kAllPluginKinds)
      if (kind == to_string(k)) rec.kind = k, known = true;
    if (!known) throw PluginError("plugin '" + rec.name + "' (" + path + ") declares an unknown kind '" + kind + "'");
    check_fingerprint(m.at("fingerprint").get<std::string>(), rec.name, path);
    rec.version = m.at("version").get<std::string>();
    rec.description = m.at("description").get<std::string>();
    rec.text = std::make_shared<std::deque<std::string>>();
    auto keep = [&](const std::string& s) { return rec.text->emplace_back(s).c_str(); };
    for (const auto& o : m.at("options"))
      rec.options.push_back(option_from_manifest(o, keep, "plugin '" + rec.name + "' (" + path + ")"));
    debug("read the manifest of " + path + " (not loaded)");
    return rec;
  } catch (const nlohmann::json::exception& e) {
    throw PluginError("'" + path + "': malformed plugin manifest: " + e.what());
  }
}

namespace {
// Per thread: ranks run as threads under EngineRun and sessions, and the
// fatal-signal handler names what runs on the thread that crashed. Each
// training thread writes these before its first hook, so the handler's read
// finds them allocated.
thread_local const char* g_running_plugin = nullptr;
thread_local const char* g_running_hook = nullptr;
}  // namespace

PluginScope::PluginScope(const char* plugin, const char* hook)
    : saved_plugin_(g_running_plugin), saved_hook_(g_running_hook) {
  g_running_hook = hook;
  g_running_plugin = plugin;
}

PluginScope::~PluginScope() {
  g_running_plugin = saved_plugin_;
  g_running_hook = saved_hook_;
}

const char* running_plugin() { return g_running_plugin; }
const char* running_hook() { return g_running_hook; }

void PluginRegistry::ensure_loaded(const PluginRecord& rec) const {
  // Ranks on threads create the same plugins at once: the first loads, the
  // others wait and then read rec.create and rec.library (lazily filled).
  std::lock_guard<std::mutex> lock(load_mutex_);
  if (rec.library) return;
  check_file_safety(rec.path);  // again: the file may have changed since discovery
  // Its static initializers run now: a crash in them names the plugin.
  PluginScope scope(rec.name.c_str(), "loading its library");
  PluginRecord loaded = load_library(rec.path);
  if (loaded.name != rec.name || loaded.kind != rec.kind)
    throw PluginError("plugin file '" + rec.path + "': its manifest says " + to_string(rec.kind) + " '" +
                      rec.name + "' but the library declares " + to_string(loaded.kind) + " '" +
                      loaded.name + "'");
  debug("loaded " + rec.path);
  rec.create = loaded.create;
  rec.library = loaded.library;
}

PluginRecord PluginRegistry::load_library(const std::string& path) const {
  auto library = std::make_shared<boost::dll::shared_library>();
  boost::system::error_code ec;
  library->load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec || !library->is_loaded()) {
    std::string why = ec ? ec.message() : "unknown error";
    throw PluginError("cannot load plugin file '" + path + "': " + why);
  }
  keep_alive(library);
  opened_.fetch_add(1);

  if (!library->has(SKEIN_STR(SKEIN_PLUGIN_INFO_SYMBOL)))
    throw PluginError("'" + path + "' is not a Skein plugin (no symbol " +
                      SKEIN_STR(SKEIN_PLUGIN_INFO_SYMBOL) + ")");
  const auto& info = library->get<const PluginInfo>(SKEIN_STR(SKEIN_PLUGIN_INFO_SYMBOL));
  if (info.magic != kPluginMagic)
    throw PluginError("'" + path + "' is not a Skein plugin (bad magic in " +
                      SKEIN_STR(SKEIN_PLUGIN_INFO_SYMBOL) + ")");
  check_api(info.api_major, info.api_minor, path);
  if (info.struct_size < kInfoSizeV1)
    throw PluginError("'" + path + "': plugin info is too small (" +
                      std::to_string(info.struct_size) + " bytes, expected at least " +
                      std::to_string(kInfoSizeV1) + ")");
  std::string name = info.name ? info.name : "";
  if (name.empty()) throw PluginError("'" + path + "': plugin declares no name");
  if (!valid_kind(info.kind))
    throw PluginError("plugin '" + name + "' (" + path + ") declares an unknown kind " +
                      std::to_string(static_cast<std::uint32_t>(info.kind)));
  check_fingerprint(info.fingerprint ? info.fingerprint : "", name, path);
  if (!library->has(SKEIN_STR(SKEIN_PLUGIN_CREATE_SYMBOL)))
    throw PluginError("plugin '" + name + "' (" + path + ") has no entry point " +
                      SKEIN_STR(SKEIN_PLUGIN_CREATE_SYMBOL));

  PluginRecord rec;
  rec.path = path;
  rec.name = name;
  rec.version = info.version ? info.version : "";
  rec.description = info.description ? info.description : "";
  rec.kind = info.kind;
  // Its options come from the manifest (read_manifest): info.options is an
  // array of the plugin's OptionSpec, whose size grew in API 3.1.
  rec.create = library->get<void*(const PluginArgs*)>(SKEIN_STR(SKEIN_PLUGIN_CREATE_SYMBOL));
  rec.library = std::move(library);
  return rec;
}

void PluginRegistry::add(PluginRecord rec, bool explicit_file) {
  const std::string name = rec.name;
  auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    debug("registered '" + name + "' (" + to_string(rec.kind) + " " + rec.version + ") from " +
          rec.path);
    explicit_[name] = explicit_file;
    by_name_.emplace(name, std::move(rec));
    return;
  }
  if (explicit_file && !explicit_[name]) {
    debug("'" + name + "' from " + rec.path + " (explicit) replaces " + it->second.path);
    duplicates_.erase(name);
    explicit_[name] = true;
    it->second = std::move(rec);
    return;
  }
  if (!explicit_file && explicit_[name]) {
    debug("ignored '" + name + "' in " + rec.path + ": loaded explicitly from " + it->second.path);
    return;
  }
  auto& files = duplicates_[name];
  if (files.empty()) files.push_back(it->second.path);
  files.push_back(rec.path);
  std::string msg = "duplicate plugin name '" + name + "' in " + it->second.path + " and " + rec.path;
  debug(msg);
  if (explicit_file) throw PluginError(msg);
  problems_.push_back({rec.path, msg});
}

void PluginRegistry::scan_directory(const std::string& dir) {
  boost::system::error_code ec;
  if (std::find(scanned_.begin(), scanned_.end(), dir) == scanned_.end()) scanned_.push_back(dir);
  if (!fs::is_directory(dir, ec)) {
    debug("skipped " + dir + ": not a directory");
    return;
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& p = it->path();
    if (p.extension() != ".so") continue;
    boost::system::error_code unreadable;  // a symbolic link loop, say: skipped, not fatal to every command
    const bool regular = fs::is_regular_file(p, unreadable);
    if (unreadable) {
      warn("plugin directory '" + dir + "': skipped '" + p.filename().string() + "': " + unreadable.message());
      continue;
    }
    if (regular) files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  // Anyone could drop code into a directory others can write to.
  if (const std::string why = unsafe_directory_reason(dir); !why.empty()) {
    const std::string msg = "refused plugin directory '" + dir + "': " + why;
    debug(msg);
    problems_.push_back({dir, msg});
    for (const auto& p : files) remember_refused(p.string(), msg);
    return;
  }
  debug("scanning " + dir + " (" + std::to_string(files.size()) + " .so files)");
  for (const auto& p : files) {
    std::string canonical = fs::weakly_canonical(p, ec).string();
    if (std::find(seen_paths_.begin(), seen_paths_.end(), canonical) != seen_paths_.end()) continue;
    seen_paths_.push_back(canonical);
    try {
      add(inspect(p.string()), false);
    } catch (const PluginError& e) {
      debug("refused " + p.string() + ": " + e.what());
      problems_.push_back({p.string(), e.what()});
      remember_refused(p.string(), e.what());
    }
  }
}

const PluginRecord& PluginRegistry::load_file(const std::string& path) {
  boost::system::error_code ec;
  if (!fs::exists(path, ec)) throw ConfigError("plugin file '" + path + "' does not exist");
  std::string canonical = fs::weakly_canonical(path, ec).string();
  for (const auto& [name, rec] : by_name_) {
    if (fs::weakly_canonical(rec.path, ec).string() == canonical) {
      explicit_[name] = true;
      duplicates_.erase(name);
      return rec;
    }
  }
  PluginRecord rec = inspect(path);
  std::string name = rec.name;
  seen_paths_.push_back(canonical);
  add(std::move(rec), true);
  return by_name_.at(name);
}

const PluginRecord* PluginRegistry::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second;
}

const PluginRecord& PluginRegistry::require(const std::string& name) const {
  auto dup = duplicates_.find(name);
  if (dup != duplicates_.end()) {
    std::string files;
    for (const auto& f : dup->second) files += (files.empty() ? "" : ", ") + f;
    throw PluginError("plugin name '" + name + "' is declared by several files: " + files +
                      " (remove one, or name the file with --plugin PATH)");
  }
  if (const auto* rec = find(name)) return *rec;
  if (auto refused = refused_.find(name); refused != refused_.end()) throw PluginError(refused->second);
  std::vector<std::string> names;
  for (const auto& [n, r] : by_name_) names.push_back(n);
  std::string where;
  for (const auto& dir : scanned_) {
    boost::system::error_code ec;
    where += (where.empty() ? "" : ", ") + dir + (fs::is_directory(dir, ec) ? "" : " (missing)");
  }
  throw ConfigError("unknown plugin '" + name + "'" + did_you_mean(name, names) + "; looked in " +
                    (where.empty() ? std::string("no directory") : where) +
                    "; add a directory with --plugin-dir DIR or SKEIN_PLUGIN_PATH=DIR, or name the file with "
                    "--plugin PATH.so; 'skein plugins' lists the available ones");
}

std::vector<const PluginRecord*> PluginRegistry::plugins() const {
  std::vector<const PluginRecord*> out;
  for (const auto& [n, r] : by_name_) out.push_back(&r);
  return out;
}

void* PluginRegistry::create_raw(const PluginRecord& rec, const PluginArgs& args,
                                 PluginKind expected) const {
  if (rec.kind != expected)
    throw ConfigError("plugin '" + rec.name + "' is a " + to_string(rec.kind) + " plugin, not a " +
                      to_string(expected) + " plugin");
  ensure_loaded(rec);
  // Every error names the plugin and where the config uses it ("model (plugin 'mlp')").
  const std::string plugin = "plugin '" + rec.name + "'";
  const std::string& owner = args.options.owner();
  const std::string who = owner.empty()                             ? plugin
                          : owner.find(plugin) == std::string::npos ? owner + " (" + plugin + ")"
                                                                    : owner;
  auto named = [&](const std::string& message) {
    return message.rfind(who, 0) == 0 ? message : who + ": " + message;
  };
  try {
    PluginScope scope(rec.name.c_str(), "being created");
    void* raw = rec.create(&args);
    if (!raw) throw PluginError(who + ": factory returned nothing");
    return raw;
  } catch (const OptionError& e) {
    throw OptionError(e.option(), named(e.what()));  // the option stays data: the caller locates it
  } catch (const ConfigError& e) {
    throw ConfigError(named(e.what()));
  } catch (const PluginError& e) {
    throw PluginError(named(e.what()));
  } catch (const std::exception& e) {
    // A failure inside a plugin (bad data, say) is a run failure, not a loading problem.
    throw std::runtime_error(named(e.what()));
  } catch (...) {
    throw std::runtime_error(who + ": the plugin threw a non-standard exception while being created");
  }
}

std::vector<std::string> default_plugin_dirs() {
  std::vector<std::string> dirs;
  boost::system::error_code ec;
  auto exe = boost::dll::program_location(ec);
  if (!ec) dirs.push_back((exe.parent_path().parent_path() / "lib" / "skein" / "plugins").string());
  // A program that embeds a session lives anywhere: the plugins installed
  // with this library (<prefix>/lib/skein/plugins) are found from it.
  auto lib = boost::dll::this_line_location(ec);
  if (!ec) {
    const std::string beside = (lib.parent_path() / "skein" / "plugins").string();
    boost::system::error_code e1, e2;
    if (dirs.empty() || fs::weakly_canonical(dirs.front(), e1) != fs::weakly_canonical(beside, e2))
      dirs.push_back(beside);
  }
  if (const char* extra = std::getenv(env::kPluginPath)) {
    std::stringstream ss(extra);
    std::string entry;
    while (std::getline(ss, entry, ':'))
      if (!entry.empty()) dirs.push_back(entry);
  }
  return dirs;
}

void scan_plugins(PluginRegistry& registry, const std::vector<std::string>& extra_dirs, bool warn_refused) {
  const char* debug = std::getenv(env::kDebugPlugins);
  registry.set_debug(debug && std::string(debug) != "0" && std::string(debug).size() > 0);
  for (const auto& dir : default_plugin_dirs()) registry.scan_directory(dir);
  for (const auto& dir : extra_dirs) {
    boost::system::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw ConfigError("--plugin-dir '" + dir + "' is not a directory" + (ec ? " (" + ec.message() + ")" : ""));
    const std::size_t known = registry.problems().size();
    registry.scan_directory(dir);
    // The user named this directory: what it refuses is said, not left for a
    // plugin of the same name found elsewhere to hide.
    for (std::size_t i = known; warn_refused && i < registry.problems().size(); ++i)
      warn("--plugin-dir: " + registry.problems()[i].message + "; not used");
  }
}

}  // namespace skein::core
