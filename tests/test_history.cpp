#define BOOST_TEST_MODULE history
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

#include "skein/history.hpp"
#include "skein/training/engine/epoch_summary.hpp"
#include "test_support.hpp"

using skein::BatchLog;
using skein::History;

namespace {
History two_epochs() {
  History h;
  for (int e = 0; e < 2; ++e) {
    h.new_epoch();
    auto& log = h.batches();
    int loss = log.key("train_loss"), size = log.key("train_batch_size");
    for (int b = 0; b < 3; ++b) {
      log.new_row();
      log.put(loss, 1.0 / (b + 1 + e));
      log.put(size, 32);
    }
    h.commit_batches();
    h.record("train_loss", 0.5 - e * 0.1);
    h.record("dur", 1.25);
  }
  return h;
}
}  // namespace

BOOST_AUTO_TEST_CASE(epochs_have_skorch_shape) {
  History h = two_epochs();
  BOOST_TEST(h.size() == 2u);
  const auto& e1 = h.epochs()[0];
  BOOST_TEST(e1["epoch"].get<int>() == 1);
  BOOST_TEST(h.epochs()[1]["epoch"].get<int>() == 2);
  BOOST_REQUIRE(e1["batches"].is_array());
  BOOST_TEST(e1["batches"].size() == 3u);
  BOOST_TEST(e1["batches"][1]["train_loss"].get<double>() == 0.5);
  BOOST_TEST(e1["batches"][2]["train_batch_size"].get<double>() == 32.0);
  BOOST_TEST(!e1["batches"][0].contains("rank"));
  BOOST_TEST(h.get(-1, "train_loss").get<double>() == 0.4, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(h.get(5, "train_loss").is_null());
  BOOST_TEST(h.get(0, "missing").is_null());
}

BOOST_AUTO_TEST_CASE(json_round_trip_through_a_file) {
  test::TempDir tmp;
  History h = two_epochs();
  h.save(tmp.str("history.json"));
  History back = History::load(tmp.str("history.json"));
  BOOST_TEST(back.epochs() == h.epochs());
  // The file is a plain JSON array of epoch objects, as skorch writes it.
  auto raw = nlohmann::json::parse(test::read_text(tmp.str("history.json")));
  BOOST_TEST(raw.is_array());
  BOOST_TEST(raw.size() == 2u);
}

BOOST_AUTO_TEST_CASE(non_finite_values_survive_the_round_trip) {
  History h;
  h.new_epoch();
  h.record("valid_loss", std::numeric_limits<double>::quiet_NaN());
  h.record("up", std::numeric_limits<double>::infinity());
  h.record("down", -std::numeric_limits<double>::infinity());
  auto text = h.dump();
  BOOST_TEST(text.find("\"NaN\"") != std::string::npos);
  BOOST_TEST(text.find("\"Infinity\"") != std::string::npos);
  History back = History::from_json(nlohmann::json::parse(text));
  BOOST_TEST(std::isnan(back.get(0, "valid_loss").get<double>()));
  BOOST_TEST(back.get(0, "up").get<double>() == std::numeric_limits<double>::infinity());
  BOOST_TEST(back.get(0, "down").get<double>() == -std::numeric_limits<double>::infinity());
}

BOOST_AUTO_TEST_CASE(batch_logs_of_ranks_merge_in_rank_order) {
  History h;
  h.new_epoch();
  std::vector<BatchLog> logs(2);
  for (int r = 0; r < 2; ++r) {
    int k = logs[r].key("train_loss");
    for (int b = 0; b < 2; ++b) {
      logs[r].new_row();
      logs[r].put(k, r * 10 + b);
    }
  }
  // Through the wire format, as a store backend would.
  std::vector<BatchLog> received;
  for (const auto& l : logs) received.push_back(BatchLog::from_bytes(l.to_bytes()));
  h.commit_batches(received);
  const auto& batches = h.last()["batches"];
  BOOST_REQUIRE(batches.size() == 4u);
  BOOST_TEST(batches[0]["rank"].get<int>() == 0);
  BOOST_TEST(batches[2]["rank"].get<int>() == 1);
  BOOST_TEST(batches[3]["train_loss"].get<double>() == 11.0);
  BOOST_TEST(h.batches().rows() == 0u);
}

BOOST_AUTO_TEST_CASE(corrupt_batch_bytes_are_rejected) {
  BatchLog log;
  log.new_row();
  log.put(log.key("x"), 1.0);
  std::string bytes = log.to_bytes();
  BOOST_CHECK_THROW(BatchLog::from_bytes(bytes.substr(0, bytes.size() - 3)), std::runtime_error);
  BOOST_CHECK_THROW(BatchLog::from_bytes(""), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(bad_history_files_name_the_problem) {
  test::TempDir tmp;
  test::write_text(tmp.str("h.json"), R"([{"epoch": 1}])");
  try {
    History::load(tmp.str("h.json"));
    BOOST_FAIL("expected an error");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string(e.what()).find("batches") != std::string::npos);
    BOOST_TEST(std::string(e.what()).find("h.json") != std::string::npos);
  }
  test::write_text(tmp.str("bad.json"), "[{");
  BOOST_CHECK_THROW(History::load(tmp.str("bad.json")), std::runtime_error);
}

// history.json keeps the order keys were recorded in, as skorch's does:
// "epoch" first, never the alphabetical order of nlohmann::json ("dur"
// before "epoch"); batch rows alike.
BOOST_AUTO_TEST_CASE(keys_are_written_in_the_order_they_were_recorded) {
  History h = two_epochs();
  const std::string text = h.dump();
  const std::string first_epoch = R"([{"epoch":1,"batches":[{"train_loss":1.0,"train_batch_size":32},)";
  BOOST_TEST(text.rfind(first_epoch, 0) == 0u, text.substr(0, 200));
  BOOST_TEST(text.find(R"(],"train_loss":0.5,"dur":1.25},{"epoch":2,)") != std::string::npos, text);
  // Read back, from a file or from ordered JSON, and written again: the same text.
  test::TempDir tmp;
  h.save(tmp.str("history.json"));
  BOOST_TEST(History::load(tmp.str("history.json")).dump() == text);
  BOOST_TEST(History::from_json(nlohmann::ordered_json::parse(text)).dump() == text);
  // The epochs a checkpoint inside epoch 2 keeps: the same order.
  BOOST_TEST(h.first_epochs(1).dump() == text.substr(0, text.find(",{\"epoch\":2")) + "]");
  BOOST_TEST(h.first_epochs(5).dump() == text);
  // What plugins read is unchanged: the same values, whatever the order.
  BOOST_TEST(History::load(tmp.str("history.json")).epochs() == h.epochs());
}

BOOST_AUTO_TEST_CASE(keys_in_any_order_are_read) {
  // An older skein's history.json (alphabetical), and a hand-made one.
  const std::string sorted = R"([{"batches":[{"b":1,"a":2}],"dur":2.0,"epoch":1,"valid_loss":"NaN"}])";
  const History old = History::from_json(nlohmann::ordered_json::parse(sorted));
  BOOST_TEST(std::isnan(old.get(0, "valid_loss").get<double>()));
  // Written again: "epoch" first, the rest as the file had them.
  BOOST_TEST(old.dump() == R"([{"epoch":1,"batches":[{"b":1,"a":2}],"dur":2.0,"valid_loss":"NaN"}])");
  // From sorted nlohmann::json: "epoch", "batches", then alphabetically.
  BOOST_TEST(History::from_json(nlohmann::json::parse(sorted)).dump() ==
             R"([{"epoch":1,"batches":[{"a":2,"b":1}],"dur":2.0,"valid_loss":"NaN"}])");
  // Keys recorded in a new epoch come after those known.
  History more = History::from_json(nlohmann::ordered_json::parse(sorted));
  more.new_epoch();
  more.record("lr", 0.1);
  more.record("dur", 1.0);
  BOOST_TEST(more.dump().find(R"({"epoch":2,"batches":[],"dur":1.0,"lr":0.1})") != std::string::npos, more.dump());
}

// Counts (batch sizes, skipped steps, the world size) are integers in
// history.json, 64 and not 64.0, whatever the batch log (doubles) held;
// losses stay floating point, a count that is not a whole number or not
// finite stays as it is. A file of an older skein (64.0) is read as counts.
BOOST_AUTO_TEST_CASE(counts_are_written_as_integers) {
  History h;
  h.new_epoch();
  auto& log = h.batches();
  const int loss = log.key("train_loss"), size = log.key("train_batch_size");
  log.new_row();
  log.put(loss, 2.0);
  log.put(size, 64);
  h.commit_batches();
  h.record(skein::history_key::kSkippedSteps, 3.0);
  h.record(skein::history_key::kWorldSize, 2.0);
  h.record("valid_batch_size", std::numeric_limits<double>::quiet_NaN());
  h.record("train_loss", 1.0);
  const std::string text = h.dump();
  BOOST_TEST(text == R"([{"epoch":1,"batches":[{"train_loss":2.0,"train_batch_size":64}],"skipped_steps":3,)"
                     R"("world_size":2,"valid_batch_size":"NaN","train_loss":1.0}])",
             text);
  const std::string older = R"([{"epoch":1,"batches":[{"train_loss":2.0,"train_batch_size":64.0}],"skipped_steps":3.0}])";
  BOOST_TEST(History::from_json(nlohmann::ordered_json::parse(older)).dump() ==
             R"([{"epoch":1,"batches":[{"train_loss":2.0,"train_batch_size":64}],"skipped_steps":3}])");
  BOOST_TEST(History::from_json(nlohmann::json::parse(older)).epochs()[0]["batches"][0]["train_batch_size"].is_number_integer());
}

// An epoch's values are recorded in the order its batches recorded them
// (train_loss, valid_loss, valid_acc), each followed by its best mark, and
// history.json keeps that order: not alphabetically (valid_acc first).
BOOST_AUTO_TEST_CASE(epoch_values_come_in_the_order_the_batches_recorded_them) {
  History h;
  h.new_epoch();
  auto& log = h.batches();
  const int train_loss = log.key("train_loss"), train_size = log.key("train_batch_size");
  const int valid_loss = log.key("valid_loss"), valid_acc = log.key("valid_acc"), valid_size = log.key("valid_batch_size");
  log.new_row();
  log.put(train_loss, 1.5);
  log.put(train_size, 8);
  log.new_row();
  log.put(valid_loss, 1.25);
  log.put(valid_acc, 0.5);
  log.put(valid_size, 8);
  h.commit_batches();
  skein::core::summarize_epoch(h, 2.0);
  const std::string text = h.dump();
  const std::string values = R"(],"train_loss":1.5,"train_loss_best":true,"valid_loss":1.25,"valid_loss_best":true,)"
                             R"("valid_acc":0.5,"valid_acc_best":true,"dur":2.0}])";
  BOOST_TEST(text.find(values) != std::string::npos, text);
}
