#define BOOST_TEST_MODULE runs
#include <boost/test/unit_test.hpp>

#include <torch/version.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <torch/torch.h>

#include "skein/torch_compat/optimizer_archive.hpp"
#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "test_support.hpp"

// Whole `skein train` runs with callbacks: checkpoint and resume, logging
// outputs, and callbacks in 2-process runs.

namespace fs = boost::filesystem;

namespace {

using test::contains;
using test::load_json;
const std::string kSkein = SKEIN_EXE;

nlohmann::json without_durations(nlohmann::json epochs) {
  for (auto& e : epochs)
    for (const char* k : {"dur", "train_dur", "valid_dur", "samples_per_s"}) e.erase(k);
  return epochs;
}

// A config with dropout, Adam, a learning-rate schedule and early stopping:
// everything that must come back exactly on resume.
nlohmann::json resumable_config() {
  auto cfg = test::synthetic_config();
  cfg["model"]["dropout"] = 0.2;
  cfg["optimizer"] = {{"name", "adam"}, {"lr", 0.01}};
  cfg["max_epochs"] = 4;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}},
                      {{"plugin", "early_stopping"}, {"patience", 10}},
                      {{"plugin", "lr_scheduler"}, {"step_size", 1}, {"gamma", 0.5}}};
  return cfg;
}

// 64 rows written to `csv`, each row's first feature its row number (the
// probe callback records it), trained 4 a batch by ddp with the filestore
// history and a step checkpoint every 2 steps: 48 training rows, 6 batches a
// rank on 2 processes.
nlohmann::json numbered_rows_config(const std::string& csv) {
  std::string rows = "a,b,label\n";
  for (int i = 0; i < 64; ++i) rows += std::to_string(i) + "," + std::to_string(i % 5) + "," + (i % 2 ? "x" : "y") + "\n";
  test::write_text(csv, rows);
  auto cfg = test::synthetic_config();
  cfg["data"] = {{"plugin", "csv"}, {"train", csv}};
  cfg["batch_size"] = 4;
  cfg["parallel"] = {{"plugin", "ddp"}};
  cfg["history"] = {{"plugin", "filestore"}};
  cfg["callbacks"] = {{{"plugin", "checkpoint"}, {"every_n_steps", 2}}};
  return cfg;
}

struct Fixture : test::Workspace {
  test::CommandResult skein(const std::string& args, const std::string& env = "") {
    return test::run(test::in_private_network(env + " " + kSkein + " train " + args), 240);
  }
};

// CRC-32C written out bit by bit, independent of the writer's Boost.CRC.
std::uint32_t crc32c(const char* data, std::size_t n) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= static_cast<std::uint8_t>(data[i]);
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}
std::uint32_t masked(std::uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

struct Scalar {
  std::string tag;
  std::int64_t step;
  float value;
};

// A minimal protobuf reader for Event{wall_time, step, file_version, summary{value{tag, simple_value}}}.
struct Reader {
  const std::string& s;
  std::size_t pos = 0, end;
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      auto b = static_cast<std::uint8_t>(s.at(pos++));
      v |= std::uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  }
};

std::vector<Scalar> parse_events(const std::string& file, std::string& version) {
  const std::string bytes = test::read_text(file);
  std::vector<Scalar> out;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    BOOST_REQUIRE(pos + 12 <= bytes.size());
    std::uint64_t len;
    std::uint32_t len_crc, data_crc;
    std::memcpy(&len, bytes.data() + pos, 8);
    std::memcpy(&len_crc, bytes.data() + pos + 8, 4);
    BOOST_REQUIRE_EQUAL(len_crc, masked(crc32c(bytes.data() + pos, 8)));
    const std::string event = bytes.substr(pos + 12, len);
    std::memcpy(&data_crc, bytes.data() + pos + 12 + len, 4);
    BOOST_REQUIRE_EQUAL(data_crc, masked(crc32c(event.data(), event.size())));
    pos += 12 + len + 4;
    Reader r{event, 0, event.size()};
    std::int64_t step = 0;
    std::vector<std::pair<std::string, float>> values;
    while (r.pos < event.size()) {
      auto key = r.varint();
      if (key == (1 << 3 | 1)) {
        r.pos += 8;  // wall_time
      } else if (key == (2 << 3 | 0)) {
        step = static_cast<std::int64_t>(r.varint());
      } else if (key == (3 << 3 | 2)) {
        auto n = r.varint();
        version = event.substr(r.pos, n);
        r.pos += n;
      } else if (key == (5 << 3 | 2)) {
        const std::size_t summary_end = r.pos + r.varint();
        while (r.pos < summary_end) {
          BOOST_REQUIRE_EQUAL(r.varint(), 1u << 3 | 2u);
          const std::size_t value_end = r.pos + r.varint();
          std::string tag;
          float v = 0;
          while (r.pos < value_end) {
            auto k = r.varint();
            if (k == (1 << 3 | 2)) {
              auto n = r.varint();
              tag = event.substr(r.pos, n);
              r.pos += n;
            } else {
              BOOST_REQUIRE_EQUAL(k, 2u << 3 | 5u);
              std::memcpy(&v, event.data() + r.pos, 4);
              r.pos += 4;
            }
          }
          values.push_back({tag, v});
        }
      } else {
        BOOST_FAIL("unexpected field " << key);
      }
    }
    for (const auto& [tag, v] : values) out.push_back({tag, step, v});
  }
  return out;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(runs, Fixture)

