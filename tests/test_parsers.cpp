#define BOOST_TEST_MODULE parsers
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>

#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "skein/training/config/config.hpp"
#include "skein/host/option_schema.hpp"
#include "skein/dataset.hpp"
#include "skein/errors.hpp"
#include "skein/history.hpp"
#include "skein/io/torch_file.hpp"
#include "test_support.hpp"

// Inputs that the fuzz targets (fuzz/, docs/fuzzing-and-sanitizers.md) or
// the review that came with them showed to be an unclear error, a crash or
// undefined behaviour, kept here so the normal test suite holds the line.

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kConfig = R"({"model": {"plugin": "mlp"}, "data": {"plugin": "synthetic"})";

struct Fixture {
  Fixture() { test::load_test_plugins(registry); }

  // kConfig with `more` (JSON members) added.
  static std::string config_with(const std::string& more) { return kConfig + ", " + more + "}"; }

  // The ConfigError of resolving `text` as a config file with flags, or ""
  // (any other exception fails the test).
  std::string config_error(const std::string& text, std::vector<std::string> plugins = {},
                           std::vector<std::string> sets = {}) {
    test::write_text(tmp.str("c.json"), text);
    return test::message_of<skein::ConfigError>([&] {
      skein::core::resolve_config(skein::core::ConfigSources{tmp.str("c.json"), plugins, sets}, registry);
    });
  }

  skein::core::PluginRegistry registry;
  test::TempDir tmp;
};

std::string checkpoint_error(const std::string& text) {
  return test::message_of<skein::ConfigError>([&] { skein::core::parse_checkpoint_meta(text, "checkpoint C"); });
}

// The error of rewriting the protocol-2 pickle `body` (then STOP), or "".
using namespace std::string_literals;

