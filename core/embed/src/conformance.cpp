// What every plugin of a kind must do (skein/testing.hpp): the checks a
// plugin's own test runs, so that each kind's contract is written once.
#include <cmath>
#include <sstream>

#include <torch/nn/modules/linear.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize.h>

#include "skein/testing.hpp"
#include "skein/errors.hpp"
#include "skein/loss.hpp"
#include "skein/optimizer.hpp"
#include "skein/training/engine/step_pieces.hpp"

namespace skein::testing {

namespace {

std::string shape_text(const torch::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

// A least-squares problem on a linear layer: the loss of `layer` on fixed data.
struct LeastSquares {
  torch::Tensor x = torch::randn({32, 4}, torch::TensorOptions().dtype(torch::kFloat32));
  torch::Tensor y = x.matmul(torch::tensor({1.0f, -2.0f, 0.5f, 3.0f})).unsqueeze(1);
  torch::Tensor loss(torch::nn::Linear& layer) const { return (layer->forward(x) - y).pow(2).mean(); }
};

// `n` steps; with `pieces`, of an optimizer over them, as the trainer takes them.
void steps(torch::optim::Optimizer& optimizer, torch::nn::Linear& layer, const LeastSquares& data, int n,
           const core::StepPieces* pieces = nullptr) {
  for (int i = 0; i < n; ++i) {
    optimizer.zero_grad();
    if (pieces) pieces->after_zero_grad();
    data.loss(layer).backward();
    if (pieces) pieces->before_step();
    optimizer.step();
  }
}

// An elementwise optimizer (skein::ElementwiseOptimizer) stepping the
// weight in pieces of 3 and 1 elements does what it does stepping it whole,
// and the state tensors it names hold one value per element of a piece.
std::string elementwise_problem(OptimizerFactory& factory, const ElementwiseOptimizer& elementwise,
                                const LeastSquares& data) {
  torch::nn::Linear whole(4, 1), cut(4, 1);
  {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < whole->parameters().size(); ++i) cut->parameters()[i].copy_(whole->parameters()[i]);
  }
  const core::StepPieces pieces(cut->parameters(), 3);
  auto a = factory.create(whole->parameters());
  auto b = factory.create(pieces.tensors());
  steps(*a, whole, data, 5);
  steps(*b, cut, data, 5, &pieces);
  for (std::size_t i = 0; i < whole->parameters().size(); ++i)
    if (!torch::allclose(whole->parameters()[i], cut->parameters()[i], 1e-6, 1e-7))
      return "declared elementwise, it steps a parameter cut in pieces otherwise than whole";
  for (auto& entry : b->state())
    for (const auto* t : elementwise.state_tensors(*entry.second))
      if (t->defined() && t->numel() != 3 && t->numel() != 1)
        return "a state tensor state_tensors names holds " + std::to_string(t->numel()) +
               " values for a parameter (piece) of 3 or 1 elements";
  return "";
}

}  // namespace

std::string model_problem(Harness& harness, const std::string& name, const nlohmann::json& options,
                          const DataInfo& info) {
  torch::manual_seed(0);
  auto model = harness.create<Model>(name, options, &info);
  std::vector<std::int64_t> batch_shape = info.input_shape;
  for (std::int64_t n : {1, 3}) {
    batch_shape.insert(batch_shape.begin(), n);
    const auto out = model->forward(torch::randn(batch_shape));
    batch_shape.erase(batch_shape.begin());
    if (out.dim() != 2 || out.size(0) != n || out.size(1) != info.num_classes)
      return "outputs " + shape_text(out) + " for " + std::to_string(n) + " samples; expected [" + std::to_string(n) +
             ", " + std::to_string(info.num_classes) + "]";
  }
  const auto params = model->parameters();
  if (params.empty()) return "has no parameters";
  bool trains = false;
  for (const auto& p : params) trains = trains || p.requires_grad();
  if (!trains) return "no parameter requires a gradient";
  auto copy = harness.create<Model>(name, options, &info);
  std::stringstream bytes;
  torch::save(model, bytes);
  torch::load(copy, bytes);
  model->eval();
  copy->eval();
  batch_shape.insert(batch_shape.begin(), 2);
  const auto x = torch::randn(batch_shape);
  if (!torch::allclose(model->forward(x), copy->forward(x)))
    return "a copy loaded from torch::save's bytes computes other outputs";
  return "";
}

std::string optimizer_problem(Harness& harness, const std::string& name, const nlohmann::json& options) {
  torch::manual_seed(0);
  const LeastSquares data;
  auto factory = harness.create<OptimizerFactory>(name, options);
  torch::nn::Linear layer(4, 1);
  auto optimizer = factory->create(layer->parameters());
  const double before = data.loss(layer).item<double>();
  steps(*optimizer, layer, data, 30);
  const double after = data.loss(layer).item<double>();
  if (!(after < before)) return "30 steps took the loss from " + std::to_string(before) + " to " + std::to_string(after);
  for (auto& group : optimizer->param_groups())
    if (!(group.options().get_lr() > 0)) return "a parameter group's learning rate is not positive";

  // Resumed from its saved state, it continues exactly as the original.
  torch::nn::Linear original(4, 1), resumed(4, 1);
  auto first = factory->create(original->parameters());
  steps(*first, original, data, 5);
  torch::serialize::OutputArchive out;
  first->save(out);
  std::ostringstream saved;
  out.save_to(saved);
  {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < original->parameters().size(); ++i)
      resumed->parameters()[i].copy_(original->parameters()[i]);
  }
  auto second = factory->create(resumed->parameters());
  std::istringstream in(saved.str());
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  second->load(archive);
  steps(*first, original, data, 5);
  steps(*second, resumed, data, 5);
  for (std::size_t i = 0; i < original->parameters().size(); ++i)
    if (!torch::allclose(original->parameters()[i], resumed->parameters()[i]))
      return "resumed from its saved state, it takes other steps than the original";
  if (const auto* elementwise = dynamic_cast<const ElementwiseOptimizer*>(factory.get()))
    return elementwise_problem(*factory, *elementwise, data);
  return "";
}

std::string loss_problem(Harness& harness, const std::string& name, const nlohmann::json& options,
                         const DataInfo& info) {
  torch::manual_seed(0);
  auto loss = harness.create<Loss>(name, options, &info);
  const std::int64_t n = 6, width = info.num_classes;
  const auto outputs = torch::randn({n, width}).requires_grad_();
  const auto targets =
      loss->classification() ? torch::randint(0, width, {n}, torch::kLong) : torch::randn({n, width});
  try {
    loss->check_targets(targets, info, "train");
  } catch (const std::exception& e) {
    return "refuses targets " + shape_text(targets) + " of its kind: " + first_line(e.what());
  }
  const auto value = loss->compute(outputs, targets);
  if (value.dim() != 0) return "computes " + shape_text(value) + ", not a scalar";
  const double before = value.item<double>();
  if (!std::isfinite(before)) return "computes " + std::to_string(before);
  value.backward();
  if (!outputs.grad().defined() || outputs.grad().sizes() != outputs.sizes())
    return "gives the outputs no gradient";
  const auto stepped = (outputs - 0.01 * outputs.grad()).detach();
  const double after = loss->compute(stepped, targets).item<double>();
  if (!(after < before)) return "a step against its gradient takes it from " + std::to_string(before) + " to " +
                                std::to_string(after);
  return "";
}

}  // namespace skein::testing