// Also under ddp with PowerSGD compression, whose per-rank error feedback
// and shared Q (parallel.pt) must come back for the resumed run to match.
// Variants: one process; two with ddp, without and with PowerSGD gradient
// compression; two with bf16-mixed precision and gradient accumulation.
BOOST_AUTO_TEST_CASE(resume_continues_exactly_on_one_and_two_processes) {
  const std::string two = "--nproc-per-node 2 --timeout 60 ";
  for (const auto& [procs, variant] : std::vector<std::pair<std::string, std::string>>{
           {"", ""}, {two, "none"}, {two, "powersgd"}, {two, "bf16-mixed"}}) {
    auto cfg = resumable_config();
    if (variant == "bf16-mixed") {
      cfg["precision"] = "bf16-mixed";
      cfg["accumulate_steps"] = 2;
    }
    if (!procs.empty()) {
      cfg["parallel"] = {{"plugin", "ddp"}, {"compression", variant == "powersgd" ? "powersgd" : "none"}};
      cfg["history"] = {{"plugin", "filestore"}};
    }
    if (variant == "powersgd") {  // 6 steps an epoch: compressed from the 4th step on
      cfg["parallel"]["powersgd_rank"] = 1;
      cfg["parallel"]["powersgd_warmup_steps"] = 3;
    }
    const std::string config = write_config(cfg);
    const std::string straight = dir("straight" + std::to_string(runs));
    const std::string halves = dir("halves" + std::to_string(runs));
    BOOST_REQUIRE(skein(procs + "--config " + config + " --run-dir " + straight).exit_code == 0);
    BOOST_REQUIRE(skein(procs + "--config " + config + " --run-dir " + halves + " --set max_epochs=2").exit_code == 0);
    BOOST_TEST(load_json(halves + "/history.json").size() == 2u);
    auto r = skein(procs + "--resume " + halves + " --set max_epochs=4");
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    BOOST_TEST(contains(r.out, "Resumed from"), r.out);
    BOOST_TEST(without_durations(load_json(straight + "/history.json")) ==
               without_durations(load_json(halves + "/history.json")), procs << variant);
    BOOST_TEST(fs::exists(halves + "/checkpoints/epoch_0004/parallel.pt") == (variant == "powersgd"));
    // Bit-identical parameters. (optimizer.pt names its state after tensor
    // addresses, so its bytes differ between processes; the history above
    // shows the state came back.)
    BOOST_TEST(test::read_text(straight + "/checkpoints/epoch_0004/model.pt") ==
               test::read_text(halves + "/checkpoints/epoch_0004/model.pt"), procs << variant);
    // keep_last 1: only the newest periodic checkpoint, plus the best and the final model.
    std::set<std::string> names;
    for (auto& e : fs::directory_iterator(halves + "/checkpoints")) names.insert(e.path().filename().string());
    BOOST_TEST((names == std::set<std::string>{"best", "epoch_0004", "final"}));
  }
}

// every_n_steps: a kill -9 between optimizer steps, then --resume from the
// step checkpoint inside the epoch, trains exactly as a run never stopped:
// same permutation position, RNG (dropout), accumulation group, per-step
// learning rate, each rank's batch records and scoring sums of the epoch.
BOOST_AUTO_TEST_CASE(a_step_checkpoint_resumes_mid_epoch_exactly) {
  const std::string two = "--nproc-per-node 2 --timeout 60 ";
  for (const std::string procs : {std::string(), two}) {
    auto cfg = resumable_config();
    cfg["accumulate_steps"] = 2;
    cfg["callbacks"] = {{{"plugin", "checkpoint"}, {"every_n_steps", procs.empty() ? 4 : 2}},
                        {{"plugin", "lr_scheduler"}, {"policy", "cosine"}, {"interval", "step"},
                         {"warmup_steps", 3}, {"eta_min", 0.001}},
                        {{"plugin", "scoring"}, {"scores", {"train_f1", "valid_f1", "train_acc"}}},
                        {{"plugin", "timer"}},
                        {{"plugin", "jsonl"}, {"batches", true}}};
    if (!procs.empty()) {
      cfg["parallel"] = {{"plugin", "ddp"}};
      cfg["history"] = {{"plugin", "filestore"}};
    }
    const std::string config = write_config(cfg);
    const std::string tag = procs.empty() ? "1" : "2";
    const std::string straight = dir("straight" + tag), killed = dir("killed" + tag);
    BOOST_REQUIRE(skein(procs + "--config " + config + " --run-dir " + straight).exit_code == 0);
    // One process: 12 batches an epoch, a step every 2, a checkpoint every 4
    // steps: step 16 is epoch 3's 8th batch; killed as its 11th begins.
    // Two: 6 batches a rank, a checkpoint every 2 steps: step 8 is epoch 3's
    // 4th batch; rank 1 killed as its 6th begins.
    const std::string kill = procs.empty() ? "signal_batch=10" : "signal_batch=5,signal_rank=1";
    auto r = skein(procs + "--config " + config + " --run-dir " + killed + " --plugin-dir " TEST_PLUGIN_DIR +
                   " --plugin probe_callback:signal_at=3,signal=9," + kill);
    BOOST_TEST(r.exit_code != 0);
    const std::string step = procs.empty() ? "step_00000016" : "step_00000008";
    BOOST_REQUIRE(fs::exists(killed + "/checkpoints/" + step + "/open_epoch.json"));
    const auto meta = load_json(killed + "/checkpoints/" + step + "/trainer.json");
    BOOST_TEST(meta["epoch"].get<long>() == 2);
    BOOST_TEST(meta["open_epoch"]["next_batch"].get<long>() == (procs.empty() ? 8 : 4));
    auto resumed = skein(procs + "--resume " + killed + " --plugin-dir " TEST_PLUGIN_DIR +
                         " --plugin probe_callback:signal_at=0");
    BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
    BOOST_TEST(contains(resumed.out, "Resumed from " + killed + "/checkpoints/" + step), resumed.out);
    const auto history = load_json(killed + "/history.json");
    BOOST_TEST(test::comparable_history(load_json(straight + "/history.json")) == test::comparable_history(history),
               tag);
    BOOST_TEST(history[2].contains("valid_f1"));
    BOOST_TEST(test::read_text(straight + "/checkpoints/epoch_0004/model.pt") ==
               test::read_text(killed + "/checkpoints/epoch_0004/model.pt"), tag);
    BOOST_TEST(test::read_text(straight + "/metrics.jsonl") != "");
    // The log: each epoch once, its batches once (a resumed epoch is logged whole).
    std::vector<long> epochs;
    std::istringstream jsonl(test::read_text(killed + "/metrics.jsonl"));
    for (std::string text; std::getline(jsonl, text);)
      if (const auto line = nlohmann::json::parse(text); !line.contains("batch")) epochs.push_back(line["epoch"]);
    BOOST_TEST((epochs == std::vector<long>{1, 2, 3, 4}), tag);
    // keep_last 1 of each kind.
    std::set<std::string> names;
    for (auto& e : fs::directory_iterator(killed + "/checkpoints")) names.insert(e.path().filename().string());
    BOOST_TEST((names == std::set<std::string>{"best", "epoch_0004", "final",
                                               procs.empty() ? "step_00000024" : "step_00000012"}), tag);
  }
}

