#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "skein/core/trainer.hpp"

namespace skein::core {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const nlohmann::json& spec,
                                                        std::vector<torch::Tensor> params) {
  const std::string name = spec.at("name").get<std::string>();
  const double lr = spec.at("lr").get<double>();
  if (name == "sgd") {
    torch::optim::SGDOptions o(lr);
    o.momentum(spec.at("momentum").get<double>())
        .dampening(spec.at("dampening").get<double>())
        .nesterov(spec.at("nesterov").get<bool>())
        .weight_decay(spec.at("weight_decay").get<double>());
    if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0))
      throw ConfigError("optimizer.nesterov: needs momentum > 0 and dampening 0");
    return std::make_unique<torch::optim::SGD>(std::move(params), o);
  }
  auto betas = spec.at("betas").get<std::vector<double>>();
  if (betas.size() != 2) throw ConfigError("optimizer.betas: expected two numbers");
  auto set_common = [&](auto& o) {
    o.betas({betas[0], betas[1]})
        .eps(spec.at("eps").get<double>())
        .weight_decay(spec.at("weight_decay").get<double>())
        .amsgrad(spec.at("amsgrad").get<bool>());
  };
  if (name == "adam") {
    torch::optim::AdamOptions o(lr);
    set_common(o);
    return std::make_unique<torch::optim::Adam>(std::move(params), o);
  }
  torch::optim::AdamWOptions o(lr);
  set_common(o);
  return std::make_unique<torch::optim::AdamW>(std::move(params), o);
}

}  // namespace skein::core
