// One training step (forward, cross-entropy, backward, SGD with momentum) of
// a model from Python, timed in C++: a torch.export program through Skein's
// pt2 model (skein::ExportedModel) or a TorchScript module through the
// torchscript model (skein::ScriptedModel). bench/pt2_speed.py runs it beside
// PyTorch eager on the same module (docs/BENCHMARKS.md, section 15).
//
//   program_step pt2|torchscript FILE BATCHES.pt STEPS
//
// BATCHES.pt: torch.save({"x": [B, N, ...], "y": [B, N] or [B, N, T]}); steps cycle over
// the B batches after as many warm-up steps. Prints the median ms per step.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "skein/io/exported_model.hpp"
#include "skein/io/scripted_model.hpp"
#include "skein/io/torch_file.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: program_step pt2|torchscript FILE BATCHES.pt STEPS\n";
    return 2;
  }
  const std::string kind = argv[1];
  std::unique_ptr<skein::Model> model;
  if (kind == "pt2") model = std::make_unique<skein::ExportedModel>(argv[2], "bench");
  else model = std::make_unique<skein::ScriptedModel>(argv[2], "bench");
  const auto data = skein::read_torch_save(argv[3]).toGenericDict();
  const auto x = data.at("x").toTensor(), y = data.at("y").toTensor();
  const long steps = std::stol(argv[4]);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  model->train();
  std::vector<double> ms;
  for (long s = -x.size(0); s < steps; ++s) {  // the first pass over the batches warms up
    const auto b = (s + x.size(0)) % x.size(0);
    const auto start = std::chrono::steady_clock::now();
    opt.zero_grad();
    const auto out = model->forward(x[b]);  // [N, C], or [N, T, C] of a language model
    torch::nn::functional::cross_entropy(out.reshape({-1, out.size(-1)}), y[b].reshape({-1})).backward();
    opt.step();
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    if (s >= 0) ms.push_back(took.count());
  }
  std::nth_element(ms.begin(), ms.begin() + static_cast<long>(ms.size() / 2), ms.end());
  std::cout << ms[ms.size() / 2] << std::endl;
  return 0;
}