// The data file grew after a kill inside an epoch: its permutation is
// another one, so continuing mid-epoch is refused, naming the checkpoint.
BOOST_AUTO_TEST_CASE(a_mid_epoch_resume_with_other_data_is_a_clear_error) {
  std::string rows = "a,b,label\n";
  for (int i = 0; i < 64; ++i) rows += std::to_string(i % 7) + "," + std::to_string(i % 5) + "," + (i % 2 ? "x" : "y") + "\n";
  const std::string csv = dir("rows.csv");
  test::write_text(csv, rows);
  auto cfg = test::synthetic_config();
  cfg["data"] = {{"plugin", "csv"}, {"train", csv}};
  cfg["batch_size"] = 8;  // 48 training rows: 6 batches an epoch
  cfg["callbacks"] = {{{"plugin", "checkpoint"}, {"every_n_steps", 2}}};
  const std::string run = dir("grown");
  auto r = skein("--config " + write_config(cfg) + " --run-dir " + run + " --plugin-dir " TEST_PLUGIN_DIR +
                 " --plugin probe_callback:signal_at=2,signal_batch=3,signal=9");
  BOOST_TEST(r.exit_code == 128 + 9);
  BOOST_REQUIRE(fs::exists(run + "/checkpoints/step_00000008/trainer.json"));
  test::write_text(csv, rows + "1,1,x\n2,2,y\n3,3,x\n4,4,y\n");
  auto resumed = skein("--resume " + run + " --plugin-dir " TEST_PLUGIN_DIR + " --plugin probe_callback:signal_at=0");
  test::expect_one_error(resumed, 2, {"checkpoint " + run + "/checkpoints/step_00000008 was written inside epoch 2",
                                      "training samples 48; this run has 51", "remove " + run + "/checkpoints/step_00000008"});
}

BOOST_AUTO_TEST_CASE(a_crash_while_writing_a_checkpoint_leaves_the_previous_one_usable) {
  const std::string config = write_config(resumable_config());
  const std::string straight = dir("straight"), crashed = dir("crashed");
  BOOST_REQUIRE(skein("--config " + config + " --run-dir " + straight).exit_code == 0);
  auto r = skein("--config " + config + " --run-dir " + crashed, test::with_fault("SKEIN_TEST_CRASH_IN_CHECKPOINT=3"));
  BOOST_TEST(r.exit_code == 86);  // died inside the epoch-3 checkpoint
  BOOST_TEST(fs::exists(crashed + "/checkpoints/epoch_0002/trainer.json"));
  BOOST_TEST(!fs::exists(crashed + "/checkpoints/epoch_0003"));
  auto resumed = skein("--resume " + crashed);
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  BOOST_TEST(contains(resumed.out, "epoch_0002"), resumed.out);
  BOOST_TEST(without_durations(load_json(straight + "/history.json")) ==
             without_durations(load_json(crashed + "/history.json")));
  BOOST_TEST(test::read_text(straight + "/checkpoints/epoch_0004/model.pt") ==
             test::read_text(crashed + "/checkpoints/epoch_0004/model.pt"));
}

