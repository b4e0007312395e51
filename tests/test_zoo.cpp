#define BOOST_TEST_MODULE zoo
#include <boost/test/unit_test.hpp>

#include <torch/torch.h>

#include "pt2_support.hpp"
#include "skein/io/exported_model.hpp"
#include "skein/io/npy.hpp"
#include "skein/torch_compat/export_schema.hpp"
#include "skein/training/data/training_data.hpp"

// Parity with PyTorch on models users bring (tests/python/zoo.py: a residual
// CNN with BatchNorm, a transformer encoder with dropout in attention and
// the feed-forward block, a small language model with tied embeddings and a
// causal mask, a GRU, ConvNeXt-style blocks, a model with buffers that are
// not BatchNorm's). Each is exported with torch.export in train mode, as
// the docs say, and trained by Skein from the same weights on the same
// batches as eager PyTorch (dropout drawn from the same seed): every step's
// loss, the trained weights and the eval outputs agree within 1e-5; eval
// mode is deterministic; the program exported back gives what skein predict
// gives; on two processes Skein equals PyTorch DDP (gloo) on the same
// global batches, and reports the metrics of the model it saves.

namespace {

using test::contains;
using test::tensors_of;

struct Fixture : test::Pt2Workspace {
  Fixture() : Pt2Workspace("zoo.py") {}
};

#if SKEIN_TORCH_EXPORT_SCHEMA

constexpr double kLr = 0.05, kMomentum = 0.9;  // zoo.py's

std::vector<std::string> zoo(const Fixture& f) {
  const auto r = f.py("list");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  std::vector<std::string> names;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) names.push_back(line);
  BOOST_TEST_REQUIRE(names.size() >= 6u);
  return names;
}

torch::Tensor loss_of(const torch::Tensor& out, const torch::Tensor& y) {  // zoo.py's loss_of
  return torch::nn::functional::cross_entropy(out.reshape({-1, out.size(-1)}), y.reshape({-1}));
}

// The value of the model's state named `name`: a parameter, a buffer, or a
// tied weight's second name (the parameter it is).
torch::Tensor state_of(skein::ExportedModel& model, const std::string& name) {
  const auto tied = model.tied_parameters().find(name);
  const std::string own = tied == model.tied_parameters().end() ? name : tied->second;
  if (auto* p = model.named_parameters().find(own)) return *p;
  if (auto* b = model.named_buffers().find(own)) return *b;
  return {};
}