std::string pickle_error(const std::string& body) {
  return test::message_of<std::runtime_error>([&] { skein::plain_dict_pickle("\x80\x02" + body + "."); });
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

template <class T>
void append_raw(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(parsers, Fixture)

BOOST_AUTO_TEST_CASE(a_config_number_too_large_for_a_double_is_invalid_json_of_that_file) {
  auto err = config_error(config_with(R"("max_epochs": 1e400)"));
  BOOST_TEST(has(err, "c.json: invalid JSON: number overflow parsing '1e400'"), err);
}

BOOST_AUTO_TEST_CASE(flag_values_that_are_not_utf8_are_refused) {
  auto err = config_error(kConfig + "}", {}, {"data.plugin=synthetic", "optimizer={\xef\"name\"}"});
  BOOST_TEST(has(err, "--set optimizer: the value is not valid UTF-8"), err);
  err = config_error(kConfig + "}", {"print_log:columns=\xfe"});
  BOOST_TEST(has(err, "--plugin print_log: option 'columns': the value is not valid UTF-8"), err);
}

// Found by fuzz_config: a key that is not UTF-8 went into the config and made
// its dump throw nlohmann's type_error instead of a ConfigError.
BOOST_AUTO_TEST_CASE(flag_keys_that_are_not_utf8_are_refused) {
  auto err = config_error(kConfig + "}", {}, {"data.plugin=synthetic", "callbacks.\xff\xff" "columns=2"});
  BOOST_TEST(has(err, "--set: the key is not valid UTF-8"), err);
  err = config_error(kConfig + "}", {"print_log:\xfe=2"});
  BOOST_TEST(has(err, "--plugin print_log: an option name is not valid UTF-8"), err);
  err = config_error(kConfig + "}", {"\xfeprint_log:precision=2"});
  BOOST_TEST(has(err, "--plugin: the plugin name or path is not valid UTF-8"), err);
}

BOOST_AUTO_TEST_CASE(optimizer_name_must_be_a_string) {
  auto err = config_error(config_with(R"("optimizer": {"name": 5})"));
  BOOST_TEST(has(err, "optimizer.name: expected string, got 5"), err);
}

BOOST_AUTO_TEST_CASE(a_callback_flag_passes_over_entries_whose_plugin_is_not_a_name) {
  auto err = config_error(config_with(R"("callbacks": [{"plugin": 1}])"), {"print_log:precision=2"});
  BOOST_TEST(has(err, "callbacks[0].plugin: missing"), err);
}

BOOST_AUTO_TEST_CASE(batch_logs_without_cells_and_with_a_wrapping_cell_count) {
  skein::BatchLog keys_only;
  keys_only.key("train_loss");
  const auto back = skein::BatchLog::from_bytes(keys_only.to_bytes());
  BOOST_TEST(back.keys().size() == 1u);
  BOOST_TEST(back.cells().empty());

  // One row, no key, 2^60 + 1 cells (16 bytes each: the product wraps to 16),
  // then 16 bytes.
  std::string bytes;
  append_raw<std::uint32_t>(bytes, 1);
  append_raw<std::uint32_t>(bytes, 0);
  append_raw<std::uint64_t>(bytes, (std::uint64_t{1} << 60) + 1);
  bytes.append(16, '\0');
  BOOST_CHECK_THROW(skein::BatchLog::from_bytes(bytes), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(a_history_number_too_large_is_a_runtime_error_naming_the_file) {
  test::write_text(tmp.str("h.json"), R"([{"epoch": 1, "batches": [], "train_loss": 1e400}])");
  try {
    skein::History::load(tmp.str("h.json"));
    BOOST_FAIL("expected an error");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(has(e.what(), "h.json"), e.what());
    BOOST_TEST(has(e.what(), "number overflow"), e.what());
  }
}

BOOST_AUTO_TEST_CASE(non_finite_strings_decode_at_any_depth) {
  auto j = skein::decode_nonfinite(
      nlohmann::json::parse(R"({"a": [1, ["NaN", {"b": "-Infinity"}], "Infinity", "x"]})"));
  BOOST_TEST(std::isnan(j["a"][1][0].get<double>()));
  BOOST_TEST(j["a"][1][1]["b"].get<double>() == -INFINITY);
  BOOST_TEST(j["a"][2].get<double>() == INFINITY);
  BOOST_TEST(j["a"][3].get<std::string>() == "x");
  BOOST_TEST(j["a"][0].get<int>() == 1);
}

BOOST_AUTO_TEST_CASE(trainer_json_is_read_into_checked_fields) {
  const auto meta = skein::core::parse_checkpoint_meta(
      R"({"format": 1, "epoch": 3, "world_size": 2, "lr": [0.1, "NaN"], "seed": 0, "model": "mlp",
          "callbacks": [{"plugin": "checkpoint", "state": {"kept": []}}, {"plugin": "timer", "state": null},
                        {"plugin": "print_log"}]})",
      "checkpoint C");
  BOOST_TEST(meta.epoch == 3);
  BOOST_TEST(meta.world_size == 2);
  BOOST_TEST(meta.lr.size() == 2u);
  BOOST_TEST(std::isnan(meta.lr[1]));
  BOOST_TEST(meta.callbacks.size() == 3u);
  BOOST_TEST(meta.callbacks[0].plugin == "checkpoint");
  BOOST_TEST(meta.callbacks[0].state.is_object());
  BOOST_TEST(meta.callbacks[2].state.is_null());  // no "state": none to load
}

// precision 16-mixed's loss scale: read when present, checked, absent otherwise.
BOOST_AUTO_TEST_CASE(a_loss_scale_is_read_into_checked_fields) {
  const std::string head = R"({"format": 1, "epoch": 2, "world_size": 1, "lr": [0.1], "callbacks": [])";
  BOOST_TEST(!skein::core::parse_checkpoint_meta(head + "}", "checkpoint C").loss_scale.has_value());
  const auto meta =
      skein::core::parse_checkpoint_meta(head + R"(, "loss_scale": {"scale": 32768, "growth_tracker": 17}})", "checkpoint C");
  BOOST_REQUIRE(meta.loss_scale.has_value());
  BOOST_TEST(meta.loss_scale->scale == 32768.0);
  BOOST_TEST(meta.loss_scale->growth_tracker == 17);
  for (const char* bad : {"5", R"({"scale": 0, "growth_tracker": 1})", R"({"scale": "Infinity", "growth_tracker": 1})",
                          R"({"scale": 2, "growth_tracker": -1})", R"({"scale": 2})"})
    BOOST_TEST(has(checkpoint_error(head + ", \"loss_scale\": " + bad + "}"),
                   "checkpoint C: bad trainer.json: \"loss_scale\" must be"),
               bad);
}

// A checkpoint written inside an epoch: its position orders it after the
// epoch before, and each rank reads its own part of open_epoch.json.
BOOST_AUTO_TEST_CASE(an_open_epoch_is_read_into_checked_fields) {
  const std::string head = R"({"format": 1, "epoch": 2, "world_size": 2, "lr": [0.1], "callbacks": [], "open_epoch": )";
  const auto meta = skein::core::parse_checkpoint_meta(
      head + R"({"epoch": 3, "next_batch": 8, "train_samples": 384, "batch_size": 32, "accumulate_steps": 2}})",
      "checkpoint C");
  BOOST_REQUIRE(meta.open_epoch.has_value());
  BOOST_TEST(meta.open_epoch->next_batch == 8);
  BOOST_TEST(meta.open_epoch->train_samples == 384);
  BOOST_TEST(meta.open_epoch->accumulate_steps == 2);
  for (const char* bad : {"5", R"({"next_batch": 0, "train_samples": 1, "batch_size": 1, "accumulate_steps": 1})",
                          R"({"next_batch": 1, "train_samples": 1, "batch_size": 1})"})
    BOOST_TEST(has(checkpoint_error(head + bad + "}"), "checkpoint C: bad trainer.json: \"open_epoch\" must be"), bad);
  // Without "passes" (written before they were): one segment on the checkpoint's ranks.
  BOOST_REQUIRE(meta.open_epoch->passes.size() == 1u);
  BOOST_TEST(meta.open_epoch->passes[0].world_size == 2);
  BOOST_TEST(meta.open_epoch->passes[0].batches_done == 8);
  // With them: the segments of the pass, which add up to next_batch and end on the checkpoint's ranks.
  const std::string open = R"({"epoch": 3, "next_batch": 8, "train_samples": 384, "batch_size": 32,
      "accumulate_steps": 1, "passes": )";
  const auto chained = skein::core::parse_checkpoint_meta(
      head + open + R"([{"world_size": 1, "batches": 5}, {"world_size": 2, "batches": 3}]}})", "checkpoint C");
  BOOST_REQUIRE(chained.open_epoch->passes.size() == 2u);
  BOOST_TEST(chained.open_epoch->passes[0].world_size == 1);
  BOOST_TEST(chained.open_epoch->passes[1].batches_done == 3);
  for (const char* bad : {R"([{"world_size": 1, "batches": 5}, {"world_size": 2, "batches": 4}])",
                          R"([{"world_size": 1, "batches": 8}])", R"([{"world_size": 0, "batches": 0},
                          {"world_size": 2, "batches": 8}])", R"([])", R"({"world_size": 2, "batches": 8})",
                          R"([{"world_size": 2, "batches": -1}, {"world_size": 2, "batches": 9}])"})
    BOOST_TEST(has(checkpoint_error(head + open + bad + "}}"), "checkpoint C: bad trainer.json: \"open_epoch\".\"passes\""),
               bad);

  using Position = std::optional<std::pair<long, long>>;
  BOOST_TEST((skein::core::checkpoint_position(nlohmann::json::parse(R"({"epoch": 2})")) == Position({2, 0})));
  BOOST_TEST((skein::core::checkpoint_position(nlohmann::json::parse(R"({"epoch": 2, "open_epoch": {"next_batch": 8}})")) ==
              Position({2, 8})));
  BOOST_TEST(!skein::core::checkpoint_position(nlohmann::json::parse(R"({"epoch": -1})")));

  const std::string ranks = R"({"ranks": [{"record": {"epoch": 3, "lr": "NaN"}, "callbacks": [{"plugin": "timer",
      "state": {"samples": 64}}], "seconds": 1.5}, {"record": {"epoch": 3}, "callbacks": [], "seconds": 2}]})";
  const auto parts = skein::core::parse_open_epoch_ranks(ranks, 2, "checkpoint C");
  BOOST_REQUIRE(parts.size() == 2u);
  BOOST_TEST(std::isnan(parts[0].record["lr"].get<double>()));
  BOOST_TEST(parts[0].callbacks.at(0).state["samples"].get<int>() == 64);
  BOOST_TEST(parts[0].seconds == 1.5);
  BOOST_TEST(parts[1].seconds == 2.0);
  auto rank_error = [](const std::string& text, int world) {
    return test::message_of<skein::ConfigError>([&] { skein::core::parse_open_epoch_ranks(text, world, "checkpoint C"); });
  };
  BOOST_TEST(has(rank_error(ranks, 3), "checkpoint C: bad open_epoch.json: \"ranks\" must list one entry per rank "
                                       "of the 3 that wrote the checkpoint"));
  BOOST_TEST(has(rank_error("{", 1), "checkpoint C: unreadable open_epoch.json"));
  BOOST_TEST(has(rank_error(R"({"ranks": [{"record": {"batches": []}, "seconds": 1}]})", 1), "rank 0: expected"));
}