// A resume trains again the epochs after its checkpoint; the loggers keep
// each epoch once, as the resumed history has it: past a checkpoint that
// `every` 2 skipped (epoch 3), and after a crash between epoch 3's end (its
// lines written) and its checkpoint.
BOOST_AUTO_TEST_CASE(a_resume_logs_each_epoch_and_batch_once) {
  for (const auto& [every, fault] : std::vector<std::pair<int, std::string>>{
           {2, ""}, {1, "SKEIN_TEST_CRASH_IN_CHECKPOINT=3"}}) {
    auto cfg = test::synthetic_config();
    cfg["max_epochs"] = 3;
    cfg["callbacks"] = {{{"plugin", "checkpoint"}, {"every", every}},
                        {{"plugin", "jsonl"}, {"batches", true}},
                        {{"plugin", "tensorboard"}, {"batches", true}}};
    const std::string run = dir("every" + std::to_string(every));
    auto first = skein("--config " + write_config(cfg) + " --run-dir " + run, fault.empty() ? "" : test::with_fault(fault));
    BOOST_REQUIRE_MESSAGE(first.exit_code == (fault.empty() ? 0 : 86), first.err);
    if (every == 2) {  // and a kill while a line and a record were written: their starts go too
      std::ofstream(run + "/metrics.jsonl", std::ios::app) << "{\"epoch\":3,\"train_lo";
      for (auto& e : fs::directory_iterator(run + "/tensorboard"))
        std::ofstream(e.path().string(), std::ios::app | std::ios::binary) << std::string("\x20\0\0\0\0\0\0\0\1\2", 10);
    }
    auto r = skein("--resume " + run + " --set max_epochs=5");
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    BOOST_TEST(contains(r.out, "Resumed from " + run + "/checkpoints/epoch_0002"), r.out);
    const auto history = load_json(run + "/history.json");
    BOOST_REQUIRE(history.size() == 5u);

    // jsonl: epochs 1..5, each after its own batches 0, 1, ... (12 train + 4 valid).
    std::vector<long> epochs;
    long batch = 0;
    std::istringstream jsonl(test::read_text(run + "/metrics.jsonl"));
    for (std::string text; std::getline(jsonl, text);) {
      const auto line = nlohmann::json::parse(text);
      if (line.contains("batch")) {
        BOOST_TEST(line["batch"].get<long>() == batch++, text);
        BOOST_TEST(line["epoch"].get<long>() == static_cast<long>(epochs.size()) + 1, text);
        continue;
      }
      BOOST_TEST(batch == 16, text);
      batch = 0;
      epochs.push_back(line["epoch"].get<long>());
      if (epochs.size() <= history.size())
        BOOST_TEST(line["valid_loss"].get<double>() == history[epochs.size() - 1]["valid_loss"].get<double>());
    }
    BOOST_TEST((epochs == std::vector<long>{1, 2, 3, 4, 5}), every);

    // tensorboard: over both files, each tag has each step once: epochs 1..5,
    // batch rows 0..79 (the epoch-3 ones of the first attempt went).
    std::map<std::string, std::vector<std::int64_t>> steps;
    for (auto& e : fs::directory_iterator(run + "/tensorboard")) {
      std::string version;
      for (const auto& s : parse_events(e.path().string(), version)) {
        steps[s.tag].push_back(s.step);
        if (s.tag == "valid_loss") BOOST_TEST(s.value == history[s.step - 1]["valid_loss"].get<float>());
      }
    }
    BOOST_REQUIRE(steps.count("valid_loss") && steps.count("batch/train_loss"));
    std::set<std::int64_t> batch_rows;
    for (auto& [tag, list] : steps) {
      std::sort(list.begin(), list.end());
      BOOST_TEST((std::adjacent_find(list.begin(), list.end()) == list.end()), tag << " every " << every);
      if (tag.rfind("batch/", 0) == 0) batch_rows.insert(list.begin(), list.end());
      else BOOST_TEST((list == std::vector<std::int64_t>{1, 2, 3, 4, 5}), tag << " every " << every);
    }
    BOOST_TEST(batch_rows.size() == 80u);
    BOOST_TEST((batch_rows.empty() || (*batch_rows.begin() == 0 && *batch_rows.rbegin() == 79)));
  }
}

BOOST_AUTO_TEST_CASE(resume_errors_are_clear) {
  auto none = skein("--resume " + dir("nothing"));
  BOOST_TEST(none.exit_code == 2);
  BOOST_TEST(contains(none.err, "not a run directory"), none.err);
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 1;
  const std::string plain = dir("plain");
  BOOST_REQUIRE(skein("--config " + write_config(cfg) + " --run-dir " + plain).exit_code == 0);
  auto no_ckpt = skein("--resume " + plain);
  BOOST_TEST(no_ckpt.exit_code == 2);
  BOOST_TEST(contains(no_ckpt.err, "no complete checkpoint"), no_ckpt.err);
}

// Elastic: a run of 1 process continues on 2 from its epoch checkpoint; the
// history and train.log say where the world size changed.
BOOST_AUTO_TEST_CASE(resume_continues_on_another_world_size_and_refuses_damaged_checkpoints) {
  auto cfg = resumable_config();
  cfg["max_epochs"] = 2;
  const std::string run = dir("ws");
  BOOST_REQUIRE(skein("--config " + write_config(cfg) + " --run-dir " + run).exit_code == 0);
  auto other = skein("--resume " + run + " --set max_epochs=3 --nproc-per-node 2 --timeout 60 "
                     "--set parallel.plugin=ddp --set history.plugin=tcpstore");
  BOOST_TEST(other.exit_code == 0, other.err);
  const auto history = nlohmann::json::parse(test::read_text(run + "/history.json"));
  BOOST_REQUIRE(history.size() == 3u);
  BOOST_TEST(!history[1].contains("world_size"));
  BOOST_TEST(history[2].value("world_size", 0) == 2);
  BOOST_TEST(contains(test::read_text(run + "/train.log"), "World size 1 -> 2"));
  const auto results = load_json(run + "/results.json");  // each rank's peak, the largest as peak_rss_mb
  BOOST_REQUIRE(results["peak_rss_mb_per_rank"].size() == 2u);
  for (const auto& mb : results["peak_rss_mb_per_rank"]) BOOST_TEST(mb.get<double>() > 0);
  BOOST_TEST(std::max(results["peak_rss_mb_per_rank"][0].get<double>(), results["peak_rss_mb_per_rank"][1].get<double>()) ==
             results["peak_rss_mb"].get<double>());
  // A damaged model file: a clear error, not a crash.
  test::write_text(run + "/checkpoints/epoch_0003/model.pt", "not a torch archive");
  auto damaged = skein("--resume " + run + " --set max_epochs=4");
  BOOST_TEST(damaged.exit_code == 2);
  BOOST_TEST(contains(damaged.err, "model.pt is damaged"), damaged.err);
  // An unreadable trainer.json makes the checkpoint incomplete.
  test::write_text(run + "/checkpoints/epoch_0003/trainer.json", "{");
  auto incomplete = skein("--resume " + run);
  BOOST_TEST(incomplete.exit_code == 2);
  BOOST_TEST(contains(incomplete.err, "no complete checkpoint"), incomplete.err);
}

