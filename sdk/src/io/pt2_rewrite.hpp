#pragma once
// Rewrites of a serialized torch.export program (an archive's
// models/NAME.json) for `skein export --format pt2`: the program made an
// inference one, and input scaling built in so that it takes raw inputs, as
// a TorchScript export does.
#include "skein/torch_compat/export_schema.hpp"
#if SKEIN_TORCH_EXPORT_SCHEMA
#include <map>
#include <set>
#include <string>
#include <vector>

#include "skein/detail/json.hpp"
#include "skein/io/exported_model.hpp"

namespace skein::pt2 {

// Rewrites `program` (an archive's models/NAME.json) so that its user input
// becomes a new placeholder of raw inputs and the old one is computed from
// it by `steps` (aten div/sub nodes before the first node). A mean or std of
// more than one value becomes a lifted tensor constant: its entry is added to
// `constants_config` (data/constants/NAME_constants_config.json) and its bytes
// to `records` (archive path -> bytes).
void prepend_input_steps(nlohmann::json& program, nlohmann::json& constants_config,
                         std::map<std::string, std::string>& records,
                         const std::vector<ExportedModel::InputStep>& steps);

// Every argument that follows the mode (`mode_arguments`, by node: see
// Graph::mode_arguments) set to its eval value (false, or a dropout_p of 0),
// and the nodes named in `buffer_writes` (those eval mode skips: BatchNorm's
// counter) removed. PyTorch's exported modules cannot change mode
// (.eval() raises), so an export for inference must be in eval mode itself.
void to_eval_mode(nlohmann::json& program, const std::set<std::string>& buffer_writes,
                  const std::map<std::string, std::vector<std::string>>& mode_arguments);

}  // namespace skein::pt2
#endif
