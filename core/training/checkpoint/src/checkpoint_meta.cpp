#include "skein/training/checkpoint/checkpoint_meta.hpp"

#include "skein/training/checkpoint/checkpoint_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "skein/training/checkpoint/digest.hpp"
#include "skein/errors.hpp"
#include "skein/history.hpp"
#include "skein/io/input_file.hpp"

namespace skein::core {

using namespace meta_key;

namespace {

// An integer JSON number in [lo, hi], or nullopt (floats, strings, anything else).
std::optional<long long> integer_in(const nlohmann::json& v, long long lo, long long hi) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(LLONG_MAX)) return std::nullopt;
    const auto i = static_cast<long long>(u);
    return i >= lo && i <= hi ? std::optional<long long>(i) : std::nullopt;
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    return i >= lo && i <= hi ? std::optional<long long>(i) : std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<long> checkpoint_epoch(const nlohmann::json& meta) {
  if (!meta.is_object()) return std::nullopt;
  auto it = meta.find(kEpoch);
  if (it == meta.end()) return std::nullopt;
  auto epoch = integer_in(*it, 0, LONG_MAX - 1);
  if (!epoch) return std::nullopt;
  return static_cast<long>(*epoch);
}

std::optional<std::pair<long, long>> checkpoint_position(const nlohmann::json& meta) {
  const auto epoch = checkpoint_epoch(meta);
  if (!epoch) return std::nullopt;
  long batch = 0;
  if (auto open = meta.find(kOpenEpoch); open != meta.end() && open->is_object())
    if (auto next = open->find(kNextBatch); next != open->end())
      if (auto n = integer_in(*next, 1, LONG_MAX)) batch = static_cast<long>(*n);
  return std::make_pair(*epoch, batch);
}

namespace {

// "<where>: bad <file>: <why>", as a ConfigError.
struct BadMeta {
  const std::string& where;
  const char* file = checkpoint_files::kMeta;
  ConfigError operator()(const std::string& why) const {
    return ConfigError(where + ": bad " + file + ": " + why);
  }
};

std::vector<double> parse_lr(const nlohmann::json& meta, const BadMeta& bad) {
  auto lr = meta.find(kLr);
  if (lr == meta.end() || !lr->is_array())
    throw bad("\"lr\" must be a list of numbers (one per parameter group)");
  std::vector<double> out;
  for (const auto& v : *lr) {
    if (!v.is_number()) throw bad("\"lr\" must be a list of numbers, got " + lr->dump());
    out.push_back(v.get<double>());
  }
  return out;
}

// "passes": [{"world_size": W, "batches": N}, ...], the epoch's pass
// segments (pass_segment.hpp), the last on the checkpoint's world size; their
// batches add up to next_batch. Absent (checkpoints written before): one
// segment, the checkpoint's.
std::vector<PassSegment> parse_passes(const nlohmann::json& open, const CheckpointMeta::OpenEpoch& o, int world_size,
                                      const BadMeta& bad) {
  auto passes = open.find(kPasses);
  if (passes == open.end()) return {PassSegment{world_size, o.next_batch}};
  const char* shape =
      "\"open_epoch\".\"passes\" must list {\"world_size\": N >= 1, \"batches\": N >= 0} (at most 10000 of them)";
  if (!passes->is_array() || passes->empty() || passes->size() > 10000) throw bad(std::string(shape));
  std::vector<PassSegment> out;
  long long sum = 0;
  for (const auto& p : *passes) {
    auto w = p.is_object() && p.contains(kWorldSize) ? integer_in(p[kWorldSize], 1, INT_MAX) : std::nullopt;
    auto n = p.is_object() && p.contains(kBatches) ? integer_in(p[kBatches], 0, LONG_MAX) : std::nullopt;
    if (!w || !n) throw bad(std::string(shape) + ", got " + p.dump());
    out.push_back(PassSegment{static_cast<int>(*w), static_cast<long>(*n)});
    if (sum > LONG_MAX - *n) throw bad("\"open_epoch\".\"passes\" add up to more batches than next_batch");
    sum += *n;
  }
  if (sum != o.next_batch)
    throw bad("\"open_epoch\".\"passes\" add up to " + std::to_string(sum) + " batches, next_batch is " +
              std::to_string(o.next_batch));
  if (out.back().world_size != world_size)
    throw bad("\"open_epoch\".\"passes\" must end on the checkpoint's " + std::to_string(world_size) +
              " ranks, not " + std::to_string(out.back().world_size));
  return out;
}

std::optional<CheckpointMeta::OpenEpoch> parse_open_epoch(const nlohmann::json& meta, int world_size,
                                                          const BadMeta& bad) {
  auto open = meta.find(kOpenEpoch);
  if (open == meta.end() || open->is_null()) return std::nullopt;
  const char* shape =
      "\"open_epoch\" must be {\"next_batch\": N >= 1, \"train_samples\": N, \"batch_size\": N, "
      "\"accumulate_steps\": N} (N >= 1)";
  if (!open->is_object()) throw bad(shape);
  auto field = [&](const char* key) {
    auto it = open->find(key);
    auto n = it == open->end() ? std::nullopt : integer_in(*it, 1, LONG_MAX);
    if (!n) throw bad(std::string(shape) + ", got " + open->dump());
    return *n;
  };
  CheckpointMeta::OpenEpoch o;
  o.next_batch = static_cast<long>(field(kNextBatch));
  o.train_samples = static_cast<std::int64_t>(field(kTrainSamples));
  o.batch_size = static_cast<long>(field(kBatchSize));
  o.accumulate_steps = static_cast<long>(field(kAccumulateSteps));
  o.passes = parse_passes(*open, o, world_size, bad);
  return o;
}

std::vector<CheckpointMeta::CallbackState> parse_callbacks(const nlohmann::json& meta, const BadMeta& bad) {
  auto callbacks = meta.find(kCallbacks);
  if (callbacks == meta.end() || !callbacks->is_array())
    throw bad("\"callbacks\" must be a list of {\"plugin\": NAME, \"state\": ...}");
  std::vector<CheckpointMeta::CallbackState> out;
  for (std::size_t i = 0; i < callbacks->size(); ++i) {
    const auto& entry = (*callbacks)[i];
    const std::string at = "callbacks[" + std::to_string(i) + "]";
    if (!entry.is_object()) throw bad(at + " must be an object, got " + entry.dump());
    CheckpointMeta::CallbackState cb;
    if (auto p = entry.find(kPlugin); p != entry.end()) {
      if (!p->is_string()) throw bad(at + ".plugin must be a string, got " + p->dump());
      cb.plugin = p->get<std::string>();
    }
    if (auto st = entry.find(kState); st != entry.end()) cb.state = *st;
    out.push_back(std::move(cb));
  }
  return out;
}

// "files": plain file name -> checksum (optional).
std::vector<std::pair<std::string, std::string>> parse_files(const nlohmann::json& meta, const BadMeta& bad) {
  std::vector<std::pair<std::string, std::string>> out;
  auto files = meta.find(kFiles);
  if (files == meta.end()) return out;
  if (!files->is_object()) throw bad("\"files\" must map file names to checksums");
  for (auto it = files->begin(); it != files->end(); ++it) {
    const std::string& name = it.key();
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == ".." ||
        !it.value().is_string())
      throw bad("\"files\" must map plain file names to checksum strings, got " + files->dump());
    out.emplace_back(name, it.value().get<std::string>());
  }
  return out;
}

std::optional<DataInfo> parse_data_info(const nlohmann::json& meta, const BadMeta& bad) {
  auto info = meta.find(kDataInfo);
  if (info == meta.end()) return std::nullopt;
  DataInfo d;
  auto shape = info->is_object() ? info->find(kInputShape) : info->end();
  auto classes = info->is_object() ? info->find(kNumClasses) : info->end();
  if (shape == info->end() || classes == info->end() || !shape->is_array())
    throw bad("\"data_info\" must be {\"input_shape\": [...], \"num_classes\": N}");
  for (const auto& extent : *shape) {
    auto e = integer_in(extent, 1, INT64_MAX);
    if (!e) throw bad("\"data_info\".input_shape must hold positive integers, got " + shape->dump());
    d.input_shape.push_back(*e);
  }
  auto n = integer_in(*classes, 0, INT64_MAX);
  if (!n) throw bad("\"data_info\".num_classes must be an integer >= 0, got " + classes->dump());
  d.num_classes = *n;
  return d;
}

std::optional<CheckpointMeta::Script> parse_script(const nlohmann::json& meta, const BadMeta& bad) {
  auto script = meta.find(kScript);
  if (script == meta.end() || script->is_null()) return std::nullopt;
  auto path = script->is_object() ? script->find(kPath) : script->end();
  auto sha = script->is_object() ? script->find(kSha256) : script->end();
  if (path == script->end() || sha == script->end() || !path->is_string() || !sha->is_string())
    throw bad("\"script\" must be {\"path\": FILE, \"sha256\": HEX}, got " + script->dump());
  return CheckpointMeta::Script{path->get<std::string>(), sha->get<std::string>()};
}

std::optional<CheckpointMeta::LossScale> parse_loss_scale(const nlohmann::json& meta, const BadMeta& bad) {
  auto found = meta.find(kLossScale);
  if (found == meta.end() || found->is_null()) return std::nullopt;
  const auto scale = found->is_object() ? found->find(kScale) : found->end();
  const auto tracker = found->is_object() ? found->find(kGrowthTracker) : found->end();
  std::optional<std::int64_t> good_steps;
  if (tracker != found->end()) good_steps = integer_in(*tracker, 0, INT32_MAX);
  if (scale == found->end() || !scale->is_number() || !(scale->get<double>() > 0) ||
      !std::isfinite(scale->get<double>()) || !good_steps)
    throw bad("\"loss_scale\" must be {\"scale\": a positive number, \"growth_tracker\": an integer >= 0}, got " +
              found->dump());
  return CheckpointMeta::LossScale{scale->get<double>(), *good_steps};
}

}  // namespace

