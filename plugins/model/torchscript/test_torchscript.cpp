#define BOOST_TEST_MODULE model_torchscript
#include <boost/test/unit_test.hpp>

#include <torch/script.h>

#include "skein/testing.hpp"

namespace {

// A TorchScript module as torch.jit.save writes one: a linear layer of 4 -> 3.
std::string scripted_linear(const skein::testing::Harness& harness) {
  torch::jit::Module m("Linear");
  m.register_parameter("weight", torch::randn({3, 4}).requires_grad_(), false);  // nn.Parameter
  m.register_parameter("bias", torch::zeros({3}).requires_grad_(), false);
  m.define("def forward(self, x):\n    return torch.addmm(self.bias, x, self.weight.t())\n");
  const std::string path = harness.run_dir() + "/linear.pt";
  m.save(path);
  return path;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(model_torchscript, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(a_saved_module_does_what_every_model_does) {
  const auto path = scripted_linear(harness);
  BOOST_TEST(skein::testing::model_problem(harness, "torchscript", {{"path", path}}, {{4}, 3}) == "");
}

BOOST_AUTO_TEST_CASE(a_missing_file_is_named) {
  const skein::DataInfo info{{4}, 3};
  const auto message = skein::testing::message_of<skein::ConfigError>(
      [&] { harness.create<skein::Model>("torchscript", {{"path", harness.run_dir() + "/none.pt"}}, &info); });
  BOOST_TEST(skein::testing::contains(message, "none.pt"), message);  // names the file
}

BOOST_AUTO_TEST_SUITE_END()