// Elastic inside an epoch: 2 processes write step checkpoints, rank 1 is
// killed in epoch 2; 1 process resumes from the step checkpoint and trains
// the rest of that epoch, each sample once (the probe records the rows,
// whose first feature is their row number); run.json and the history say
// where the world size changed.
BOOST_AUTO_TEST_CASE(a_step_checkpoint_resumes_on_fewer_ranks_with_the_rest_of_its_epoch) {
  auto cfg = numbered_rows_config(dir("rows.csv"));
  const std::string run = dir("shrunk");
  // Step 10 is epoch 2's 4th batch; rank 1 is killed as its 6th begins.
  auto r = skein("--nproc-per-node 2 --timeout 60 --config " + write_config(cfg) + " --run-dir " + run +
                 " --plugin-dir " TEST_PLUGIN_DIR +
                 " --plugin probe_callback:record_rows=true,signal_at=2,signal_batch=5,signal=9,signal_rank=1");
  BOOST_TEST(r.exit_code != 0);
  BOOST_REQUIRE(fs::exists(run + "/checkpoints/step_00000010/open_epoch.json"));
  auto resumed = skein("--resume " + run + " --plugin-dir " TEST_PLUGIN_DIR +
                       " --plugin probe_callback:record_rows=true,signal_at=0");
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  BOOST_TEST(contains(resumed.out, "Resumed from " + run + "/checkpoints/step_00000010"), resumed.out);
  const std::string log = test::read_text(run + "/train.log");
  BOOST_TEST(contains(log, "World size 2 -> 1"), log);
  BOOST_TEST(contains(log, "the rest of epoch 2 after train batch 4 of each of the 2 ranks is re-sharded over 1"), log);
  const auto history = load_json(run + "/history.json");
  BOOST_REQUIRE(history.size() == 3u);
  std::vector<std::vector<double>> seen(3);
  for (std::size_t e = 0; e < 3; ++e) {
    for (const auto& row : history[e]["batches"])
      for (int i = 0; i < 4; ++i)
        if (row.contains("row_" + std::to_string(i))) seen[e].push_back(row["row_" + std::to_string(i)].get<double>());
    std::sort(seen[e].begin(), seen[e].end());
  }
  BOOST_TEST(seen[0].size() == 48u);
  BOOST_TEST((std::adjacent_find(seen[0].begin(), seen[0].end()) == seen[0].end()));  // each row once
  BOOST_TEST(seen[1] == seen[0]);  // 32 rows on 2 ranks, then 16 on 1: each once
  BOOST_TEST(seen[2] == seen[0]);
  BOOST_TEST(!history[0].contains("world_size"));
  BOOST_TEST(history[1].value("world_size", 0) == 1);
  BOOST_TEST(!history[2].contains("world_size"));
  BOOST_TEST(load_json(run + "/run.json")["world_size_changes"] ==
             nlohmann::json::parse(R"([{"epoch": 2, "world_size": 1}])"));
}

// A tampered trainer.json (world_size 0, missing, or pass segments that do
// not add up) is checked before resume trusts it: the checkpoint is passed
// over aloud and the one before it resumed (it was a SIGFPE: resume divided
// by the world size).
BOOST_AUTO_TEST_CASE(a_tampered_trainer_json_is_passed_over_for_the_checkpoint_before) {
  auto cfg = resumable_config();
  cfg["max_epochs"] = 2;
  cfg["callbacks"][0]["keep_last"] = 2;
  const std::string run = dir("tampered");
  BOOST_REQUIRE(skein("--config " + write_config(cfg) + " --run-dir " + run).exit_code == 0);
  const std::string newest = run + "/checkpoints/epoch_0002/trainer.json";
  const auto meta = load_json(newest);
  BOOST_REQUIRE(test::run("cp -a " + run + " " + run + ".orig").exit_code == 0);
  auto tampered = [&](const std::function<void(nlohmann::json&)>& edit) {
    BOOST_REQUIRE(test::run("rm -rf " + run + " && cp -a " + run + ".orig " + run).exit_code == 0);
    auto m = meta;
    edit(m);
    test::write_text(newest, m.dump());
    return skein("--resume " + run + " --set max_epochs=3");
  };
  for (const auto& edit : std::vector<std::function<void(nlohmann::json&)>>{
           [](nlohmann::json& m) { m["world_size"] = 0; }, [](nlohmann::json& m) { m.erase("world_size"); },
           [](nlohmann::json& m) { m["world_size"] = -3; },
           [](nlohmann::json& m) {
             m["open_epoch"] = {{"epoch", 3}, {"next_batch", 2}, {"train_samples", 48}, {"batch_size", 16},
                                {"accumulate_steps", 1}, {"passes", {{{"world_size", 1}, {"batches", 5}}}}};
           }}) {
    auto r = tampered(edit);
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(contains(r.err, "passed over the checkpoint of unreadable " + newest), r.err);
    BOOST_TEST(contains(r.out, "Resumed from " + run + "/checkpoints/epoch_0001"), r.out);
  }
}

