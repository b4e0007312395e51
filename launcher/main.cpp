// skein: the command-line entry point. Maps errors to one line and an exit code:
// 0 success, 2 usage/config error, 1 any other failure.
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options/errors.hpp>

#include "commands.hpp"
#include "skein/core/failure_report.hpp"
#include "skein/errors.hpp"
#include "skein/version.hpp"

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
    "skein --version prints the version.\n";

int fail(int code, const std::string& message) {
  // A worker started by `skein train` reports to its launcher, whose summary
  // line carries the error. A config error is the same on every rank: the
  // launcher's line is then the only one. Other errors are printed here too,
  // each rank's own (the root cause and what it caused in its peers).
  const bool launcher_has_it = skein::core::report_failure(message, code);
  if (!(launcher_has_it && code == 2)) std::cerr << "skein: error: " << skein::first_line(message) << std::endl;
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::cout << "skein " << SKEIN_SDK_VERSION << " (plugin API " << SKEIN_API_MAJOR << "."
              << SKEIN_API_MINOR << ", " << skein::host_fingerprint() << ")\n";
    return 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "train") return skein::launcher::cmd_train(args);
    if (command == "plugins") return skein::launcher::cmd_plugins(args);
    if (command == "export") return skein::launcher::cmd_export(args);
    if (command == "predict") return skein::launcher::cmd_predict(args);
    return fail(2, "unknown command '" + command + "' (commands: train, plugins, export, predict)");
  } catch (const boost::program_options::error& e) {
    return fail(2, std::string(e.what()) + " (see skein " + command + " --help)");
  } catch (const skein::ConfigError& e) {
    return fail(2, e.what());
  } catch (const skein::PluginError& e) {
    return fail(2, e.what());
  } catch (const std::exception& e) {
    return fail(1, e.what());
  } catch (...) {
    return fail(1, "unknown failure");
  }
}
