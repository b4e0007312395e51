#define BOOST_TEST_MODULE callback_jsonl
#include <boost/test/unit_test.hpp>

#include <fstream>

#include "skein/testing.hpp"

BOOST_AUTO_TEST_SUITE(callback_jsonl)

BOOST_AUTO_TEST_CASE(rank_0_writes_one_line_per_epoch_with_every_ranks_values) {
  auto options = skein::testing::small_run("callbacks", {{{"plugin", "jsonl"}}}, 2);
  options.config["history"] = {{"plugin", "filestore"}};
  skein::testing::EngineRun run(options);
  run.fit();
  std::ifstream in(run.run_dir() + "/metrics.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  BOOST_TEST_REQUIRE(lines.size() == 2u);  // once, not once per rank
  const auto& history = run.rank(1).context().history();
  BOOST_TEST(lines[1].at("train_loss") == history.get(1, "train_loss"));  // the synced values
  BOOST_TEST(!lines[0].contains("batches"));
}

BOOST_AUTO_TEST_SUITE_END()
