// Fuzz target: trainer.json, the metadata of a checkpoint, as --resume reads
// it (skein::core::parse_checkpoint_meta) and as the newest checkpoint is
// chosen (skein::core::checkpoint_epoch on the raw JSON).
//
// Properties:
//  - parse_checkpoint_meta throws only skein::ConfigError, whose message
//    starts with the checkpoint's name (the CLI prints it, exit code 2);
//  - what it accepts is usable without further checks: epoch in
//    [0, LONG_MAX - 1] (resume continues with epoch + 1), world size an int
//    >= 1 (resume divides by it), an open epoch's pass segments adding up to
//    its next batch, one callback entry per list element;
//  - checkpoint_epoch and checkpoint_position never throw and agree with
//    the full parse (an open epoch's next batch >= 1);
//  - the same bytes as open_epoch.json: parse_open_epoch_ranks throws only
//    ConfigError naming the checkpoint.
#include <climits>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "skein/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string where = "checkpoint /runs/r/checkpoints/epoch_0001";
  bool parsed = false;
  long epoch = -1, next_batch = 0;
  const auto error = skein_fuzz::error_of<skein::ConfigError>("parse_checkpoint_meta", [&] {
    const skein::core::CheckpointMeta meta = skein::core::parse_checkpoint_meta(text, where);
    parsed = true;
    epoch = meta.epoch;
    if (meta.open_epoch) next_batch = meta.open_epoch->next_batch;
    if (meta.open_epoch && next_batch < 1) skein_fuzz::finding("accepted next_batch " + std::to_string(next_batch));
    if (meta.epoch < 0 || meta.epoch == LONG_MAX) skein_fuzz::finding("accepted epoch " + std::to_string(meta.epoch));
    for (const auto& cb : meta.callbacks) (void)cb.state.is_null();
    if (meta.world_size < 1) skein_fuzz::finding("accepted world_size " + std::to_string(meta.world_size));
    if (meta.open_epoch) {  // the pass segments: they add up to next_batch, the last on world_size ranks
      long long sum = 0;
      for (const auto& p : meta.open_epoch->passes) {
        if (p.world_size < 1 || p.batches_done < 0) skein_fuzz::finding("accepted a pass segment out of range");
        sum += p.batches_done;
      }
      if (meta.open_epoch->passes.empty() || sum != next_batch ||
          meta.open_epoch->passes.back().world_size != meta.world_size)
        skein_fuzz::finding("accepted pass segments that do not lead to next_batch on world_size ranks");
    }
  });
  if (error && error->rfind(where + ":", 0) != 0)
    skein_fuzz::finding("error does not name the checkpoint: " + *error);

  const auto rank_error = skein_fuzz::error_of<skein::ConfigError>("parse_open_epoch_ranks", [&] {
    const auto parts = skein::core::parse_open_epoch_ranks(text, 2, where);
    if (parts.size() != 2u) skein_fuzz::finding("accepted " + std::to_string(parts.size()) + " ranks for 2");
    for (const auto& part : parts)
      if (!part.record.is_object()) skein_fuzz::finding("accepted a record that is no object");
  });
  if (rank_error && rank_error->rfind(where + ":", 0) != 0)
    skein_fuzz::finding("open_epoch.json error does not name the checkpoint: " + *rank_error);

  nlohmann::json raw;
  try {
    raw = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  skein_fuzz::must_not_throw("checkpoint_epoch", [&] {
    const auto e = skein::core::checkpoint_epoch(raw);
    // The full parse decodes "NaN"-style strings first; an integer epoch is
    // the same either way.
    if (parsed && (!e || *e != epoch)) skein_fuzz::finding("checkpoint_epoch disagrees with parse_checkpoint_meta");
    const auto position = skein::core::checkpoint_position(raw);
    if (parsed && (!position || position->first != epoch || position->second != next_batch))
      skein_fuzz::finding("checkpoint_position disagrees with parse_checkpoint_meta");
  });
  return 0;
}
