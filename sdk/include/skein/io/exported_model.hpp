#pragma once
// A model exported from PyTorch 2: a program written by
// torch.export.save(torch.export.export(module, (x,)), "model.pt2").
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "skein/detail/export.hpp"
#include "skein/model.hpp"

namespace skein {

// Trains the program of a .pt2 archive. Its graph runs node by node through
// libtorch's dispatcher, each node an ATen operator called by its schema, so
// autograd, autocast and devices work as for any libtorch code. The module's
// parameters and buffers are registered under their Python names
// (features.0.weight), so optimizers, parallel wrappers, checkpoints and
// state dicts see a model like any other; callbacks reach this class through
// ctx.model<skein::ExportedModel>().
//
// Train and eval: torch.export records the mode the module was exported in;
// here the operator arguments that carry it follow the model's
// train()/eval() instead (a `train` or `training` flag: dropout, batch norm
// with running statistics, RNNs; `use_input_stats` of an instance norm with
// them; attention's `dropout_p`, 0 in eval), and in eval mode no buffer is
// written (BatchNorm's statistics and counter stay as they are). An operator
// that draws random numbers without such an argument is refused at load.
// Export the module in train mode (the default): what a module exported
// after .eval() decided from self.training stays (eval_mode_evidence). Python
// branches on self.training are fixed at export, as torch.export traced them.
// forward() refuses inputs outside the shapes the program was exported for
// (its torch.export.Dim ranges), as torch.export's own module does.
class SKEIN_EXPORT ExportedModel : public Model {
 public:
  // Throws OptionError naming `owner`, the file and, for a graph it cannot
  // run, the node and operator: a missing file, a file that is not a .pt2
  // archive of one program, a schema version it does not read, a forward that
  // does not take one tensor and return one, control flow (torch.cond, ...),
  // custom or unknown operators, and operators that reach files or processes
  // (unless script_file_ops_allowed()). Nothing runs before those checks.
  ExportedModel(const std::string& path, const std::string& owner);
  ~ExportedModel() override;
  torch::Tensor forward(const torch::Tensor& inputs) override;

  const std::string& path() const { return path_; }
  // The SHA-256 (hex) of the archive's bytes as loaded (pinned by checkpoints
  // as a TorchScript file is).
  const std::string& sha256() const { return sha256_; }
  // The operators of the graph, each once, in the order first called
  // ("aten::linear", ...).
  std::vector<std::string> operators() const;
  // Tied weights (a module's b.weight is its a.weight: one record in the
  // archive): the second name -> the parameter it is. Only the first is a
  // parameter of this model (trained once, saved once); the export writes
  // both names to that one record again.
  const std::map<std::string, std::string>& tied_parameters() const;
  // Where the graph shows that the module was exported in eval mode ("node
  // 'dropout' (torch.ops.aten.dropout.default) with train=False"), or empty.
  // The pt2 model warns of it (skein export's programs are in eval mode).
  const std::string& eval_mode_evidence() const;
  // What the pt2 model does with the operators of this libtorch (Markdown:
  // docs/pt2-operators.md); empty on a libtorch without torch.export.
  static std::string operator_table();
  // A scaling of raw inputs, x = (x / divide_by - mean) / std, with mean and
  // std float32 tensors that broadcast over a batch ([1], [C, 1, 1], or a
  // sample's shape).
  struct InputStep {
    double divide_by = 1;
    torch::Tensor mean, std;
  };
  // Bytes torch.export.load reads: the archive loaded as an inference
  // program (in eval mode: PyTorch's exported modules cannot change mode),
  // its weights (parameters and persistent buffers) replaced by this model's
  // current values, and `input_steps` done in order inside the program
  // before its first node, so that it takes raw inputs.
  std::string archive_with_current_weights(const std::vector<InputStep>& input_steps = {}) const;

 private:
  struct Program;
  std::unique_ptr<Program> program_;
  std::string path_;
  std::string sha256_;
};

}  // namespace skein
