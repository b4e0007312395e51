#define BOOST_TEST_MODULE background_checkpoints
#include <boost/test/unit_test.hpp>

#include <set>

#include "test_support.hpp"

// checkpoint_background (issue 53): checkpoints copied at the step boundary
// and written on a thread of their own hold what a checkpoint written at
// once holds, resume to the same training, and are complete when the
// process ends on SIGTERM in the middle of one. (kill -9 and a full disk
// while they are written: test_faults.cpp; a session's close: test_session.cpp.)

namespace fs = boost::filesystem;

namespace {

using test::contains;
using test::load_json;

using Fixture = test::TrainWorkspace;

// Adam (a state to copy), epoch and step checkpoints (inside epochs too),
// keep_last 2 (removals after each write), and "best".
nlohmann::json checkpointing_config(bool background, long max_epochs) {
  auto cfg = test::synthetic_config();
  cfg["optimizer"] = {{"name", "adam"}, {"lr", 0.01}};
  cfg["max_epochs"] = max_epochs;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}, {"every_n_steps", 5}, {"keep_last", 2}}};
  cfg["checkpoint_background"] = background;
  return cfg;
}

std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> names;
  for (fs::directory_iterator it(dir), end; it != end; ++it) names.insert(it->path().filename().string());
  return names;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(background_checkpoints, Fixture)

// The same checkpoints, file for file where the bytes do not depend on
// memory addresses (the model's files, the history, the batch records), and
// a run resumed from background checkpoints trains as the one never stopped.
BOOST_AUTO_TEST_CASE(written_in_the_background_they_hold_what_a_write_at_once_holds) {
  const std::string at_once = dir("at_once"), background = dir("background"), resumed = dir("resumed");
  auto a = skein("--config " + write_config(checkpointing_config(false, 4)) + " --run-dir " + at_once);
  BOOST_REQUIRE_MESSAGE(a.exit_code == 0, a.err);
  auto b = skein("--config " + write_config(checkpointing_config(true, 4)) + " --run-dir " + background);
  BOOST_REQUIRE_MESSAGE(b.exit_code == 0, b.err);
  const auto names = names_in(at_once + "/checkpoints");
  BOOST_TEST(names.size() >= 5u);  // epoch_0003, epoch_0004, two step_*, best, final
  BOOST_TEST((names_in(background + "/checkpoints") == names));
  for (const auto& name : names) {
    const std::string x = at_once + "/checkpoints/" + name + "/", y = background + "/checkpoints/" + name + "/";
    BOOST_TEST((names_in(x) == names_in(y)), y);
    for (const char* file : {"model.pt", "model_state_dict.pt"})
      BOOST_TEST((test::read_text(x + file) == test::read_text(y + file)), y << file << " differs");
    if (fs::exists(x + "history.json"))  // its epochs' durations differ
      BOOST_TEST(test::comparable_history(load_json(x + "history.json")) ==
                 test::comparable_history(load_json(y + "history.json")), y);
  }
  // results.json: what each checkpoint held training, one entry per write.
  const auto stalls = load_json(background + "/results.json").at("checkpoint_stall_s");
  BOOST_TEST(stalls.size() == load_json(at_once + "/results.json").at("checkpoint_stall_s").size());
  BOOST_TEST(stalls.size() >= 4u);

  // Stopped after epoch 2 (its last checkpoints written in the background
  // as the run ends), then resumed: the uninterrupted run's history and model.
  auto c = skein("--config " + write_config(checkpointing_config(true, 2)) + " --run-dir " + resumed);
  BOOST_REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  auto r = skein("--resume " + resumed + " --set max_epochs=4");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(test::comparable_history(load_json(resumed + "/history.json")) ==
             test::comparable_history(load_json(at_once + "/history.json")));
  BOOST_TEST((test::read_text(resumed + "/checkpoints/epoch_0004/model.pt") ==
              test::read_text(at_once + "/checkpoints/epoch_0004/model.pt")));
}

