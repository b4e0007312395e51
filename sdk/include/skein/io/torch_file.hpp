#pragma once
// Files written by Python's torch.save: zip archives holding a protocol-2
// pickle and the tensors' bytes.
#include <string>

#include <ATen/core/ivalue.h>

#include "skein/detail/export.hpp"

namespace skein {

// The object torch.save wrote into `path`: dicts (OrderedDict too, e.g. a
// state dict), lists, tuples, tensors, numbers and strings. libtorch's own
// reader takes no OrderedDict; this one does. Throws std::runtime_error
// naming the file for anything else (another format, a Python class).
SKEIN_EXPORT c10::IValue read_torch_save(const std::string& path);

// Rewrites a pickle written by Python so that collections.OrderedDict becomes
// a plain dict (its attributes, such as a state dict's _metadata, are
// dropped). Throws std::runtime_error for what it cannot rewrite.
SKEIN_EXPORT std::string plain_dict_pickle(const std::string& pickle);

}  // namespace skein
