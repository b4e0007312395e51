#include "skein/host/suggest.hpp"

#include "skein/run.hpp"

#include <algorithm>

namespace skein::core {

namespace {
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

// What other tools call a key (PyTorch Lightning, Keras, Hugging Face
// scripts): not typos, so no edit distance finds them.
struct Alias {
  const char* word;
  const char* meaning;  // a key path; its first segment must be a candidate
};
using namespace run_key;
constexpr Alias kAliases[] = {{"lr", "optimizer.lr"},           {"learning_rate", "optimizer.lr"},
                              {"weight_decay", "optimizer.weight_decay"}, {"momentum", "optimizer.momentum"},
                              {"epochs", kMaxEpochs},           {"num_epochs", kMaxEpochs},
                              {"n_epochs", kMaxEpochs},         {"num_train_epochs", kMaxEpochs},
                              {"batchsize", kBatchSize},        {"per_device_train_batch_size", kBatchSize},
                              {"optimiser", kOptimizer},        {"optim", kOptimizer},
                              {"dataset", kData},               {"criterion", kLoss},
                              {"loss_fn", kLoss},               {"strategy", kParallel},
                              {"gradient_accumulation_steps", kAccumulateSteps},
                              {"accumulate_grad_batches", kAccumulateSteps},
                              {"validation_split", kValidSplit}, {"val_split", kValidSplit},
                              {"num_workers", kDataWorkers}};

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  for (const auto& alias : kAliases) {
    if (word != alias.word) continue;
    const std::string meaning = alias.meaning;
    const std::string top = meaning.substr(0, meaning.find('.'));
    if (std::find(candidates.begin(), candidates.end(), top) != candidates.end())
      return " (did you mean '" + meaning + "'?)";
  }
  const std::string* best = nullptr;
  std::size_t best_distance = 0;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (!best || d < best_distance) {
      best = &c;
      best_distance = d;
    }
  }
  // Close enough to be a typo: at most a third of the word, and at least 1 edit allowed.
  std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  if (!best || best_distance > limit) return "";
  return " (did you mean '" + *best + "'?)";
}

}  // namespace skein::core