BOOST_FIXTURE_TEST_CASE(each_model_trains_step_for_step_as_pytorch_eager, Fixture) {
  // The user guide lists the operators the tests ran against eager PyTorch.
  const std::string guide = test::read_text(SKEIN_SOURCE_DIR "/docs/user-guide.md");
  for (const auto& name : zoo(*this)) {
    BOOST_TEST_CONTEXT(name) {
      auto r = py("make " + dir("") + " " + name);
      BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
      skein::ExportedModel model(dir(name + ".pt2"), "model 'pt2'");
      for (const auto& op : model.operators()) BOOST_TEST(contains(guide, "`" + op + "`"), op << " is not in the guide's list");
      auto data = tensors_of(dir(name + "_batches.pt"));
      auto ref = tensors_of(dir(name + "_ref.pt"));
      torch::optim::SGD opt(model.parameters(), torch::optim::SGDOptions(kLr).momentum(kMomentum));
      torch::manual_seed(skein::read_torch_save(dir(name + "_batches.pt")).toGenericDict().at("seed").toInt());
      model.train();
      const auto steps = data["x"].size(0);
      BOOST_TEST_REQUIRE(ref["losses"].size(0) == steps);
      int off = 0;
      for (std::int64_t s = 0; s < steps; ++s) {
        opt.zero_grad();
        const auto loss = loss_of(model.forward(data["x"][s]), data["y"][s]);
        loss.backward();
        opt.step();
        const double mine = loss.item<double>(), eager = ref["losses"][s].item<double>();
        if (std::abs(mine - eager) > 1e-5 * std::abs(eager) && off++ == 0)
          BOOST_TEST(false, "step " << s << ": loss " << mine << ", eager PyTorch's " << eager);
      }
      BOOST_TEST(off == 0, off << " of " << steps << " steps' losses differ");
      // Tied weights are one parameter: trained once, as eager trains them.
      for (const auto& [second, first] : model.tied_parameters())
        BOOST_TEST(!model.named_parameters().find(second), second << " is a parameter of its own");
      if (name == "tiny_lm") BOOST_TEST(model.tied_parameters().count("out.weight") == 1u);
      for (const auto& [key, value] : ref) {
        if (key == "losses" || key == "__eval_outputs__") continue;
        const auto mine = state_of(model, key);
        BOOST_TEST_REQUIRE(mine.defined(), key << " is not in the model");
        test::expect_close(mine, value, key);
      }
      // Eval mode: dropout (attention's too) off, no buffer written, the same outputs twice.
      model.eval();
      torch::NoGradGuard no_grad;
      std::vector<torch::Tensor> buffers;
      for (const auto& b : model.buffers()) buffers.push_back(b.clone());
      const auto eval_out = model.forward(data["x"][0]);
      test::expect_close(eval_out, ref["__eval_outputs__"], "eval outputs");
      BOOST_TEST(torch::equal(eval_out, model.forward(data["x"][0])), "eval outputs differ from call to call");
      std::size_t i = 0;
      for (const auto& b : model.buffers()) BOOST_TEST(torch::equal(b, buffers[i++]), "eval mode wrote a buffer");

      // Exported back (what skein export --format pt2 writes): deterministic
      // in PyTorch, and what this model gives.
      test::write_text(dir(name + "_back.pt2"), model.archive_with_current_weights());
      test::write_text(dir(name + "_in.npy"), skein::npy_bytes(data["x"][1]));
      test::write_text(dir(name + "_out.npy"), skein::npy_bytes(model.forward(data["x"][1])));
      r = py("deterministic " + dir(name + "_back.pt2") + " " + dir(name + "_in.npy"));
      BOOST_TEST(r.exit_code == 0, r.err);
      r = py("same " + dir(name + "_back.pt2") + " " + dir(name + "_in.npy") + " " + dir(name + "_out.npy"));
      BOOST_TEST(r.exit_code == 0, r.err);
    }
  }
}

nlohmann::json zoo_config(const Fixture& f, const std::string& name) {
  return {{"model", {{"plugin", "pt2"}, {"path", f.dir(name + ".pt2")}}},
          {"data",
           {{"plugin", "npy"},
            {"train_inputs", f.dir(name + "_x.npy")},
            {"train_targets", f.dir(name + "_y.npy")},
            {"test_inputs", f.dir(name + "_tx.npy")},
            {"test_targets", f.dir(name + "_ty.npy")}}},
          {"loss", {{"plugin", "cross_entropy"}}},
          {"optimizer", {{"plugin", "sgd"}, {"lr", kLr}, {"momentum", kMomentum}}},
          {"batch_size", 4},
          {"valid_split", 0},
          {"max_epochs", 2},
          {"callbacks", nlohmann::json::array()}};
}

// skein train, export and predict on the classifiers: the exported program
// gives what skein predict gives, and both are deterministic.
BOOST_FIXTURE_TEST_CASE(the_exported_program_gives_what_skein_predict_gives, Fixture) {
  for (const auto& name : zoo(*this)) {
    if (name == "tiny_lm") continue;  // outputs per position: the test above checks its export
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST_REQUIRE(py("make " + dir("") + " " + name).exit_code == 0);
      const std::string run = dir(name + "_run");
      auto r = skein("train --config " + write_config(zoo_config(*this, name)) + " --run-dir " + run);
      BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
      r = skein("export " + run + " --format pt2 --out " + run + ".pt2");
      BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
      for (const std::string n : {"1", "2"}) {
        r = skein("predict " + run + " --inputs " + dir(name + "_tx.npy") + " --out " + run + "_p" + n + ".npy");
        BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
      }
      BOOST_TEST(test::read_text(run + "_p1.npy") == test::read_text(run + "_p2.npy"), "skein predict differs from itself");
      r = py("deterministic " + run + ".pt2 " + dir(name + "_tx.npy"));
      BOOST_TEST(r.exit_code == 0, r.err);
      r = py("same " + run + ".pt2 " + dir(name + "_tx.npy") + " " + run + "_p1.npy");
      BOOST_TEST(r.exit_code == 0, r.err);
    }
  }
}

