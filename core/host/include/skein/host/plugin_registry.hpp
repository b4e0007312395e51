#pragma once
// Finds plugin libraries, checks their declared metadata, and creates objects.
// Libraries are never unloaded: every object a plugin creates holds its
// library, and the registry keeps a process-wide reference too (libtorch's
// static registrations make unloading unsafe anyway).
#include <atomic>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "skein/plugin.hpp"

namespace boost::dll {
class shared_library;
}

namespace skein::core {

// What the registry knows of one plugin file. Discovery reads the manifest
// section without loading the library; the library is loaded (and its
// skein_plugin_info checked against the manifest) when an object is created.
struct PluginRecord {
  std::string path;
  std::string name;
  std::string version;
  std::string description;
  PluginKind kind{};
  std::vector<OptionSpec> options;  // views into `text` or the library's constant data
  std::shared_ptr<std::deque<std::string>> text;  // owns the manifest's strings
  // Filled when the library is loaded (lazily: the registry is otherwise const).
  mutable CreateFn create = nullptr;
  mutable std::shared_ptr<boost::dll::shared_library> library;
};

// A file that was found but could not be used, and why.
struct PluginProblem {
  std::string path;
  std::string message;
};

class SKEIN_EXPORT PluginRegistry {
 public:
  PluginRegistry();
  ~PluginRegistry();

  // When set, every discovery decision is printed to stderr (SKEIN_DEBUG_PLUGINS=1).
  void set_debug(bool on) { debug_ = on; }

  // Scans a directory for *.so files. Bad files become problems(), never errors;
  // a file or directory others could have written is refused (plugin_file_check.hpp).
  void scan_directory(const std::string& dir);
  // Loads one file named explicitly; throws PluginError when it is not usable.
  // An explicit file wins over a discovered plugin of the same name.
  const PluginRecord& load_file(const std::string& path);

  // Looks a plugin up by name; throws ConfigError (unknown, with suggestion,
  // the directories scanned and how to add one) or PluginError (ambiguous: two files declare the name; or its file was refused, and why).
  const PluginRecord& require(const std::string& name) const;
  const PluginRecord* find(const std::string& name) const;

  std::vector<const PluginRecord*> plugins() const;
  const std::vector<PluginProblem>& problems() const { return problems_; }
  // How many times this registry opened a plugin library: each plugin's at
  // most once, however many threads create it.
  std::size_t libraries_opened() const { return opened_.load(); }

  // Creates an object of the plugin's kind; the object keeps its library alive.
  template <class Interface>
  std::shared_ptr<Interface> create(const PluginRecord& rec, const PluginArgs& args) const {
    void* raw = create_raw(rec, args, kind_of<Interface>::value);
    auto library = rec.library;
    return std::shared_ptr<Interface>(static_cast<Interface*>(raw),
                                      [library](Interface* p) { delete p; });
  }

 private:
  void* create_raw(const PluginRecord& rec, const PluginArgs& args, PluginKind expected) const;
  PluginRecord inspect(const std::string& path) const;  // throws PluginError
  std::optional<PluginRecord> read_manifest(const std::string& path) const;
  PluginRecord load_library(const std::string& path) const;
  void ensure_loaded(const PluginRecord& rec) const;
  void add(PluginRecord rec, bool explicit_file);
  void remember_refused(const std::string& path, const std::string& why);
  void debug(const std::string& msg) const;

  std::map<std::string, PluginRecord> by_name_;
  std::map<std::string, std::vector<std::string>> duplicates_;  // name -> all files
  std::map<std::string, bool> explicit_;                        // name -> loaded explicitly
  std::vector<std::string> seen_paths_;
  std::vector<PluginProblem> problems_;
  std::map<std::string, std::string> refused_;  // name -> why its file was refused
  std::vector<std::string> scanned_;             // each directory asked for, as given
  bool debug_ = false;
  mutable std::mutex load_mutex_;  // ensure_loaded: rank threads create plugins at once
  mutable std::atomic<std::size_t> opened_{0};
};

// The directories scanned by default: <prefix>/lib/skein/plugins next to the
// running executable, then every entry of SKEIN_PLUGIN_PATH.
SKEIN_EXPORT std::vector<std::string> default_plugin_dirs();

// A registry filled from the default plugin directories, then `extra_dirs`.
// SKEIN_DEBUG_PLUGINS=1 makes it explain every decision on stderr. What
// `extra_dirs` (named by the user) refuse is a warning unless
// `warn_refused` is false (for a caller that lists problems() itself).
SKEIN_EXPORT void scan_plugins(PluginRegistry& registry, const std::vector<std::string>& extra_dirs,
                               bool warn_refused = true);

}  // namespace skein::core
