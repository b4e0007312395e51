#pragma once
// Libraries of custom operators: shared libraries that register operators
// with libtorch's dispatcher when loaded (TORCH_LIBRARY, TORCH_LIBRARY_IMPL),
// loaded as Python's torch.ops.load_library loads them, so that a program
// calling them (a .pt2 graph's torch.ops.mylib.op) finds them.
#include <string>
#include <vector>

#include "skein/detail/export.hpp"

namespace skein {

// Loads each of `paths` (once a process; never unloaded: the dispatcher
// keeps its kernels). Throws OptionError(option) in one line naming
// `owner`, the option and the file: no such regular file, or the loader's
// reason (a missing symbol, another libtorch, not a shared library).
SKEIN_EXPORT void load_operator_libraries(const std::vector<std::string>& paths, const std::string& owner,
                                          const std::string& option);

// Whether `qualified_name` ("mylib::op") was registered by a library loaded
// with load_operator_libraries: the user named that library, so its
// operators are trusted as computing (not refused as reaching files or
// processes, as operators of a namespace Skein has no rule for are).
SKEIN_EXPORT bool loaded_custom_operator(const std::string& qualified_name);

}  // namespace skein
