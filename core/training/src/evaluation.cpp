#include "skein/training/evaluation.hpp"

#include <torch/utils.h>

#include "skein/kit/losses.hpp"

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
  const double loss = batch.loss.item<double>();
  const bool classify = p_.loss.classification();
  const auto correct =
      classify ? batch.outputs.argmax(1).eq(class_ids_of(batch.targets)).sum().item<std::int64_t>() : 0;
  const auto size = static_cast<double>(batch.inputs.size(0));
  sums.values[0] += loss * size;
  sums.values[1] += static_cast<double>(correct);
  sums.values[2] += size;
  ++sums.batches;
  if (!record) {  // the test split: the loss's values too, as validation records them
    for (const auto& m : p_.loss.metrics(batch.outputs, batch.targets)) sums.metrics[m.name] += m.value * size;
    if (classify) add_confusion(sums, batch);
  } else {
    const double accuracy = static_cast<double>(correct) / size;
    p_.records.valid(loss, classify ? &accuracy : nullptr, size);
    p_.records.loss_metrics(p_.loss, batch, "valid");
    p_.callbacks.each("on_batch_end", [&](Callback& cb) { cb.on_batch_end(p_.context, batch); });
  }
}

}  // namespace skein::core
