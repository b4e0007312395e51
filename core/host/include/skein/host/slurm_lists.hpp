#pragma once
// Slurm's compressed list syntaxes, as srun writes them into a task's
// environment. Torch-free (libskein_host).
#include <string>
#include <vector>

#include "skein/detail/export.hpp"

namespace skein::core {

// A host list: "gpu[01-04,07],cpu3" -> gpu01 gpu02 gpu03 gpu04 gpu07 cpu3.
// Zero padding is kept ("[08-10]" -> 08 09 10); several bracket groups in one
// name multiply out, the first group outermost ("a[1-2]b[3-4]" -> a1b3 a1b4
// a2b3 a2b4). A malformed list is one ConfigError naming `variable` and the list.
SKEIN_EXPORT std::vector<std::string> expand_slurm_hostlist(const std::string& list, const std::string& variable);

// Tasks per node: "2(x3),1" -> 2 2 2 1. A malformed value is one ConfigError
// naming `variable` and the value.
SKEIN_EXPORT std::vector<int> expand_slurm_tasks_per_node(const std::string& value, const std::string& variable);

}  // namespace skein::core
