#pragma once
// Warm start (init_from): the weights of a file people have, copied into a
// fresh model. Accepted: a state dict (torch.save(model.state_dict())), a
// dict holding one under "model_state_dict", "state_dict" or "model" (the
// PyTorch tutorial's checkpoint), a TorchScript archive's parameters, a skein
// checkpoint or run directory; names with DDP's "module." prefix.
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "skein/detail/export.hpp"

namespace skein::core {

struct WarmStartOptions {
  std::string source;   // file, checkpoint directory or run directory
  bool strict = true;   // false: entries missing from the file or unknown to the model are skipped, listed
};

// What a warm start did besides copying weights: lines for the run's log
// (`notes`: a prefix stripped, a nested dict used, counters kept) and, when
// not strict, what it skipped (`skipped`, for a warning).
struct WarmStartReport {
  std::vector<std::string> notes;
  std::string skipped;
};

// Copies the weights into `model`. Throws ConfigError starting with
// "init_from 'SOURCE'" for a file it cannot use, entries of another shape,
// and (when strict) any entry missing or unknown; lists a few names per kind,
// with counts.
// The state dict file `source` names: the file itself, a checkpoint
// directory's model_state_dict.pt, or that of a run directory's newest
// checkpoint. Throws ConfigError naming `source`.
SKEIN_EXPORT std::string state_dict_file_of(const std::string& source);

SKEIN_EXPORT WarmStartReport warm_start(torch::nn::Module& model, const WarmStartOptions& options);

}  // namespace skein::core
