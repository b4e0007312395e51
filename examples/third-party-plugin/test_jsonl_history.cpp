// jsonl_history tested on the real engine (skein/testing.hpp's EngineRun):
// two ranks as threads sharing a store, as under `skein train --nproc-per-node 2`.
#define BOOST_TEST_MODULE jsonl_history
#include <boost/test/unit_test.hpp>

#include <fstream>

#include <skein/testing.hpp>

namespace {

skein::testing::EngineRunOptions two_ranks() {
  auto options = skein::testing::small_run("history", {{"plugin", "jsonl_history"}}, 2);
  options.plugin_paths = {JSONL_HISTORY_PLUGIN};
  return options;
}

std::vector<nlohmann::json> lines_of(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string text; std::getline(in, text);)
    lines.push_back(nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false));
  return lines;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(jsonl_history)

BOOST_AUTO_TEST_CASE(every_rank_holds_the_batches_of_all_ranks) {
  skein::testing::EngineRun run(two_ranks());
  BOOST_TEST(run.fit() == (std::vector<long>{2, 2}));
  BOOST_TEST(skein::testing::history_sync_problem(run) == "");
  BOOST_TEST(run.rank(0).context().history().get(0, "batches").size() == 2u * (3u + 1u));  // train and valid
  const auto lines = lines_of(run.run_dir() + "/history_ranks/rank1.jsonl");
  BOOST_TEST_REQUIRE(lines.size() == 2u);  // one per epoch
  BOOST_TEST(lines[1]["epoch"] == 2);
  BOOST_TEST(lines[1]["run"] == run.rank(1).context().run().run_id);
}

// A resumed or restarted run gets a new run_id: the lines a killed attempt
// left (a whole one of the same epoch, a torn one) are not this run's.
BOOST_AUTO_TEST_CASE(a_killed_attempts_lines_are_not_read) {
  skein::testing::EngineRun run(two_ranks());
  {
    std::ofstream stale(run.run_dir() + "/history_ranks/rank1.jsonl");
    stale << R"({"run": "killed", "epoch": 1, "rows": [{"train_loss": 99}]})" << "\n"
          << R"({"run": "killed", "epoch": 2, "ro)";
  }
  BOOST_TEST(run.fit() == (std::vector<long>{2, 2}));
  BOOST_TEST(skein::testing::history_sync_problem(run) == "");
  const auto batches = run.rank(0).context().history().get(0, "batches");
  BOOST_TEST(batches.size() == 2u * (3u + 1u));
  for (const auto& row : batches) BOOST_TEST(row.value("train_loss", 0.0) != 99.0);
}

BOOST_AUTO_TEST_SUITE_END()
