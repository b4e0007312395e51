#pragma once
#include <string>
#include <vector>

namespace skein::launcher {

// Each returns the process exit code; errors propagate as exceptions.
int cmd_train(const std::vector<std::string>& args);
int cmd_plugins(const std::vector<std::string>& args);
int cmd_export(const std::vector<std::string>& args);
int cmd_predict(const std::vector<std::string>& args);

}  // namespace skein::launcher