// A chain of resumes inside one epoch, 2 -> 1 -> 2 processes, each attempt
// killed (SIGKILL) in epoch 2 after a step checkpoint: the third attempt
// trains only what the first two left, so epoch 2 holds each of the 48
// training rows once (before the pass remembered its segments, the second
// resume re-sharded the one-process stretch as if it had begun the epoch:
// 64 rows, 16 of them twice).
BOOST_AUTO_TEST_CASE(a_chain_of_resumes_inside_an_epoch_trains_each_sample_once) {
  auto cfg = numbered_rows_config(dir("chain_rows.csv"));
  cfg["max_epochs"] = 2;
  const std::string run = dir("chain");
  const std::string probe = " --plugin-dir " TEST_PLUGIN_DIR " --plugin probe_callback:record_rows=true,signal=9,";
  // 2 ranks: epoch 2's batches 0-3 (step 10) are checkpointed, rank 1 dies as batch 5 begins.
  auto first = skein("--nproc-per-node 2 --timeout 60 --config " + write_config(cfg) + " --run-dir " + run + probe +
                     "signal_at=2,signal_batch=5,signal_rank=1");
  BOOST_TEST(first.exit_code != 0);
  BOOST_REQUIRE(fs::exists(run + "/checkpoints/step_00000010/open_epoch.json"));
  // 1 rank: the 16 rows left are 4 batches (4-7); 4 and 5 are checkpointed (step 12), it dies as 6 begins.
  auto second = skein("--resume " + run + probe + "signal_at=2,signal_batch=6,signal_rank=0");
  BOOST_TEST(second.exit_code != 0);
  BOOST_REQUIRE(fs::exists(run + "/checkpoints/step_00000012/open_epoch.json"));
  // 2 ranks again: the 8 rows the one-rank stretch left, one batch each.
  auto third = skein("--resume " + run + " --nproc-per-node 2 --timeout 60" + probe + "signal_at=0");
  BOOST_REQUIRE_MESSAGE(third.exit_code == 0, third.err);
  const std::string log = test::read_text(run + "/train.log");
  BOOST_TEST(contains(log, "World size 1 -> 2"), log);
  BOOST_TEST(contains(log, "the rest of epoch 2 after train batch 6 of each of the 1 ranks (on 1 since batch 4)"), log);
  const auto history = load_json(run + "/history.json");
  BOOST_REQUIRE(history.size() == 2u);
  std::vector<double> seen[2];
  for (std::size_t e = 0; e < 2; ++e) {
    for (const auto& row : history[e]["batches"])
      for (int i = 0; i < 4; ++i)
        if (row.contains("row_" + std::to_string(i))) seen[e].push_back(row["row_" + std::to_string(i)].get<double>());
    std::sort(seen[e].begin(), seen[e].end());
  }
  BOOST_TEST(seen[0].size() == 48u);
  BOOST_TEST(seen[1] == seen[0]);  // 32 rows on 2 ranks, 8 on 1, 8 on 2: each once
  const auto meta = load_json(run + "/checkpoints/step_00000012/trainer.json");
  BOOST_TEST(meta["open_epoch"]["passes"] ==
             nlohmann::json::parse(R"([{"world_size": 2, "batches": 4}, {"world_size": 1, "batches": 2}])"));
}

BOOST_AUTO_TEST_CASE(checkpoint_parameters_load_as_a_state_dict) {
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 1;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  const std::string run = dir("sd");
  BOOST_REQUIRE(skein("--config " + write_config(cfg) + " --run-dir " + run).exit_code == 0);
  const std::string bytes = test::read_text(run + "/checkpoints/epoch_0001/model_state_dict.pt");
  BOOST_TEST(bytes.rfind("PK", 0) == 0u);  // the zip container torch.load reads
  auto value = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  BOOST_REQUIRE(value.isGenericDict());
  auto dict = value.toGenericDict();
  BOOST_TEST(dict.size() == 4u);  // net.1.weight, net.1.bias, net.3.weight, net.3.bias
  BOOST_TEST(dict.contains("net.1.weight"));
  BOOST_TEST(dict.at("net.1.weight").toTensor().sizes() == torch::IntArrayRef({32, 16}));
}

