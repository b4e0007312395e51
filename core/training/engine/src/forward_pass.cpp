#include "skein/training/engine/forward_pass.hpp"

#include <sstream>

#include <torch/utils.h>

#include "skein/training/engine/crash_report.hpp"
#include "skein/training/device/mixed_precision.hpp"
#include "skein/errors.hpp"

namespace skein::core {

namespace {

// A classifier must score every class the data has: a narrower output makes
// some labels out of range, a wider one silently trains classes that never occur.
void check_class_scores(const torch::Tensor& outputs, const torch::Tensor& targets, const DataInfo& info,
                        const std::string& model) {
  if (outputs.dim() != 2 || info.num_classes <= 0 || outputs.size(1) == info.num_classes) return;
  std::string message = "model '" + model + "' outputs " + std::to_string(outputs.size(1)) +
                        " class scores per sample, but the dataset has " + std::to_string(info.num_classes) +
                        " classes";
  // Labels 1..C count as C + 1 classes (0..C) when the count is inferred: the
  // batch's smallest label tells (looked at only on this failing path).
  const bool starts_at_one = targets.scalar_type() == torch::kLong && targets.numel() > 0 &&
                             targets.min().item<std::int64_t>() == 1;
  if (starts_at_one && outputs.size(1) == info.num_classes - 1)
    message += " (0 to " + std::to_string(info.num_classes - 1) + "): the labels start at 1; shift them to 0.." +
               std::to_string(info.num_classes - 2) + ", or give the model " + std::to_string(info.num_classes) +
               " outputs";
  throw ConfigError(message);
}

}  // namespace

torch::Tensor ForwardPass::outputs_of(const torch::Tensor& inputs) {
  PluginScope scope(p_.model_name.c_str(), "model forward");
  try {
    torch::Tensor outputs = p_.model.forward(p_.scaling.apply(inputs));
    // Autocast's bfloat16 or float16 outputs: the loss, metrics and
    // callbacks get float32, as the loss would compute in float32 anyway.
    if (outputs.scalar_type() == torch::kBFloat16 || outputs.scalar_type() == torch::kHalf)
      outputs = outputs.to(torch::kFloat32);
    return outputs;
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    // One line that names the model, the inputs and the cause (a TorchScript
    // error's first lines are only a header); the whole message to the log.
    const std::string what = e.what();
    if (p_.log && what.find('\n') != std::string::npos) *p_.log << "\nThe model's forward failed:\n" << what << "\n";
    std::ostringstream line;
    line << "model '" << p_.model_name << "' failed on inputs of shape " << inputs.sizes() << ": "
         << first_line(what);
    throw std::runtime_error(line.str());
  }
}

torch::Tensor ForwardPass::loss_of(Batch& batch) {
  const MixedPrecisionScope autocast(p_.precision, p_.device.is_cuda());
  batch.outputs = outputs_of(batch.inputs);
  if (!outputs_checked_) {
    if (p_.loss.classification()) check_class_scores(batch.outputs, batch.targets, p_.data_info, p_.model_name);
    outputs_checked_ = true;
  }
  PluginScope scope(p_.loss_name.c_str(), "loss compute");
  return p_.loss.compute(batch.outputs, batch.targets);
}

torch::Tensor ForwardPass::predict(const torch::Tensor& inputs) {
  torch::NoGradGuard no_grad;
  p_.model.eval();
  PluginScope scope(p_.model_name.c_str(), "model forward");
  return p_.model.forward(p_.scaling.apply(inputs.to(p_.device)));
}

}  // namespace skein::core
