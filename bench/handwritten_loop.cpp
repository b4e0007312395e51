// The baseline for the overhead benchmark: the same training as
// bench/configs/overhead*.json written directly against libtorch, the way a
// user would without a trainer. Prints one JSON line per epoch.
//   handwritten_loop [--dir D] [--epochs N] [--seed S]
#include <chrono>
#include <iostream>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "idx_file.hpp"

namespace {

torch::Tensor images(const std::string& path) {
  auto a = skein_idx::read_idx(path);
  return torch::from_blob(a.data.data(), {static_cast<long>(a.data.size())}, torch::kUInt8)
      .to(torch::kFloat32)
      .div_(255.0)
      .sub_(0.2860)
      .div_(0.3530)
      .reshape({a.dims[0], 1, a.dims[1], a.dims[2]});
}

torch::Tensor labels(const std::string& path) {
  auto a = skein_idx::read_idx(path);
  return torch::from_blob(a.data.data(), {a.dims[0]}, torch::kUInt8).to(torch::kLong);
}

}  // namespace

// --steps N: the per-step cost alone, on one fixed batch of 64 (the tensors
// bench/c_train_step.c feeds skein_train_step): microseconds per step, the
// best of 5 rounds of N steps.
int step_benchmark(long steps) {
  const long batch = 64, features = 784;
  std::vector<float> xs(batch * features);
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = static_cast<float>(static_cast<unsigned>(i * 7919u) % 1000u) / 1000.0f - 0.5f;
  auto x = torch::from_blob(xs.data(), {batch, features}, torch::kFloat);
  auto y = torch::arange(batch, torch::kLong).remainder(10);
  torch::manual_seed(0);
  torch::nn::Sequential model(torch::nn::Linear(784, 256), torch::nn::ReLU(), torch::nn::Linear(256, 128),
                              torch::nn::ReLU(), torch::nn::Linear(128, 10));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  model->train();
  double loss_value = 0, best = 1e30;
  auto one_step = [&] {
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    loss_value = loss.item<double>();
  };
  for (int i = 0; i < 50; ++i) one_step();  // warm-up
  for (int round = 0; round < 5; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < steps; ++i) one_step();
    const double us = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps * 1e6;
    best = std::min(best, us);
  }
  std::cout << "{\"program\": \"handwritten_loop --steps\", \"us_per_step\": " << best << ", \"loss\": " << loss_value
            << "}" << std::endl;
  return 0;
}

int main(int argc, char** argv) {
  std::string dir = "/usr/share/datasets/fashion-mnist";
  long epochs = 3;
  std::uint64_t seed = 0;
  long steps = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dir") dir = argv[i + 1];
    else if (flag == "--epochs") epochs = std::stol(argv[i + 1]);
    else if (flag == "--seed") seed = std::stoull(argv[i + 1]);
    else if (flag == "--steps") steps = std::stol(argv[i + 1]);
  }
  torch::set_num_threads(1);
  if (steps > 0) return step_benchmark(steps);
  auto x = images(dir + "/train-images-idx3-ubyte.gz");
  auto y = labels(dir + "/train-labels-idx1-ubyte.gz");
  // 10% held out for validation, as valid_split 0.1 does.
  const long n = x.size(0), n_valid = n / 10;
  auto perm = torch::randperm(n, at::make_generator<at::CPUGeneratorImpl>(seed), torch::kLong);
  auto vx = x.index_select(0, perm.slice(0, 0, n_valid)), vy = y.index_select(0, perm.slice(0, 0, n_valid));
  auto tx = x.index_select(0, perm.slice(0, n_valid)), ty = y.index_select(0, perm.slice(0, n_valid));

  torch::manual_seed(seed);
  torch::nn::Sequential model(torch::nn::Flatten(), torch::nn::Linear(784, 256), torch::nn::ReLU(),
                              torch::nn::Linear(256, 128), torch::nn::ReLU(), torch::nn::Linear(128, 10));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  const long batch = 64;
  for (long epoch = 1; epoch <= epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    model->train();
    auto order = torch::randperm(tx.size(0), at::make_generator<at::CPUGeneratorImpl>(seed + epoch), torch::kLong);
    double loss_sum = 0;
    for (long lo = 0; lo < tx.size(0); lo += batch) {
      auto idx = order.slice(0, lo, std::min(lo + batch, tx.size(0)));
      auto loss = torch::nn::functional::cross_entropy(model->forward(tx.index_select(0, idx)), ty.index_select(0, idx));
      opt.zero_grad();
      loss.backward();
      opt.step();
      loss_sum += loss.item<double>();
    }
    torch::NoGradGuard no_grad;
    model->eval();
    long correct = 0;
    for (long lo = 0; lo < vx.size(0); lo += batch) {
      auto out = model->forward(vx.slice(0, lo, lo + batch));
      correct += out.argmax(1).eq(vy.slice(0, lo, lo + batch)).sum().item<long>();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "{\"epoch\": " << epoch << ", \"dur\": " << seconds
              << ", \"samples_per_s\": " << tx.size(0) / seconds
              << ", \"valid_acc\": " << double(correct) / vx.size(0) << "}" << std::endl;
  }
}
