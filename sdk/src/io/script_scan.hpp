#pragma once
// Looks through the code of a TorchScript archive, without running any of it,
// for operators that reach beyond the tensors it is given: files, other
// processes, the network.
#include <optional>
#include <string>

namespace skein {

struct ScriptOperatorUse {
  std::string function;  // "Net.forward" (qualified name without __torch__.)
  std::string op;        // "aten::from_file"
};

// The first such use in the archive `bytes` (torch.jit.save's format), or
// nullopt. Every class the archive's data and constants name is compiled,
// and every function and method they reach, nested blocks and forked
// subgraphs included; torch::jit::load would run the classes' __setstate__,
// which is why this compiles the code itself. Throws what libtorch throws
// for an archive it cannot read or compile.
std::optional<ScriptOperatorUse> find_outside_operator(const std::string& bytes);

}  // namespace skein
