#pragma once
// The file of a model written in Python (a TorchScript module, a .pt2
// program), read as both model plugins read it: its option named, its bytes
// read once (what is checked, hashed and loaded is the same whatever
// happens to the file meanwhile), its zip records' sizes checked.
#include <string>

namespace skein {

struct ProgramFile {
  std::string bytes;
  std::string sha256;  // hex, of `bytes`
};

// Throws OptionError ("path") naming `owner` and the file: an empty path
// (`kind` says what belongs there: "a TorchScript module saved by
// torch.jit.save"), no such regular file, unreadable, or not such a zip archive.
ProgramFile read_program_file(const std::string& path, const std::string& owner, const std::string& kind);

}  // namespace skein
