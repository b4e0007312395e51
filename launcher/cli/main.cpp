// skein: the command-line entry point. Maps errors to one line and an exit code:
// 0 success, 2 usage/config error, 1 any other failure.
//
// The executable does not link libtorch: --help, the commands' --help and
// `skein plugins` run without it (plugin manifests are read from the files,
// never loaded). train, export and predict live in libskein_commands
// (<prefix>/lib, next to the plugins' lib/skein), loaded only for them, after
// their arguments parsed, and for --version (the libtorch it runs with).
#include <dlfcn.h>

#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/dll/runtime_symbol_info.hpp>

#include "command_options.hpp"
#include "commands.hpp"
#include "guard.hpp"
#include "skein/host/exit_codes.hpp"
#include "skein/detail/version.hpp"

namespace {

const char* kUsage =
    "usage: skein <command> [options]\n"
    "\n"
    "commands:\n"
    "  train     train from a JSON config (skein train --help)\n"
    "  plugins   list discovered plugins; 'plugins describe NAME' shows options\n"
    "  export    write a trained model for Python (skein export --help)\n"
    "  predict   run a trained model on a .npy file of inputs (skein predict --help)\n"
    "\n"
    "skein --version prints the version and the libtorch built with and run with.\n";

// <prefix>/lib/libskein_commands.so for <prefix>/bin/skein (the build tree
// has the same layout).
std::string commands_library() {
  boost::system::error_code ec;
  const auto exe = boost::dll::program_location(ec);
  if (ec) return "libskein_commands.so";  // then the RUNPATH decides
  return (exe.parent_path().parent_path() / "lib" / "libskein_commands.so").string();
}

// Loads libtorch (through libskein_core). The library stays loaded:
// libtorch cannot be unloaded safely.
void* load_commands_library() {
  const std::string path = commands_library();
  // RTLD_GLOBAL: the libraries the training side brings in (libtorch, libskein_sdk,
  // libskein_core) are seen by the plugins as if the executable linked them.
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!library) {
    const char* why = ::dlerror();
    throw std::runtime_error("cannot load the training side of skein (" + path + "): " + (why ? why : "unknown error"));
  }
  return library;
}

template <class Function>
Function* entry_point(void* library, const char* name) {
  auto* entry = reinterpret_cast<Function*>(::dlsym(library, name));
  if (!entry) throw std::runtime_error(commands_library() + " has no entry point " + name + " (a mismatched installation?)");
  return entry;
}

// Runs the command in libskein_commands.
int run_in_commands_library(const std::string& command, const std::vector<std::string>& args) {
  auto* entry = entry_point<decltype(skein_run_command)>(load_commands_library(), SKEIN_COMMANDS_ENTRY);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return entry(command.c_str(), static_cast<int>(argv.size()), argv.data());
}

// skein --version: what this skein was built with (no libtorch needed), then
// what it runs with, which loads libtorch (about half a second).
int print_version() {
  std::cout << "skein " << SKEIN_SDK_VERSION << " (plugin API " << SKEIN_API_MAJOR << "." << SKEIN_API_MINOR
            << ")\n  built with:   libtorch " << TORCH_VERSION << (SKEIN_BUILT_WITH_CUDA ? " with CUDA" : ", CPU only")
            << ", C++" << SKEIN_CXX_STANDARD << " (" << skein::host_fingerprint() << ")\n" << std::flush;
  try {
    auto* report = entry_point<decltype(skein_runtime_report)>(load_commands_library(), SKEIN_RUNTIME_REPORT);
    std::string line(512, '\0');
    line.resize(static_cast<std::size_t>(std::min(report(line.data(), static_cast<int>(line.size())), 511)));
    std::cout << "  running with: " << line << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cout << "  running with: unknown: " << e.what() << "\n";
    return 1;
  }
}

// Parses the arguments here first: --help and usage errors need no libtorch.
// Returns false when the help was printed.
bool parse_here(const std::string& command, const std::vector<std::string>& args) {
  using namespace skein::launcher;
  if (command == "train") {
    TrainArgs parsed;
    return parse_train_args(args, parsed);
  }
  if (command == "export") {
    ExportArgs parsed;
    return parse_export_args(args, parsed);
  }
  PredictArgs parsed;
  return parse_predict_args(args, parsed);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") return print_version();
  const std::string command = args[0];
  args.erase(args.begin());
  return skein::launcher::run_guarded(command, [&] {
    if (command == "plugins") return skein::launcher::cmd_plugins(args);
    if (command == "train" || command == "export" || command == "predict") {
      if (!parse_here(command, args)) return 0;  // --help
      return run_in_commands_library(command, args);
    }
    return skein::launcher::fail(skein::exit_code::kConfig, "unknown command '" + command + "' (commands: train, plugins, export, predict)");
  });
}
