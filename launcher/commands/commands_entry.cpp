// libskein_commands: the commands that train or run models (and so need
// libtorch). The `skein` executable loads it only for them.
#include "commands.hpp"
#include "guard.hpp"
#include "skein/host/exit_codes.hpp"

extern "C" int skein_run_command(const char* command, int argc, const char* const* argv) {
  using namespace skein::launcher;
  const std::vector<std::string> args(argv, argv + argc);
  const std::string name = command;
  return run_guarded(name, [&] {
    if (name == "train") return cmd_train(args);
    if (name == "export") return cmd_export(args);
    if (name == "predict") return cmd_predict(args);
    return fail(skein::exit_code::kConfig, "unknown command '" + name + "' (commands: train, plugins, export, predict)");
  });
}