BOOST_AUTO_TEST_CASE(trainer_json_of_another_shape_is_a_config_error_naming_the_checkpoint) {
  const std::string fields = R"("epoch": 2, "lr": [0.1], "world_size": 1, "callbacks": [])";
  BOOST_TEST(has(checkpoint_error("{"), "checkpoint C: unreadable trainer.json: "));
  BOOST_TEST(has(checkpoint_error("[1, 2]"), "checkpoint C: bad trainer.json: expected a JSON object, got array"));
  BOOST_TEST(has(checkpoint_error(R"({"format": "1", )" + fields + "}"),
                 "checkpoint C: format \"1\", this skein reads format 1"));
  BOOST_TEST(has(checkpoint_error(R"({"format": 2, )" + fields + "}"), "checkpoint C: format 2, this skein reads format 1"));
  BOOST_TEST(has(checkpoint_error(R"({"format": 1, "epoch": 2, "lr": [0.1]})"), "\"callbacks\" must be a list"));
  BOOST_TEST(has(checkpoint_error(R"({"format": 1, "epoch": 2, "lr": [0.1], "callbacks": [5]})"),
                 "callbacks[0] must be an object"));
  BOOST_TEST(has(checkpoint_error(R"({"format": 1, "epoch": 2, "callbacks": []})"), "\"lr\" must be a list"));
  // Resume divides by it: an integer >= 1, and there (a checkpoint without it is passed over).
  for (const char* world : {"1.5", "0", "-2", "\"2\"", "null"})
    BOOST_TEST(has(checkpoint_error(std::string(R"({"format": 1, "epoch": 2, "lr": [], "callbacks": [], "world_size": )") +
                                    world + "}"),
                   "\"world_size\" must be an integer >= 1"),
               world);
  BOOST_TEST(has(checkpoint_error(R"({"format": 1, "epoch": 2, "lr": [], "callbacks": []})"),
                 "\"world_size\" must be an integer >= 1, got none"));
  for (const char* epoch : {"\"NaN\"", "1e300", "-1", "2.5", "9223372036854775807", "null"})
    BOOST_TEST(has(checkpoint_error(std::string(R"({"format": 1, "lr": [], "callbacks": [], "epoch": )") + epoch + "}"),
                   "\"epoch\" must be an integer >= 0"),
               epoch);
}

