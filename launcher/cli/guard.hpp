#pragma once
// How every skein command ends: errors become one line on stderr and an exit
// code (0 success, 2 usage/config error, 1 any other failure). Shared by the
// `skein` executable and libskein_commands (train, export, predict).
#include <functional>
#include <string>

namespace skein::launcher {

// Prints "skein: error: <first line of message>" (unless a launched worker's
// launcher reports it instead) and returns `code`.
int fail(int code, const std::string& message);

// Runs `body`, the command `command`; what it throws becomes fail(...).
int run_guarded(const std::string& command, const std::function<int()>& body);

}  // namespace skein::launcher
