#include "skein/training/engine/train_step.hpp"

#include <algorithm>
#include <optional>

#include "skein/training/device/large_blocks.hpp"
#include "skein/training/engine/optimizer_shards.hpp"

namespace skein::core {

namespace {
// The least of the first step's tensors mapped apart: every piece's state
// (a piece is up to kStepPieceElements) but the shortest last pieces'.
constexpr std::size_t kMappedApartBytes = std::size_t{256} << 10;
}  // namespace

void TrainStep::run(Batch& batch, long batches_per_epoch) {
  // Micro-batches of one optimizer step: [group_start, group_start + group);
  // the epoch's last group is shorter when the batch count is known.
  const long index = batch.index;
  const long group_start = index - index % accumulate_;
  const long group = batches_per_epoch > 0 ? std::min(accumulate_, batches_per_epoch - group_start) : accumulate_;
  const bool step_now = index + 1 >= group_start + group;
  batch.optimizer_step = step_now;
  batch.training = true;
  if (!p_.model.is_training()) p_.model.train();  // after an evaluation batch
  p_.history.batches().new_row();  // callbacks may add their own values to this batch's record
  p_.callbacks.each("on_batch_begin", [&](Callback& cb) { cb.on_batch_begin(p_.context, batch); });

  if (index == group_start) {
    p_.optimizer.zero_grad();
    if (p_.pieces) p_.pieces->after_zero_grad();
    // Rank 0's buffers on every rank before the step's first forward, as
    // PyTorch DDP's broadcast_buffers (skein/parallel.hpp).
    if (auto* sync = dynamic_cast<BufferSync*>(&p_.parallel)) sync->sync_buffers();
  }
  batch.loss = p_.forward.loss_of(batch);
  p_.parallel.set_gradient_sync(step_now);
  const torch::Tensor scaled = scaler_ ? scaler_->scale(batch.loss) : batch.loss;
  (group > 1 ? scaled / static_cast<double>(group) : scaled).backward();
  if (step_now) p_.parallel.finish_gradients();
  // Unscaled before the hooks, so that gradient clipping sees true values.
  // The gradients are the same on every rank now: all skip a step alike.
  const bool finite = !step_now || !scaler_ || scaler_->unscale(p_.optimizer);
  p_.callbacks.each("on_grad_computed", [&](Callback& cb) { cb.on_grad_computed(p_.context, batch); });
  if (step_now) {
    if (finite) {
      if (p_.pieces) p_.pieces->before_step();
      // The step that makes the pieces' states: each a mapping of its own, as
      // they are laid out whole below (their heap would be left in holes).
      std::optional<MappedApart> apart;
      if (p_.pieces && p_.pieces->cuts_any() && p_.optimizer.state().empty()) apart.emplace(kMappedApartBytes);
      p_.optimizer.step();
      if (p_.mirror && p_.mirror->active()) p_.mirror->step(p_.optimizer);
    }
    if (scaler_) scaler_->update();
    ++steps_;
    // A sharded optimizer stepped this rank's parameters: owners send theirs.
    if (auto* sharded = dynamic_cast<ShardedOptimizer*>(&p_.parallel)) sharded->after_step();
    // The pieces' states, made apart by the first step, laid out whole once
    // (optimizer_shards.hpp), after the step's gradients are gone.
    if (finite && p_.pieces && p_.optimizer_factory)
      lay_piece_states_whole(*p_.optimizer_factory, {p_.optimizer, *p_.pieces});
  }

  p_.records.train(batch.loss, static_cast<double>(batch.inputs.size(0)));
  p_.records.loss_metrics(p_.loss, batch, "train");
  p_.callbacks.each("on_batch_end", [&](Callback& cb) { cb.on_batch_end(p_.context, batch); });
}

}  // namespace skein::core
