#include "skein/training/engine/evaluation.hpp"

#include <torch/utils.h>

#include "skein/loss.hpp"

namespace skein::core {

void EvalStep::run(Batch& batch, bool record, EvalSums& sums) {
  torch::NoGradGuard no_grad;
  if (p_.model.is_training()) p_.model.eval();
  batch.training = false;
  if (record) {
    p_.history.batches().new_row();
    p_.callbacks.each("on_batch_begin", [&](Callback& cb) { cb.on_batch_begin(p_.context, batch); });
  }
  batch.loss = p_.forward.loss_of(batch);
  // Tensors on the batch's device, read by the host once per pass (EvalSums,
  // BatchRecords), not at every batch.
  const torch::Tensor loss = batch.loss.detach();
  const bool classify = p_.loss.classification();
  const torch::Tensor correct =
      classify ? batch.outputs.argmax(1).eq(class_ids_of(batch.targets)).sum() : torch::Tensor();
  const auto size = static_cast<double>(batch.inputs.size(0));
  sums.add(loss, correct, size);
  if (!record) {  // the test split: the loss's values too, as validation records them
    for (const auto& m : p_.loss.metrics(batch.outputs, batch.targets)) sums.metrics[m.name] += m.value * size;
    if (classify) add_confusion(sums, batch);
  } else {
    p_.records.valid(loss, classify ? &correct : nullptr, size);
    p_.records.loss_metrics(p_.loss, batch, "valid");
    p_.callbacks.each("on_batch_end", [&](Callback& cb) { cb.on_batch_end(p_.context, batch); });
  }
}

}  // namespace skein::core
