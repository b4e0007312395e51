#pragma once
// Config errors located at a key: where a value came from (the config file or
// a --set flag) is found from the key's path, never from the message's text.
#include <string>

#include "skein/errors.hpp"

namespace skein::core {

// A ConfigError about one key of the config, `path` dotted from the top
// ("callbacks.1.patience", "seed") and carried as data, for blame().
class SKEIN_EXPORT ConfigPathError : public ConfigError {
 public:
  ConfigPathError(std::string path, const std::string& message);
  ~ConfigPathError() override;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace skein::core
