#include "skein/io/operator_libraries.hpp"

#include <dlfcn.h>

#include <mutex>
#include <set>

#include <ATen/core/dispatch/Dispatcher.h>

#include "skein/errors.hpp"
#include "skein/io/input_file.hpp"

namespace skein {

namespace {
std::mutex loading;  // one load at a time: the operators it registers are told apart by a before and after
std::set<std::string>& loaded_operators() {
  static std::set<std::string> names;
  return names;
}
std::set<std::string> registered_operators() {
  std::set<std::string> names;
  for (const auto& name : c10::Dispatcher::singleton().getAllOpNames()) names.insert(name.name);
  return names;
}
}  // namespace

bool loaded_custom_operator(const std::string& qualified_name) {
  const std::lock_guard<std::mutex> lock(loading);
  return loaded_operators().count(qualified_name) > 0;
}

void load_operator_libraries(const std::vector<std::string>& paths, const std::string& owner,
                             const std::string& option) {
  const std::lock_guard<std::mutex> lock(loading);
  for (const auto& path : paths) {
    const std::string where = owner + ": option '" + option + "': ";
    try {
      regular_file_size(path);
    } catch (const std::exception& e) {
      throw OptionError(option, where + first_line(e.what()));
    }
    const std::set<std::string> before = registered_operators();
    // RTLD_GLOBAL: a second library may use the first one's symbols, as Python's loader allows.
    if (!::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      const char* why = ::dlerror();
      throw OptionError(option, where + "cannot load '" + path + "' (" + first_line(why ? why : "unknown reason") + ")");
    }
    for (const auto& name : registered_operators())
      if (!before.count(name)) loaded_operators().insert(name);
  }
}

}  // namespace skein
