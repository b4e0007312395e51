#pragma once
// Helpers for optimizer plugins: one libtorch optimizer type as a plugin, and
// option readers that fail naming the option.
#include <memory>
#include <string>
#include <vector>

#include <type_traits>

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include "skein/detail/export.hpp"
#include "skein/kit/option_lists.hpp"  // SKEIN_ADAM_OPTIONS
#include "skein/optimizer.hpp"
#include "skein/options.hpp"
#include "skein/plugin.hpp"

namespace skein {

// The per-element state tensors of libtorch's elementwise optimizers (kit
// 2.1): a specialization for each, whose `State` is its parameter state type
// and `tensors` lists that state's tensors of the parameter's shape. A
// LibtorchOptimizer of a type with one is a skein::ElementwiseOptimizer.
template <class TorchOptimizer>
struct ElementwiseStateOf;  // not specialized: not known to be elementwise

template <>
struct ElementwiseStateOf<torch::optim::SGD> {
  using State = torch::optim::SGDParamState;
  static std::vector<torch::Tensor*> tensors(State& s) { return {&s.momentum_buffer()}; }
};
// Adam's and AdamW's states: the same members, two types.
template <class AdamLikeState>
struct AdamLikeStateTensors {
  using State = AdamLikeState;
  static std::vector<torch::Tensor*> tensors(State& s) { return {&s.exp_avg(), &s.exp_avg_sq(), &s.max_exp_avg_sq()}; }
};
template <>
struct ElementwiseStateOf<torch::optim::Adam> : AdamLikeStateTensors<torch::optim::AdamParamState> {};
template <>
struct ElementwiseStateOf<torch::optim::AdamW> : AdamLikeStateTensors<torch::optim::AdamWParamState> {};
template <>
struct ElementwiseStateOf<torch::optim::RMSprop> {
  using State = torch::optim::RMSpropParamState;
  static std::vector<torch::Tensor*> tensors(State& s) { return {&s.square_avg(), &s.momentum_buffer(), &s.grad_avg()}; }
};
template <>
struct ElementwiseStateOf<torch::optim::Adagrad> {
  using State = torch::optim::AdagradParamState;
  static std::vector<torch::Tensor*> tensors(State& s) { return {&s.sum()}; }
};

namespace detail {

template <class T, class = void>
struct KnownElementwise : std::false_type {};
template <class T>
struct KnownElementwise<T, std::void_t<typename ElementwiseStateOf<T>::State>> : std::true_type {};

struct NotElementwise {};

// skein::ElementwiseOptimizer through ElementwiseStateOf<TorchOptimizer>.
template <class TorchOptimizer>
class ElementwiseOf : public ElementwiseOptimizer {
 public:
  std::vector<torch::Tensor*> state_tensors(torch::optim::OptimizerParamState& state) const override {
    using Traits = ElementwiseStateOf<TorchOptimizer>;
    return Traits::tensors(dynamic_cast<typename Traits::State&>(state));
  }
};

}  // namespace detail

// An optimizer plugin over one libtorch optimizer type: its options are
// read once, by the plugin's constructor; create() makes the optimizer.
// Elementwise (skein::ElementwiseOptimizer) when ElementwiseStateOf knows
// the type.
template <class TorchOptimizer, class TorchOptions>
class LibtorchOptimizer : public OptimizerFactory,
                          public std::conditional_t<detail::KnownElementwise<TorchOptimizer>::value,
                                                    detail::ElementwiseOf<TorchOptimizer>, detail::NotElementwise> {
 public:
  explicit LibtorchOptimizer(TorchOptions options) : options_(std::move(options)) {}
  std::unique_ptr<torch::optim::Optimizer> create(std::vector<torch::Tensor> params) override {
    return std::make_unique<TorchOptimizer>(std::move(params), options_);
  }

 private:
  TorchOptions options_;
};

// The plugin class itself, for an optimizer whose libtorch options `Read`
// makes from the plugin's options:
//   using Sgd = skein::LibtorchOptimizerOf<torch::optim::SGD, torch::optim::SGDOptions, read>;
//   SKEIN_PLUGIN(Sgd, optimizer, "sgd", ...)
template <class TorchOptimizer, class TorchOptions, TorchOptions (*Read)(const Options&)>
class LibtorchOptimizerOf final : public LibtorchOptimizer<TorchOptimizer, TorchOptions> {
 public:
  explicit LibtorchOptimizerOf(const PluginArgs& args) : LibtorchOptimizer<TorchOptimizer, TorchOptions>(Read(args.options)) {}
};

// Option readers that fail with the option named (ConfigError).
// A positive, finite number (e.g. lr).
SKEIN_EXPORT double read_positive(const Options& options, const std::string& key);
// A finite number >= 0 (e.g. momentum, weight_decay, eps).
SKEIN_EXPORT double read_nonnegative(const Options& options, const std::string& key);
// The same checks of a value already read (SKEIN_OPTIONS_STRUCT): returns it.
SKEIN_EXPORT double require_positive(const Options& options, const std::string& key, double value);
SKEIN_EXPORT double require_nonnegative(const Options& options, const std::string& key, double value);

// The libtorch options of Adam or AdamW from the plugin's options struct
// (SKEIN_OPTIONS_STRUCT of SKEIN_ADAM_OPTIONS, whose ranges the host checked):
//   torch::optim::AdamOptions o = skein::adam_like_options<torch::optim::AdamOptions>(AdamValues(opt), opt);
template <class AdamLikeOptions, class Values>
AdamLikeOptions adam_like_options(const Values& v, const Options& options) {
  if (v.betas.size() != 2) options.fail(Values::names::betas, "expected two numbers");
  AdamLikeOptions o(v.lr);
  o.betas({v.betas[0], v.betas[1]}).eps(v.eps).weight_decay(v.weight_decay).amsgrad(v.amsgrad);
  return o;
}

// The options Adam and AdamW share: betas, eps, weight_decay, amsgrad, read
// by name (kit 1.0; adam_like_options reads them from the options struct).
template <class AdamLikeOptions>
void read_adam_options(const Options& options, AdamLikeOptions& into) {
  const auto betas = options.get_number_list("betas");
  if (betas.size() != 2) options.fail("betas", "expected two numbers");
  for (double b : betas)
    if (!(b >= 0 && b < 1)) options.fail("betas", "each must be in [0, 1)");
  into.betas({betas[0], betas[1]})
      .eps(read_nonnegative(options, "eps"))
      .weight_decay(read_nonnegative(options, "weight_decay"))
      .amsgrad(options.get_bool("amsgrad"));
}

}  // namespace skein