BOOST_AUTO_TEST_CASE(the_newest_checkpoint_is_chosen_by_integer_epochs_only) {
  using skein::core::checkpoint_epoch;
  BOOST_TEST(checkpoint_epoch(nlohmann::json::parse(R"({"epoch": 4})")).value_or(-1) == 4);
  BOOST_TEST(!checkpoint_epoch(nlohmann::json::parse(R"({"epoch": 1e300})")));
  BOOST_TEST(!checkpoint_epoch(nlohmann::json::parse(R"({"epoch": "4"})")));
  BOOST_TEST(!checkpoint_epoch(nlohmann::json::parse("[4]")));
}

BOOST_AUTO_TEST_CASE(pickles_nested_too_deep_are_refused_however_they_nest) {
  // libtorch frees nested values by recursion: 300000 tuples overflowed the stack.
  const std::string deep = "values nested more than 1000 deep";
  BOOST_TEST(has(pickle_error(repeat("(", 1001) + repeat("t", 1001)), deep));       // TUPLE
  BOOST_TEST(has(pickle_error("N" + repeat("\x85", 1001)), deep));                   // TUPLE1
  BOOST_TEST(has(pickle_error(repeat("]", 1002) + repeat("a", 1001)), deep));        // APPEND
  BOOST_TEST(has(pickle_error("]" + repeat("(]", 1001) + repeat("e", 1001)), deep)); // APPENDS
  BOOST_TEST(pickle_error(repeat("(", 999) + repeat("t", 999)).empty());
  // A list changed through the memo after it went into a tuple: the tuple's
  // depth would no longer hold, so the change is refused; so is a cycle.
  BOOST_TEST(has(pickle_error("]q\x00\x85h\x00Na"s), "a value changed after it was put into another"));
  BOOST_TEST(has(pickle_error("]q\x00h\x00" "a"s), "a container put into itself"));
}

BOOST_AUTO_TEST_CASE(pickle_memo_slots_and_dict_items_are_checked_before_libtorch_reads_them) {
  // A 9-byte pickle made libtorch's memo 2^29 values long (8.5 GB).
  BOOST_TEST(has(pickle_error("Nr\x00\x00\x00\x20"s), "memo slot 536870912 written when only 0 are in use"));
  BOOST_TEST(has(pickle_error("h\x05"), "memo slot 5 read before it is written"));
  // An odd count made libtorch read past its stack.
  BOOST_TEST(has(pickle_error("}(Nu"), "dict items of an odd count"));
  BOOST_TEST(has(pickle_error("(Nd"), "dict items of an odd count"));
  // The OrderedDict class's slot (0) leaves the output: its slots are numbered from 0 again.
  const std::string od = "\x80\x02" "ccollections\nOrderedDict\nq\x00)Rq\x01(X\x01\x00\x00\x00" "aq\x02Nu."s;
  const std::string plain = "\x80\x02}q\x00(X\x01\x00\x00\x00" "aq\x01Nu."s;
  BOOST_TEST(skein::plain_dict_pickle(od) == plain);
  BOOST_TEST(skein::plain_dict_pickle(plain) == plain);
}

BOOST_AUTO_TEST_SUITE_END()