// Two processes of skein (ddp) and of PyTorch DDP (gloo), each step's rows
// per rank the same (skein's sampler's, handed to PyTorch): the trained
// model (rank 0's, buffers included) and the reported test metrics agree.
// BatchNorm's running statistics differ between ranks unless kept in step:
// the metrics are then the saved model's only with the buffers broadcast.
BOOST_FIXTURE_TEST_CASE(two_processes_train_as_pytorch_ddp_and_report_the_saved_models_metrics, Fixture) {
  for (const std::string name : {"resnet", "convnext"}) {
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST_REQUIRE(py("make " + dir("") + " " + name).exit_code == 0);
      auto cfg = zoo_config(*this, name);
      cfg["parallel"] = {{"plugin", "ddp"}};
      // Skein's rows of each step on each rank, for PyTorch.
      const std::int64_t rows = skein::read_npy(dir(name + "_x.npy")).size(0);
      const long epochs = cfg["max_epochs"].get<long>();
      std::vector<torch::Tensor> steps;
      for (long epoch = 1; epoch <= epochs; ++epoch) {
        std::vector<std::vector<std::vector<std::int64_t>>> ranks;
        for (int rank = 0; rank < 2; ++rank) {
          skein::RunInfo run;
          run.rank = rank;
          run.world_size = 2;
          ranks.push_back(skein::core::train_pass_batches(rows, run, cfg["batch_size"].get<std::int64_t>(), 0, epoch));
        }
        for (std::size_t b = 0; b < ranks[0].size(); ++b)
          steps.push_back(torch::stack({torch::tensor(ranks[0][b]), torch::tensor(ranks[1][b])}));
      }
      test::write_text(dir(name + "_rows.npy"), skein::npy_bytes(torch::stack(steps)));
      const int port = test::free_port();
      const std::string worker = std::string(SKEIN_TEST_PYTHON) + " " SKEIN_SOURCE_DIR "/tests/python/zoo.py ddp " +
                                 dir("") + " " + name + " $rank " + std::to_string(port);
      // One thread a process, as torchrun and skein's launcher start workers (OMP_NUM_THREADS=1): a
      // convolution's gradient is summed in another order on two threads.
      auto r = test::run(test::in_private_network("export GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1; pids=; for rank "
                                                  "in 0 1; do " + worker +
                                                  " & pids=\"$pids $!\"; done; rc=0; for p in $pids; do wait $p || "
                                                  "rc=1; done; exit $rc"),
                         600);
      BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
      const std::string run = dir(name + "_ddp");
      r = skein("train --nproc-per-node 2 --config " + write_config(cfg) + " --run-dir " + run);
      BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
      auto ddp = tensors_of(dir(name + "_ddp.pt"));
      auto saved = tensors_of(run + "/checkpoints/final/model_state_dict.pt");
      for (const auto& [key, value] : ddp) {
        if (key == "losses" || key.rfind("test_", 0) == 0) continue;
        BOOST_TEST_REQUIRE(saved.count(key), key << " is not in skein's saved model");
        test::expect_close(saved[key], value, key);
      }
      const auto results = test::load_json(run + "/results.json");
      BOOST_TEST(std::abs(results["test_loss"].get<double>() - ddp["test_loss"].item<double>()) <=
                     1e-5 * ddp["test_loss"].item<double>(),
                 "test loss " << results["test_loss"] << ", PyTorch DDP's " << ddp["test_loss"].item<double>());
      BOOST_TEST(results["test_accuracy"].get<double>() == ddp["test_accuracy"].item<double>());
    }
  }
}

#endif

}  // namespace