CheckpointMeta parse_checkpoint_meta(const std::string& text, const std::string& where) {
  nlohmann::json meta;
  try {
    meta = decode_nonfinite(nlohmann::json::parse(text));
  } catch (const std::exception& e) {
    throw ConfigError(where + ": unreadable trainer.json: " + first_line(e.what()));
  }
  const BadMeta bad{where};
  if (!meta.is_object()) throw bad("expected a JSON object, got " + std::string(meta.type_name()));

  auto format = meta.find(kFormat);
  if (format == meta.end() || !format->is_number() || *format != kCheckpointFormat)
    throw ConfigError(where + ": format " + meta.value(kFormat, nlohmann::json()).dump() +
                      ", this skein reads format " + std::to_string(kCheckpointFormat));

  CheckpointMeta out;
  out.lr = parse_lr(meta, bad);
  out.callbacks = parse_callbacks(meta, bad);
  out.files = parse_files(meta, bad);
  out.data_info = parse_data_info(meta, bad);
  out.script = parse_script(meta, bad);
  out.input_scaling = meta.value(kInputScaling, nlohmann::json());
  out.data_scaling = meta.value(kDataScaling, nlohmann::json());
  out.loss_scale = parse_loss_scale(meta, bad);
  if (auto only = meta.find(kModelOnly); only != meta.end()) {
    if (!only->is_boolean()) throw bad("\"model_only\" must be true or false, got " + only->dump());
    out.model_only = only->get<bool>();
  }
  if (auto seed = meta.find(kSeed); seed != meta.end() && seed->is_number_unsigned()) out.seed = seed->get<std::uint64_t>();
  if (auto model = meta.find(kModel); model != meta.end() && model->is_string()) out.model = model->get<std::string>();
  auto epoch = checkpoint_epoch(meta);
  if (!epoch)
    throw bad("\"epoch\" must be an integer >= 0, got " + meta.value(kEpoch, nlohmann::json()).dump());
  out.epoch = *epoch;
  // The number of ranks that wrote it: resume divides by it.
  auto world = meta.find(kWorldSize);
  auto ranks = world == meta.end() ? std::nullopt : integer_in(*world, 1, INT_MAX);
  if (!ranks)
    throw bad("\"world_size\" must be an integer >= 1, got " +
              (world == meta.end() ? std::string("none") : world->dump()));
  out.world_size = static_cast<int>(*ranks);
  out.open_epoch = parse_open_epoch(meta, out.world_size, bad);
  if (out.open_epoch) out.open_epoch->epoch = out.epoch + 1;
  return out;
}