// Under zero the optimizer's shards are gathered on rank 0 at the step
// boundary and copied there; a restart from those checkpoints trains as the
// run never stopped.
BOOST_AUTO_TEST_CASE(under_zero_a_restart_from_background_checkpoints_trains_as_the_run_never_stopped) {
  auto cfg = test::two_process_config();
  cfg["parallel"] = {{"plugin", "zero"}};
  cfg["optimizer"] = {{"name", "adam"}, {"lr", 0.01}};
  const std::string at_once = write_config(cfg);
  cfg["checkpoint_background"] = true;
  const std::string background = write_config(cfg);
  const std::string straight = dir("straight"), restarted = dir("restarted");
  auto s = skein("--config " + at_once + " --run-dir " + straight + " --nproc-per-node 2 --timeout 30");
  BOOST_REQUIRE_MESSAGE(s.exit_code == 0, s.err);
  // Rank 1 is killed in epoch 3 of the first attempt only.
  auto r = skein("--config " + background + " --run-dir " + restarted +
                 " --nproc-per-node 2 --timeout 30 --max-restarts 1 "
                 "--plugin probe_callback:signal_at=3,signal=9,signal_rank=1,only_attempt=0");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.err, "restarting all workers (restart 1 of 1)"), r.err);
  BOOST_TEST(contains(r.out, "Resumed from " + restarted + "/checkpoints/epoch_000"), r.out);
  test::expect_same_training(straight, restarted);
}

// SIGTERM in the middle of a background write: one process stops at the
// next batch boundary and waits for the write; a worker of several, whose
// SIGTERM would end it at once, holds the signal until the write is done.
// Either way the checkpoint being written is complete and resumes.
BOOST_AUTO_TEST_CASE(sigterm_in_the_middle_of_a_background_write_ends_the_process_after_it) {
  auto one_process = test::synthetic_config();  // a checkpoint at every epoch's end, none inside
  one_process["callbacks"] = {{{"plugin", "checkpoint"}}};
  one_process["checkpoint_background"] = true;
  const std::string config = write_config(one_process);
  const std::string one = dir("one");
  auto r = skein("--config " + config + " --run-dir " + one, test::with_fault("SKEIN_TEST_TERM_IN_CHECKPOINT=2"));
  BOOST_TEST(r.exit_code == 143, r.err);
  BOOST_TEST(contains(r.err, "interrupted by SIGTERM"), r.err);
  // Epoch 2's, or epoch 3's when the run reached its end before the signal
  // (it then waits for epoch 2's write, and epoch 3's replaces it).
  const auto kept = names_in(one + "/checkpoints");
  BOOST_TEST((kept.count("epoch_0002") + kept.count("epoch_0003") == 1u), r.err);
  for (const auto& name : kept) {
    BOOST_TEST(name.rfind(".tmp-", 0) != 0u, name);
    BOOST_TEST(fs::exists(one + "/checkpoints/" + name + "/trainer.json"), name);
  }
  auto resumed = skein("--resume " + one + " --set max_epochs=4");
  BOOST_TEST(resumed.exit_code == 0, resumed.err);

  auto cfg = test::two_process_config();
  cfg["checkpoint_background"] = true;
  const std::string two = dir("two");
  auto w = skein("--config " + write_config(cfg) + " --run-dir " + two + " --nproc-per-node 2 --timeout 30",
                 test::with_fault("SKEIN_TEST_TERM_IN_CHECKPOINT=2"));
  BOOST_TEST(w.exit_code != 0, w.err);
  BOOST_TEST(contains(w.err, "signal 15"), w.err);  // rank 0 ended by its SIGTERM, once the write was done
  BOOST_TEST(fs::exists(two + "/checkpoints/epoch_0002/trainer.json"), w.err);
  for (const auto& name : names_in(two + "/checkpoints")) BOOST_TEST(name.rfind(".tmp-", 0) != 0u, name);
  auto resumed_two = skein("--resume " + two + " --nproc-per-node 2 --timeout 30");
  BOOST_TEST(resumed_two.exit_code == 0, resumed_two.err);
  BOOST_TEST(contains(resumed_two.out, "epoch_0002"), resumed_two.out);
}

BOOST_AUTO_TEST_SUITE_END()
