// checkpoint_writer and checkpoint_restore: what one writes the other reads.
#include <sys/stat.h>

#include <fstream>
#include <thread>

#include <boost/filesystem.hpp>
#include <boost/test/unit_test.hpp>

#include "engine_fixture.hpp"
#include "skein/training/config/config.hpp"
#include "skein/host/plugin_registry.hpp"
#include "skein/errors.hpp"
#include "skein/training/engine/checkpoint_restore.hpp"
#include "skein/training/engine/checkpoint_writer.hpp"
#include "skein/training/checkpoint/digest.hpp"
#include "skein/training/engine/train_step.hpp"

using skein::core::CheckpointWriter;
using skein::core::EpochPosition;
using skein::testing::message_of;

namespace {

struct CheckpointFixture : engine_test::Engine {
  skein::testing::TempDir dir;
  skein::core::PluginRecord mlp;
  skein::core::RunConfig config;
  skein::RunInfo run;
  CheckpointFixture() {
    mlp.name = "mlp";
    config.model.record = &mlp;
    run.run_dir = dir.str();
    callback->saved = {{"wait", 2}};
    // One trained epoch.
    skein::core::TrainStep step(step_parts(), 1);
    history.new_epoch();
    auto b = batch(4);
    step.run(b, 1);
    history.commit_batches();
    history.record("train_loss", b.loss.item<double>());
  }
  std::vector<torch::Tensor> weights() {
    std::vector<torch::Tensor> out;
    for (const auto& p : parts.model->parameters()) out.push_back(p.detach().clone());
    return out;
  }
  std::string checkpoint(const std::string& name) const { return dir.str("checkpoints/" + name); }
};

// The bytes this process has read so far (Linux's /proc/self/io "rchar").
long long bytes_read() {
  std::ifstream io("/proc/self/io");
  std::string name;
  long long value = 0;
  while (io >> name >> value)
    if (name == "rchar:") return value;
  BOOST_FAIL("no rchar in /proc/self/io");
  return 0;
}

ino_t inode_of(const std::string& path) {
  struct stat s {};
  ::stat(path.c_str(), &s);
  return s.st_ino;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(checkpoints, CheckpointFixture)

BOOST_AUTO_TEST_CASE(a_written_checkpoint_restores_model_optimizer_history_and_callbacks) {
  CheckpointWriter writer(parts, history, config, run, nullptr);
  writer.write(writer.root(), "epoch_1", EpochPosition{1});
  const auto saved = weights();
  parts.optimizer->param_groups()[0].options().set_lr(0.5);
  for (auto& p : parts.model->parameters()) p.detach().zero_();
  callback->saved = nullptr;
  skein::History other;
  const auto restored = skein::core::restore_checkpoint(checkpoint("epoch_1"), parts, other, config, run);
  BOOST_TEST(restored.epoch == 1);
  BOOST_TEST(!restored.open.has_value());
  const auto now = weights();
  for (std::size_t i = 0; i < saved.size(); ++i) BOOST_TEST(torch::equal(now[i], saved[i]));
  BOOST_TEST(parts.optimizer->param_groups()[0].options().get_lr() == 0.1);
  BOOST_TEST(other.dump() == history.dump());
  BOOST_TEST(callback->saved == (nlohmann::json{{"wait", 2}}));
}

BOOST_AUTO_TEST_CASE(requested_checkpoints_share_files_and_replace_what_they_name) {
  CheckpointWriter writer(parts, history, config, run, nullptr);
  writer.write(writer.root(), "old", EpochPosition{1});
  writer.request("epoch_1", {});
  writer.request("best", {"old"});
  BOOST_TEST(writer.requested());
  writer.write_requested(EpochPosition{1});
  BOOST_TEST(!writer.requested());
  BOOST_TEST(!boost::filesystem::exists(checkpoint("old")));
  BOOST_TEST(inode_of(checkpoint("best") + "/model.pt") == inode_of(checkpoint("epoch_1") + "/model.pt"));
}

BOOST_AUTO_TEST_CASE(a_name_that_is_not_one_directory_is_refused) {
  CheckpointWriter writer(parts, history, config, run, nullptr);
  BOOST_TEST(message_of<skein::ConfigError>([&] { writer.request("../x", {}); }) ==
             "request_checkpoint: checkpoint '../x' is not a checkpoint name (one directory name, not starting "
             "with '.', no '/')");
  BOOST_TEST(skein::testing::contains(message_of<skein::ConfigError>([&] { writer.request("a", {".tmp"}); }),
                                      "request_checkpoint: remove_after '.tmp'"));
}

BOOST_AUTO_TEST_CASE(ranks_that_ask_for_different_checkpoints_fail_together) {
  skein::testing::ThreadRanks ranks(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      skein::RunInfo mine = run;
      mine.rank = r;
      mine.world_size = 2;
      skein::core::RunParts rank_parts;
      rank_parts.parallel = std::make_shared<skein::testing::FakeParallel>(&ranks);
      CheckpointWriter writer(rank_parts, history, config, mine, nullptr);
      writer.request(r == 0 ? "a" : "b", {});
      errors[r] = message_of([&] { writer.write_requested(EpochPosition{3}); });
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors) BOOST_TEST(skein::testing::contains(e, "ranks asked for different checkpoints at epoch 3"));
}

// Elastic: a checkpoint resumes on another world size, each rank's random
// stream seeded from the seed, the position and the rank.
BOOST_AUTO_TEST_CASE(a_checkpoint_resumes_on_another_world_size) {
  CheckpointWriter writer(parts, history, config, run, nullptr);
  writer.write(writer.root(), "epoch_1", EpochPosition{1});
  writer.write(writer.root(), "step_1", EpochPosition{2, true, 1, 0.5});
  {  // as a run with data writes it (this fixture has none)
    const std::string meta = checkpoint("step_1") + "/trainer.json";
    std::ifstream in(meta);
    nlohmann::json j = nlohmann::json::parse(in);
    j["open_epoch"]["train_samples"] = 64;
    std::ofstream(meta, std::ios::trunc) << j.dump();
  }
  skein::RunInfo two = run;
  two.world_size = 2;
  std::vector<torch::Tensor> draws;
  for (int rank : {0, 1, 0}) {
    two.rank = rank;
    const auto restored = skein::core::restore_checkpoint(checkpoint("epoch_1"), parts, history, config, two);
    BOOST_TEST(restored.epoch == 1);
    BOOST_TEST(restored.world_size_was == 1);
    BOOST_TEST(skein::testing::contains(restored.note, "World size 1 -> 2"), restored.note);
    draws.push_back(torch::rand({4}));
  }
  BOOST_TEST(!torch::equal(draws[0], draws[1]));  // each rank its own stream
  BOOST_TEST(torch::equal(draws[0], draws[2]));   // and the same one every time
  const auto same = skein::core::restore_checkpoint(checkpoint("epoch_1"), parts, history, config, run);
  BOOST_TEST(same.world_size_was == 0);
  BOOST_TEST(same.note.empty());
  // A step checkpoint too (the rest of its epoch is re-sharded: test_training_data, test_runs).
  two.rank = 1;
  const auto open = skein::core::restore_checkpoint(checkpoint("step_1"), parts, history, config, two);
  BOOST_TEST(open.world_size_was == 1);
  BOOST_TEST(open.open.has_value());
}

BOOST_AUTO_TEST_CASE(a_checkpoint_of_another_model_shape_does_not_restore) {
  CheckpointWriter writer(parts, history, config, run, nullptr);
  writer.write(writer.root(), "epoch_1", EpochPosition{1});
  parts.model = harness.create<skein::Model>("mlp", {{"hidden", {5}}}, &info);
  const auto message = message_of<skein::ConfigError>(
      [&] { skein::core::restore_checkpoint(checkpoint("epoch_1"), parts, history, config, run); });
  BOOST_TEST(skein::testing::contains(message, "/model.pt does not fit this run: "), message);
}

// The model's files are summed while they are written (Crc64Streambuf), not
// read back: the same checksums as reading them, as old checkpoints hold.
BOOST_AUTO_TEST_CASE(checksums_taken_while_writing_equal_those_of_the_written_files) {
  BOOST_TEST(skein::core::crc64_hex("123456789") == "995dc9bbdf1939fa");  // CRC-64/XZ's check value
  std::string bytes;
  for (int i = 0; i < 100000; ++i) bytes.push_back(static_cast<char>(i * 7919 % 251));
  const std::string path = dir.str("streamed.bin");
  std::string streamed;
  {
    std::ofstream file(path, std::ios::binary);
    skein::core::Crc64Streambuf summed(*file.rdbuf());
    std::ostream out(&summed);
    out.write(bytes.data(), 1000);                  // a piece
    for (int i = 1000; i < 1010; ++i) out.put(bytes[static_cast<std::size_t>(i)]);  // a byte at a time
    out << bytes.substr(1010);
    out.flush();
    BOOST_TEST(static_cast<bool>(out));
    streamed = summed.hex();
  }
  BOOST_TEST(streamed == skein::core::crc64_hex_of_file(path).value_or("unreadable"));
  BOOST_TEST(streamed == skein::core::crc64_hex(bytes));
  std::ifstream back(path, std::ios::binary);
  BOOST_TEST((std::string(std::istreambuf_iterator<char>(back), {}) == bytes));

  CheckpointWriter writer(parts, history, config, run, nullptr);
  writer.write(writer.root(), "epoch_1", EpochPosition{1});
  const auto meta = skein::core::read_checked_checkpoint(checkpoint("epoch_1"));
  int summed_files = 0;
  for (const auto& [file, checksum] : meta.files) {
    if (file != "model.pt" && file != "model_state_dict.pt") continue;
    ++summed_files;
    BOOST_TEST(checksum == skein::core::crc64_hex_of_file(checkpoint("epoch_1") + "/" + file).value_or(""), file);
  }
  BOOST_TEST(summed_files == 2);
}

// Writing the model's files reads none of them back: the readability check
// loads a skeleton of the model (names, empty tensors), not model.pt, so
// rank 0 never holds a second copy of the weights; the checksums are taken
// as the files are written.
BOOST_AUTO_TEST_CASE(writing_a_model_reads_nothing_back) {
  parts.model = harness.create<skein::Model>("mlp", {{"hidden", {1000, 1000}}}, &info);  // 4 MB of weights
  CheckpointWriter writer(parts, history, config, run, nullptr);
  const long long before = bytes_read();
  writer.write(writer.root(), "final", EpochPosition{1}, skein::core::CheckpointParts{true, 1});
  const long long read = bytes_read() - before;
  const auto model_bytes = static_cast<long long>(boost::filesystem::file_size(checkpoint("final") + "/model.pt"));
  BOOST_TEST(model_bytes > 4'000'000);
  BOOST_TEST(read < model_bytes / 100, read << " bytes read for a model.pt of " << model_bytes);
}

// A caller that read trainer.json (a session, to refuse a step checkpoint)
// restores from what it read: the file is not read again.
BOOST_AUTO_TEST_CASE(a_checkpoint_restores_from_its_trainer_json_as_read_before) {
  CheckpointWriter writer(parts, history, config, run, nullptr);
  writer.write(writer.root(), "epoch_1", EpochPosition{1});
  const auto meta = skein::core::read_checked_checkpoint(checkpoint("epoch_1"));
  boost::filesystem::remove(checkpoint("epoch_1") + "/trainer.json");
  skein::History other;
  const auto restored = skein::core::restore_checkpoint(checkpoint("epoch_1"), meta, parts, other, config, run);
  BOOST_TEST(restored.epoch == 1);
  BOOST_TEST(other.dump() == history.dump());
}

BOOST_AUTO_TEST_SUITE_END()