nlohmann::json callback_states_json(const std::vector<CheckpointMeta::CallbackState>& states) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& cb : states) out.push_back({{kPlugin, cb.plugin}, {kState, cb.state}});
  return out;
}

nlohmann::json checkpoint_meta_json(const CheckpointMeta& meta) {
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [file, checksum] : meta.files) files[file] = checksum;
  nlohmann::json out = {{kFormat, kCheckpointFormat},
                        {kEpoch, meta.epoch},
                        {kLr, meta.lr},
                        {kWorldSize, meta.world_size},
                        {kSeed, meta.seed},
                        {kModel, meta.model},
                        {kCallbacks, callback_states_json(meta.callbacks)},
                        {kFiles, files}};
  if (meta.data_info)
    out[kDataInfo] = {{kInputShape, meta.data_info->input_shape}, {kNumClasses, meta.data_info->num_classes}};
  if (meta.script) out[kScript] = {{kPath, meta.script->path}, {kSha256, meta.script->sha256}};
  if (!meta.input_scaling.is_null()) out[kInputScaling] = meta.input_scaling;
  if (!meta.data_scaling.is_null()) out[kDataScaling] = meta.data_scaling;
  if (meta.loss_scale)
    out[kLossScale] = {{kScale, meta.loss_scale->scale}, {kGrowthTracker, meta.loss_scale->growth_tracker}};
  if (const auto& o = meta.open_epoch) {
    nlohmann::json& open = out[kOpenEpoch] = {{kEpoch, o->epoch},
                                              {kNextBatch, o->next_batch},
                                              {kTrainSamples, o->train_samples},
                                              {kBatchSize, o->batch_size},
                                              {kAccumulateSteps, o->accumulate_steps}};
    if (!o->passes.empty()) {  // none: one segment, the checkpoint's world size's
      nlohmann::json& passes = open[kPasses] = nlohmann::json::array();
      for (const PassSegment& p : o->passes) passes.push_back({{kWorldSize, p.world_size}, {kBatches, p.batches_done}});
    }
  }
  if (meta.model_only) out[kModelOnly] = true;
  return out;
}

