#define BOOST_TEST_MODULE bad_input
#include <boost/test/unit_test.hpp>

#include "test_support.hpp"

// The bad-input catalogue of the README's troubleshooting section, one test
// per line: `skein train` prints one error line naming the culprit and exits
// 2 for config and usage errors, 1 for bad data. Lines tested elsewhere:
// resume with another world size, a damaged model file and an incomplete
// checkpoint (test_runs), NaN loss (test_runs), a world-writable plugin
// directory (test_plugin_loading).

namespace fs = boost::filesystem;

namespace {

using test::contains;
using test::one_error_line;
const std::string kSkein = SKEIN_EXE;

struct Fixture {
  Fixture() {
    auto cfg = test::synthetic_config();
    cfg["max_epochs"] = 2;
    test::write_text(tmp.str("tiny.json"), cfg.dump(2));
  }
  test::TempDir tmp;

  // `skein train --config tiny.json ARGS` (in a private network when possible).
  test::CommandResult train(const std::string& args, const std::string& config = "tiny.json") {
    return test::run(test::in_private_network(kSkein + " train --plugin-dir " TEST_PLUGIN_DIR
                                              " --config " + tmp.str(config) + " " + args));
  }
  // The run failed with `code` and one error line containing `part`.
  static void expect(const test::CommandResult& r, int code, const std::string& part) {
    BOOST_TEST(r.exit_code == code, r.err);
    BOOST_TEST(one_error_line(r), r.err);
    BOOST_TEST(contains(r.err, part), r.err);
  }
  // As expect(), for a launched run: the one line is the launcher's summary
  // (the workers report their config error to it instead of printing it).
  static void expect_summary(const test::CommandResult& r, int code, const std::string& part) {
    expect(r, code, part);
    BOOST_TEST(r.err.rfind("skein: error: worker rank ", 0) == 0u, r.err);
  }
  // A finished two-epoch run with checkpoints, in `name`.
  std::string checkpointed_run(const std::string& name) {
    auto cfg = test::synthetic_config();
    cfg["max_epochs"] = 2;
    cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
    test::write_text(tmp.str(name + ".json"), cfg.dump());
    auto r = train("--run-dir " + tmp.str(name), name + ".json");
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return tmp.str(name);
  }
  test::CommandResult resume(const std::string& run, const std::string& args = "") {
    return test::run(test::in_private_network(kSkein + " train --resume " + run + " " + args));
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(bad_input, Fixture)

BOOST_AUTO_TEST_CASE(malformed_json_names_line_and_column) {
  test::write_text(tmp.str("bad.json"), "{\n  \"batch_size\": ,\n}\n");
  expect(train("", "bad.json"), 2, "bad.json: invalid JSON: parse error at line 2, column 17");
}

BOOST_AUTO_TEST_CASE(json_nested_absurdly_deep) {
  // Recursion in the JSON library would overflow the stack without a bound.
  const std::size_t n = 200000;
  test::write_text(tmp.str("deep.json"), "{\"model\": " + std::string(n, '[') + std::string(n, ']') + "}");
  expect(train("", "deep.json"), 2, "deep.json: JSON nested deeper than 100 levels");
}

BOOST_AUTO_TEST_CASE(unknown_key_gets_a_suggestion) {
  expect(train("--set batch_sise=3"), 2, "did you mean 'batch_size'");
  expect(train("--plugin mlp:hiden=[4]"), 2, "did you mean 'hidden'");
}

BOOST_AUTO_TEST_CASE(wrong_type) {
  expect(train("--set 'batch_size=\"32\"'"), 2, "batch_size: expected int, got \"32\"");
}

BOOST_AUTO_TEST_CASE(missing_required_option) {
  test::write_text(tmp.str("nomodel.json"), R"({"data": {"plugin": "synthetic"}})");
  expect(train("", "nomodel.json"), 2, "model: required option is missing");
  expect(train("--plugin needs_option"), 2, "target");
}

BOOST_AUTO_TEST_CASE(unknown_plugin_gets_a_suggestion) {
  expect(train("--plugin chekpoint"), 2, "unknown plugin 'chekpoint' (did you mean 'checkpoint'?)");
}

BOOST_AUTO_TEST_CASE(two_history_backends) {
  expect(train("--plugin local --plugin filestore"), 2, "two history plugins given: 'local' and 'filestore'");
}

BOOST_AUTO_TEST_CASE(a_shared_library_that_is_not_a_plugin) {
  expect(train("--plugin " BROKEN_PLUGIN_DIR "/libtest_not_a_plugin.so"), 2, "is not a Skein plugin");
  expect(train("--plugin " BROKEN_PLUGIN_DIR "/libtext_file.so"), 2, "libtext_file.so");
}

BOOST_AUTO_TEST_CASE(wrong_api_version) {
  expect(train("--plugin " BROKEN_PLUGIN_DIR "/libtest_wrong_api.so"), 2, "got 2.1, host supports 1.1");
}

BOOST_AUTO_TEST_CASE(missing_dataset_file) {
  test::TempDir data;
  test::write_tiny_mnist(data.str(), 10, 10, false);
  fs::remove(data.str("train-labels-idx1-ubyte"));
  expect(train("--plugin idx:dir=" + data.str()), 2, "train-labels-idx1-ubyte");
  expect(train("--plugin idx:dir=" + data.str("nowhere")), 2, "option 'dir'");
}

BOOST_AUTO_TEST_CASE(idx_with_bad_magic_truncated_body_or_count_mismatch) {
  test::TempDir data;
  test::write_tiny_mnist(data.str(), 10, 10, true);
  const std::string images = data.str("train-images-idx3-ubyte.gz");
  const std::string labels = data.str("train-labels-idx1-ubyte.gz");
  const std::string good_images = test::read_text(images);

  test::write_idx(images, {10, 28, 28}, std::vector<std::uint8_t>(10 * 28 * 28), true);
  std::string bytes = test::read_text(images);
  test::write_text(data.str("train-images-idx3-ubyte"), "garbage!");
  fs::remove(images);
  expect(train("--plugin idx:dir=" + data.str()), 1, "bad magic");

  fs::remove(data.str("train-images-idx3-ubyte"));
  test::write_idx(images, {10, 28, 28}, std::vector<std::uint8_t>(5 * 28 * 28), true);  // half the body
  expect(train("--plugin idx:dir=" + data.str()), 1, "train-images-idx3-ubyte.gz");

  test::write_text(images, good_images);
  test::write_idx(labels, {9}, std::vector<std::uint8_t>(9), true);  // 10 images, 9 labels
  expect(train("--plugin idx:dir=" + data.str()), 1, "10");
}

BOOST_AUTO_TEST_CASE(truncated_or_corrupted_checkpoint) {
  const std::string run = checkpointed_run("trunc");
  const std::string ckpt = run + "/checkpoints/epoch_0002";
  const std::string bytes = test::read_text(ckpt + "/model.pt");
  test::write_text(ckpt + "/model.pt", bytes.substr(0, bytes.size() / 2));
  expect(resume(run, "--set max_epochs=3"), 2, ckpt + "/model.pt is damaged");
  // Flipped bytes inside the tensor data: torch alone would load them.
  std::string flipped = bytes;
  for (std::size_t i = bytes.size() / 2; i < bytes.size() / 2 + 16; ++i) flipped[i] = static_cast<char>(~flipped[i]);
  test::write_text(ckpt + "/model.pt", flipped);
  expect(resume(run, "--set max_epochs=3"), 2, ckpt + "/model.pt is damaged");
  test::write_text(ckpt + "/trainer.json", "{\"format\": 1, \"epo");
  expect(resume(run), 2, "no complete checkpoint");
}

BOOST_AUTO_TEST_CASE(checkpoint_of_another_model_shape) {
  const std::string run = checkpointed_run("shape");
  expect(resume(run, "--set max_epochs=3 --set 'model.hidden=[64]'"), 2,
         "model.pt does not fit this run: 'net.1.weight' has shape [32, 16] there and [64, 16] in this model");
}

BOOST_AUTO_TEST_CASE(filestore_path_not_writable) {
  expect(train("--run-dir " + tmp.str("fs") + " --plugin filestore:path=/proc/no/such/store"), 2,
         "option 'path' names '/proc/no/such/store', which rank 0 cannot open for writing");
}

BOOST_AUTO_TEST_CASE(batch_size_zero_or_negative) {
  expect(train("--set batch_size=0"), 2, "batch_size: must be positive, got 0");
  expect(train("--set batch_size=-4"), 2, "batch_size: must be positive, got -4");
}

BOOST_AUTO_TEST_CASE(more_ranks_than_samples) {
  expect_summary(train("--set data.samples=1 --nproc-per-node 2 --timeout 30"), 2,
                 "cannot feed 2 ranks");
}

BOOST_AUTO_TEST_CASE(run_directory_already_holding_a_run) {
  const std::string run = checkpointed_run("held");
  expect(train("--run-dir " + run), 2, "already holds a run");
  auto over = train("--run-dir " + run + " --overwrite");
  BOOST_TEST(over.exit_code == 0, over.err);
}

BOOST_AUTO_TEST_CASE(non_finite_learning_rate) {
  expect(train("--set optimizer.lr=1e999"), 2, "optimizer.lr");
  test::write_text(tmp.str("inf.json"), R"({"model": {"plugin": "mlp"}, "data": {"plugin": "synthetic"},
                                          "optimizer": {"name": "sgd", "lr": 1e999}})");
  expect(train("", "inf.json"), 2, "inf.json");
  // A schedule that drives the rate to infinity stops the run with a clear line.
  expect(train("--run-dir " + tmp.str("sched") +
               " --plugin lr_scheduler:step_size=1,gamma=1e300 --set max_epochs=3"),
         1, "learning rate");
}

BOOST_AUTO_TEST_SUITE_END()