BOOST_AUTO_TEST_CASE(logging_outputs_are_written_once_with_metrics_of_all_ranks) {
  auto cfg = test::synthetic_config();
  cfg["parallel"] = {{"plugin", "ddp"}};
  cfg["history"] = {{"plugin", "tcpstore"}};
  // Loggers listed before the callbacks whose keys they show (timer's train_dur).
  cfg["callbacks"] = {{{"plugin", "print_log"}, {"columns", {"epoch", "valid_loss", "train_dur", "nope"}}},
                      {{"plugin", "progress_bar"}, {"every", 3}},
                      {{"plugin", "jsonl"}, {"batches", true}},
                      {{"plugin", "tensorboard"}},
                      {{"plugin", "report"}},
                      {{"plugin", "scoring"}, {"scores", {"train_acc", "valid_error", "valid_top2_acc"}}},
                      {{"plugin", "timer"}},
                      {{"plugin", "checkpoint"}}};
  const std::string run = dir("logs");
  auto r = skein("--nproc-per-node 2 --timeout 60 --config " + write_config(cfg) + " --run-dir " + run);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto history = load_json(run + "/history.json");
  BOOST_REQUIRE(history.size() == 3u);

  // print_log: every chosen column another callback writes; one that no one
  // writes is said once.
  BOOST_TEST(contains(r.out, "train_dur"), r.out);
  const auto nope = r.err.find("print_log: column(s) 'nope' are not in the history of epoch 1");
  BOOST_TEST(nope != std::string::npos, r.err);
  BOOST_TEST(r.err.find("'nope'", nope + 30) == std::string::npos, r.err);

  // progress_bar: plain lines (stdout is a pipe), from rank 0 only.
  BOOST_TEST(contains(r.out, "Epoch 1: 3/6 batches"), r.out);
  BOOST_TEST(contains(r.out, "Epoch 3: 6/6 batches"), r.out);
  BOOST_TEST(!contains(r.out, "[rank 1]"), r.out);

  // jsonl: 16 batch lines (6 train + 2 valid per rank) then the epoch, per epoch.
  std::vector<nlohmann::json> lines;
  std::istringstream jsonl(test::read_text(run + "/metrics.jsonl"));
  for (std::string line; std::getline(jsonl, line);) lines.push_back(nlohmann::json::parse(line));
  BOOST_REQUIRE(lines.size() == 3u * 17u);
  BOOST_TEST(lines[16]["epoch"].get<int>() == 1);
  BOOST_TEST(!lines[16].contains("batches"));
  BOOST_TEST(lines[16]["valid_loss"].get<double>() == history[0]["valid_loss"].get<double>());
  BOOST_TEST(lines[0]["batch"].get<int>() == 0);
  BOOST_TEST(lines[16]["train_dur"].get<double>() == history[0]["train_dur"].get<double>());

  // scoring and timer: merged over ranks like the built-in values.
  const auto& last = history.back();
  BOOST_TEST(last["valid_error"].get<double>() == 1 - last["valid_acc"].get<double>(),
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(last["valid_top2_acc"].get<double>() >= last["valid_acc"].get<double>());
  BOOST_TEST(last["train_acc"].get<double>() > 0.5);
  BOOST_TEST(last["train_dur"].get<double>() > 0);
  BOOST_TEST(last["samples_per_s"].get<double>() > 0);

  // tensorboard: one file; every record's framing and CRCs, tags, steps, values.
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(run + "/tensorboard")) files.push_back(e.path());
  BOOST_REQUIRE(files.size() == 1u);
  BOOST_TEST(contains(files[0].filename().string(), "events.out.tfevents."));
  std::string version;
  auto scalars = parse_events(files[0].string(), version);
  BOOST_TEST(version == "brain.Event:2");
  int seen = 0;
  BOOST_TEST(std::count_if(scalars.begin(), scalars.end(), [](const auto& s) { return s.tag == "train_dur"; }) == 3);
  for (const auto& s : scalars) {
    if (s.tag != "valid_loss") continue;
    BOOST_TEST(s.value == history[s.step - 1]["valid_loss"].get<float>());
    ++seen;
  }
  BOOST_TEST(seen == 3);

  // report: charts with best marks, the config, no script.
  const std::string html = test::read_text(run + "/report.html");
  BOOST_TEST(contains(html, "<svg"));
  BOOST_TEST(contains(html, "class='best'"));
  BOOST_TEST(contains(html, "valid_loss"));
  BOOST_TEST(contains(html, "tensorboard</td>"));  // plugin versions table
  BOOST_TEST(!contains(html, "<script"));

  // The test split's confusion matrix, over both ranks: every test sample
  // once, its diagonal the test accuracy; in report.html too.
  const auto results = load_json(run + "/results.json");
  const auto& matrix = results.at("test_confusion_matrix");
  BOOST_TEST_REQUIRE(matrix.size() == 4u);
  double total = 0, right = 0;
  for (std::size_t t = 0; t < 4; ++t)
    for (std::size_t p = 0; p < 4; ++p) {
      total += matrix[t][p].get<double>();
      if (t == p) right += matrix[t][p].get<double>();
    }
  BOOST_TEST(total == results["test_samples"].get<double>());
  BOOST_TEST(right / total == results["test_accuracy"].get<double>(), boost::test_tools::tolerance(1e-9));
  BOOST_TEST(contains(html, "<h3>Confusion matrix</h3>"));
  BOOST_TEST(contains(html, "test_accuracy"));

  // One checkpoint writer: no temporary directories left.
  for (auto& e : fs::directory_iterator(run + "/checkpoints"))
    BOOST_TEST(e.path().filename().string()[0] != '.', e.path());
}

BOOST_AUTO_TEST_CASE(early_stopping_stops_every_rank_on_the_same_epoch) {
  auto cfg = test::synthetic_config();
  cfg["model"] = {{"plugin", "probe_model"}};
  cfg["parallel"] = {{"plugin", "ddp"}};
  cfg["history"] = {{"plugin", "tcpstore"}};
  cfg["max_epochs"] = 10;
  // Needs an absolute gain of 5 in train loss: never after the first epoch.
  cfg["callbacks"] = {{{"plugin", "early_stopping"}, {"monitor", "train_loss"}, {"patience", 2},
                       {"threshold", 5.0}, {"threshold_mode", "abs"}},
                      {{"plugin", "lr_scheduler"}, {"policy", "plateau"}, {"patience", 0}},
                      {{"plugin", "probe_callback"}, {"dump", true}}};
  const std::string run = dir("es");
  auto r = skein("--nproc-per-node 2 --timeout 60 --plugin-dir " TEST_PLUGIN_DIR " --config " +
                 write_config(cfg) + " --run-dir " + run);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  auto h0 = load_json(run + "/probe_history_rank0.json");
  auto h1 = load_json(run + "/probe_history_rank1.json");
  BOOST_TEST(h0.size() == 3u);
  BOOST_TEST(h0 == h1);  // including the learning rates chosen on plateau
  BOOST_TEST(contains(r.out, "did not improve for 2 epochs"), r.out);
}

// (terminate_on_nan's own test: plugins/callback/terminate_on_nan.)
BOOST_AUTO_TEST_CASE(a_nan_loss_is_recorded_and_can_stop_the_run) {
  auto cfg = test::synthetic_config();
  cfg["optimizer"] = {{"name", "sgd"}, {"lr", 1e30}};
  cfg["max_epochs"] = 5;
  const std::string recorded = dir("nan"), stopped = dir("nanstop");
  const std::string config = write_config(cfg);
  BOOST_REQUIRE(skein("--config " + config + " --run-dir " + recorded).exit_code == 0);
  auto h = load_json(recorded + "/history.json");
  BOOST_TEST(h.size() == 5u);
  BOOST_TEST(h.back()["train_loss"].get<std::string>() == "NaN");  // the documented encoding
  auto r = skein("--config " + config + " --run-dir " + stopped + " --plugin terminate_on_nan");
  BOOST_REQUIRE(r.exit_code == 0);
  BOOST_TEST(contains(r.out, "train_loss is NaN at epoch"), r.out);
  BOOST_TEST(load_json(stopped + "/history.json").size() < 5u);
}


