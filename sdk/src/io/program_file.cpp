#include "program_file.hpp"

#include <sys/stat.h>

#include "sha256.hpp"
#include "skein/errors.hpp"
#include "skein/io/input_file.hpp"
#include "zip_record_sizes.hpp"

namespace skein {

ProgramFile read_program_file(const std::string& path, const std::string& owner, const std::string& kind) {
  const std::string option = owner + ": option 'path'";
  if (path.empty()) throw OptionError("path", option + " is empty (" + kind + ")");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw OptionError("path", option + ": no such file '" + path + "'");
  std::string bytes;
  try {
    bytes = read_regular_file(path);  // a directory, FIFO or device named as such
  } catch (const std::exception& e) {
    throw OptionError("path", option + ": " + e.what());
  }
  try {
    check_zip_record_sizes(path);
  } catch (const std::exception& e) {
    throw OptionError("path", option + ": '" + path + "' is not " + kind + " (" + e.what() + ")");
  }
  ProgramFile file{std::move(bytes), ""};
  file.sha256 = sha256_hex(file.bytes);
  return file;
}

}  // namespace skein
