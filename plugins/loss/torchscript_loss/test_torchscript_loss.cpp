#define BOOST_TEST_MODULE loss_torchscript_loss
#include <boost/test/unit_test.hpp>

#include <torch/script.h>

#include "skein/testing.hpp"

BOOST_FIXTURE_TEST_SUITE(loss_torchscript_loss, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(a_saved_module_does_what_every_loss_does) {
  torch::jit::Module m("SquaredError");  // as torch.jit.save writes a scripted loss module
  m.define("def forward(self, outputs, targets):\n    return ((outputs - targets) ** 2).mean()\n");
  const std::string path = harness.run_dir() + "/squared_error.pt";
  m.save(path);
  BOOST_TEST(skein::testing::loss_problem(harness, "torchscript_loss", {{"path", path}}, {{4}, 2}) == "");
}

BOOST_AUTO_TEST_SUITE_END()
