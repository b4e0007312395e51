#pragma once
// For test plugins: when the library is loaded, its static initializer writes
// the file SKEIN_TEST_LOAD_MARKER names, so a test can see whether listing or
// refusing a plugin ran (loaded) it. Include in exactly one source per plugin.
#include <cstdlib>
#include <fstream>

namespace {
const bool kLoadMarker = [] {
  if (const char* path = std::getenv("SKEIN_TEST_LOAD_MARKER")) std::ofstream(path) << "loaded\n";
  return true;
}();
}  // namespace