nlohmann::json open_epoch_rank_json(const OpenEpochRank& rank) {
  return {{kRecord, rank.record}, {kCallbacks, callback_states_json(rank.callbacks)}, {kSeconds, rank.seconds}};
}

nlohmann::json open_epoch_ranks_json(nlohmann::json ranks) { return {{kRanks, std::move(ranks)}}; }

std::vector<OpenEpochRank> parse_open_epoch_ranks(const std::string& text, int world_size, const std::string& where) {
  const BadMeta bad{where, checkpoint_files::kOpenEpochParts};
  nlohmann::json doc;
  try {
    doc = decode_nonfinite(nlohmann::json::parse(text));
  } catch (const std::exception& e) {
    throw ConfigError(where + ": unreadable open_epoch.json: " + first_line(e.what()));
  }
  auto ranks = doc.is_object() ? doc.find(kRanks) : doc.end();
  if (ranks == doc.end() || !ranks->is_array() || ranks->size() != static_cast<std::size_t>(world_size))
    throw bad("\"ranks\" must list one entry per rank of the " + std::to_string(world_size) +
              " that wrote the checkpoint");
  std::vector<OpenEpochRank> out;
  for (const auto& entry : *ranks) {
    const std::string rank = std::to_string(out.size());
    auto record = entry.is_object() ? entry.find(kRecord) : entry.end();
    auto seconds = entry.is_object() ? entry.find(kSeconds) : entry.end();
    if (record == entry.end() || !record->is_object() || record->contains(kBatches) || seconds == entry.end() ||
        !seconds->is_number())
      throw bad("rank " + rank + ": expected {\"record\": {...}, \"callbacks\": [...], \"seconds\": S}");
    OpenEpochRank part;
    part.record = *record;
    part.callbacks = parse_callbacks(entry, bad);
    part.seconds = seconds->get<double>();
    out.push_back(std::move(part));
  }
  return out;
}

CheckpointMeta read_checked_checkpoint(const std::string& dir) {
  const std::string where = "checkpoint " + dir;
  // Not there at all is said so, not "unreadable" (an empty trainer.json).
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw ConfigError(where + (errno == ENOENT ? " does not exist" : ": " + std::string(std::strerror(errno))));
  if (!S_ISDIR(st.st_mode)) throw ConfigError(where + " is not a directory");
  if (::access((dir + "/" + checkpoint_files::kMeta).c_str(), F_OK) != 0)
    throw ConfigError(where + " has no " + checkpoint_files::kMeta + ": not a complete checkpoint");
  check_checkpoint_files(dir);  // no FIFO or device is opened below
  const CheckpointMeta meta =
      parse_checkpoint_meta(read_whole_file(dir + "/" + checkpoint_files::kMeta).value_or(""), where);
  // A file whose bytes changed since they were written (bit rot, a partial
  // copy) is refused before torch reads it: torch would not always notice.
  for (const auto& [file, checksum] : meta.files) {
    if (::access((dir + "/" + file).c_str(), F_OK) != 0)
      throw ConfigError(where + "/" + file + " does not exist: the checkpoint is incomplete");
    if (crc64_hex_of_file(dir + "/" + file) != checksum)
      throw ConfigError(where + "/" + file + " is damaged: its checksum differs from the one in trainer.json");
  }
  return meta;
}

}  // namespace skein::core
