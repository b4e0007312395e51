#pragma once
// PowerSGD gradient compression (Vogels, Karimireddy and Jaggi, "PowerSGD:
// Practical Low-Rank Gradient Compression for Distributed Optimization",
// NeurIPS 2019; the scheme of PyTorch's ddp_comm_hooks/powerSGD_hook.py).
//
// Each matrix-shaped gradient (a parameter of two or more dimensions, seen
// as size(0) x the rest) whose compression pays is replaced, after a warm-up
// of uncompressed steps, by a rank-r approximation of the average over ranks:
//   M = this rank's gradient + the error it left last step
//   P = M Q;          all-reduce P (sum); orthonormalize P's columns
//   Q = Mᵀ P;         all-reduce Q, divided by the world size (the average)
//   gradient = P Qᵀ;  error = M - P Qᵀ (kept for the next step)
// The error compares this rank's own M with the shared approximation of
// the average, both at the gradient's scale, as in PyTorch's hook.
// Only P and Q travel: r (n + m) values instead of n m, in float32. Every
// rank computes P Qᵀ from the same reduced P and Q, so ranks stay
// bit-identical. Q is kept from step to step (warm start).
#include <cstdint>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/types.h>

namespace skein_parallel {

struct PowerSgdOptions {
  int rank = 4;                      // r: columns of P and Q
  std::int64_t warmup_steps = 100;   // optimizer steps all-reduced uncompressed first
  double min_compression_rate = 2;   // compress an n x m matrix only when n m >= rate * r (n + m)
};

class PowerSgd {
 public:
  // `shapes`: those of the gradients reduce() will be handed, in order, all
  // on `device` (P, Q and the error feedback live there too).
  PowerSgd(c10::intrusive_ptr<c10d::ProcessGroup> group, const std::vector<std::vector<std::int64_t>>& shapes,
           const PowerSgdOptions& options, const torch::Device& device);

  // Whether the matrix of this shape is worth compressing at this rank.
  static bool pays(at::IntArrayRef shape, const PowerSgdOptions& options);

  // Whether this step is still a warm-up step (all-reduce uncompressed).
  bool warming_up() const { return steps_ < options_.warmup_steps; }
  // Counts an optimizer step (compressed or not).
  void step_done() { ++steps_; }

  // Replaces each gradient (this rank's own) by the rank-r approximation of
  // their average over ranks. Blocks on two all-reduces.
  void reduce(std::vector<torch::Tensor>& grads);

  // Step count, Q and this rank's error feedback, as bytes (torch::save).
  std::string state() const;
  void load_state(const std::string& bytes);

 private:
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  PowerSgdOptions options_;
  std::vector<std::int64_t> rows_, cols_;  // each matrix as rows x cols
  torch::Tensor p_all_, q_all_, error_all_;  // flat buffers; views per matrix
  std::vector<torch::Tensor> p_, q_, error_;
  std::int64_t steps_ = 0;
};

}  // namespace skein_parallel