// A resume uses the plugin files the run started with; when one is gone, it
// says so the one way warnings go: on stderr, and in train.log.
BOOST_AUTO_TEST_CASE(a_resume_warns_on_stderr_and_in_the_log_when_a_plugin_file_is_gone) {
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 1;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  const std::string config = write_config(cfg);
  const std::string plugins = dir("own_plugins"), run = dir("run");
  fs::create_directories(plugins);
  const std::string copy = plugins + "/libskein_callback_timer.so";
  fs::copy_file(std::string(SKEIN_PLUGIN_DIR) + "/libskein_callback_timer.so", copy);
  BOOST_REQUIRE(skein("--config " + config + " --run-dir " + run + " --plugin " + copy).exit_code == 0);
  fs::remove(copy);
  auto r = skein("--resume " + run + " --set max_epochs=2");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string warning = "skein: warning: plugin 'timer' was loaded from " + copy;
  BOOST_TEST(contains(r.err, warning), r.err);
  BOOST_TEST(contains(test::read_text(run + "/train.log"), warning));
  BOOST_TEST(!contains(r.out, warning), r.out);
}

// A run directory written before the run's keys and trainer.json's were
// declared once (tests/data/run_0_1_api_3_6: skein 0.1, plugin API 3.6; 2
// epochs of a small MLP with standardize, checkpoints every epoch and every
// 3 steps). Each checkpoint is accepted and reads back to the very JSON it
// holds (the writer of today writes what the old one wrote), and the run
// resumes to a third epoch; a resume that changes its batch size is refused
// naming the keys a resume may change, from the keys' table.
BOOST_AUTO_TEST_CASE(a_run_written_before_the_keys_were_declared_once_still_loads) {
  const std::string old_run = SKEIN_SOURCE_DIR "/tests/data/run_0_1_api_3_6";
  for (const char* name : {"best", "epoch_0002", "step_00000009", "final"}) {
    const std::string checkpoint = old_run + "/checkpoints/" + name;
    const skein::core::CheckpointMeta meta = skein::core::read_checked_checkpoint(checkpoint);
    BOOST_TEST(skein::core::checkpoint_meta_json(meta) == load_json(checkpoint + "/trainer.json"), name);
    BOOST_TEST(meta.seed == 3u);
    BOOST_TEST(meta.model == "mlp");
  }
  const std::string step = old_run + "/checkpoints/step_00000009";
  const auto meta = skein::core::read_checked_checkpoint(step);
  BOOST_REQUIRE(meta.open_epoch.has_value());
  BOOST_TEST(meta.open_epoch->epoch == 2);
  BOOST_TEST(meta.open_epoch->batch_size == 8);
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& rank : skein::core::parse_open_epoch_ranks(test::read_text(step + "/open_epoch.json"), 1, step))
    ranks.push_back(skein::core::open_epoch_rank_json(rank));
  BOOST_TEST(skein::core::open_epoch_ranks_json(ranks) == load_json(step + "/open_epoch.json"));

  // The resume, under either libtorch: the run's optimizer.pt was written by
  // 1.13, whose state keys 2.x reads wrongly unless they are rewritten first
  // (torch_compat/optimizer_archive.hpp; before that, SIGSEGV in SGD::step).
  const std::string run = dir("old_run");
  BOOST_REQUIRE(test::run("cp -a " + old_run + " " + run).exit_code == 0);
  auto refused = skein("--resume " + run + " --set batch_size=4");
  BOOST_TEST(refused.exit_code == 2, refused.err);
  BOOST_TEST(contains(refused.err, "'batch_size' cannot change on --resume (8 in the run, 4 asked)"), refused.err);
  BOOST_TEST(contains(refused.err, "a resume may change only history, parallel, callbacks, max_epochs, device, "
                                   "data_workers and checkpoint_background"),
             refused.err);
  auto resumed = skein("--resume " + run + " --set max_epochs=3");
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  BOOST_TEST(contains(resumed.out, "Resumed from " + run + "/checkpoints/epoch_0002"), resumed.out);
  BOOST_TEST(load_json(run + "/history.json").size() == 3u);
  BOOST_TEST(skein::core::read_checked_checkpoint(run + "/checkpoints/final").epoch == 3);
}

// The old run's optimizer.pt (libtorch 1.13 keys each state by the
// parameter's address in hex) loads each momentum buffer onto the parameter
// it was saved for, under either libtorch: one SGD step with zero gradients
// moves each parameter by -lr * momentum * its buffer.
BOOST_AUTO_TEST_CASE(an_optimizer_archive_of_libtorch_1_13_loads_each_state_onto_its_parameter) {
  const std::string file = SKEIN_SOURCE_DIR "/tests/data/run_0_1_api_3_6/checkpoints/epoch_0002/optimizer.pt";
  torch::serialize::InputArchive saved;
  saved.load_from(file);
  torch::serialize::InputArchive groups;
  torch::serialize::InputArchive group;
  torch::serialize::InputArchive states;
  saved.read("param_groups", groups);
  groups.read("param_groups/0", group);
  saved.read("state", states);
  std::vector<torch::Tensor> params;
  std::vector<torch::Tensor> buffers;
  for (int i = 0; i < 4; ++i) {
    c10::IValue key;
    group.read("params/" + std::to_string(i), key);
    BOOST_TEST(key.toStringRef().rfind("0x", 0) == 0u, key.toStringRef());  // 1.13's form
    torch::serialize::InputArchive state;
    states.read(key.toStringRef(), state);
    c10::IValue buffer;
    state.read("momentum_buffer", buffer);
    buffers.push_back(buffer.toTensor());
    params.push_back(torch::zeros_like(buffers.back()).requires_grad_());
  }
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::serialize::InputArchive archive;
  archive.load_from(file);
  skein::torch_compat::load_optimizer(sgd, archive);
  for (auto& p : params) p.mutable_grad() = torch::zeros_like(p);
  sgd.step();
  for (std::size_t i = 0; i < params.size(); ++i)
    BOOST_TEST(torch::allclose(params[i], -0.1 * 0.9 * buffers[i]), "parameter " << i);
}

BOOST_AUTO_TEST_SUITE_END()
