#pragma once
// The per-optimizer-step learning-rate curves of lr_scheduler, as pure
// functions of the step number (0: the rate of the first step). They follow
// PyTorch's definitions so that a recipe carries over value for value:
//   warm-up then cosine: SequentialLR(LinearLR(start_factor, total_iters=W),
//                        CosineAnnealingLR(T_max, eta_min), milestones=[W])
//   warm-up then linear: the same with LinearLR(1, eta_min/base, T_max)
//   one_cycle:           OneCycleLR(max_lr, total_steps, pct_start,
//                        anneal_strategy, div_factor, final_div_factor,
//                        three_phase=False), learning rate only
// Past the end of a curve the rate stays at its final value.
#include <algorithm>
#include <cmath>

namespace skein_lr {

inline double cosine_between(double from, double to, double progress) {
  return to + (from - to) * (1 + std::cos(M_PI * std::clamp(progress, 0.0, 1.0))) / 2;
}

inline double linear_between(double from, double to, double progress) {
  return from + (to - from) * std::clamp(progress, 0.0, 1.0);
}

struct WarmupDecay {
  double base = 0.1;          // the optimizer's rate: reached at the end of warm-up
  double eta_min = 0;         // reached `decay_steps` steps after warm-up
  long warmup_steps = 0;      // linear from start_factor * base to base
  double start_factor = 0;
  long decay_steps = 1;
  bool cosine = true;         // false: linear decay

  double at(long step) const {
    if (step < warmup_steps)
      return base * (start_factor + (1 - start_factor) * static_cast<double>(step) / static_cast<double>(warmup_steps));
    const double progress = static_cast<double>(step - warmup_steps) / static_cast<double>(std::max(1L, decay_steps));
    return cosine ? cosine_between(base, eta_min, progress) : linear_between(base, eta_min, progress);
  }
};

struct OneCycle {
  double max_lr = 0.1;
  long total_steps = 1;
  double pct_start = 0.3;
  double div_factor = 25;
  double final_div_factor = 1e4;
  bool cosine = true;  // anneal_strategy "cos"; false: "linear"

  double at(long step) const {
    const double initial = max_lr / div_factor;
    const double final_lr = initial / final_div_factor;
    // PyTorch's phase ends: the peak at step pct_start * total - 1, the end at total - 1.
    const double peak = pct_start * static_cast<double>(total_steps) - 1;
    const double end = static_cast<double>(total_steps) - 1;
    const double s = std::min(static_cast<double>(step), end);
    const auto anneal = [&](double from, double to, double progress) {
      return cosine ? cosine_between(from, to, progress) : linear_between(from, to, progress);
    };
    if (s <= peak) return anneal(initial, max_lr, s / peak);
    return anneal(max_lr, final_lr, (s - peak) / (end - peak));
  }
};

}  // namespace skein_lr
