#include <boost/test/unit_test.hpp>

#include "engine_fixture.hpp"
#include "skein/errors.hpp"
#include "skein/training/engine/forward_pass.hpp"

using skein::testing::message_of;

namespace {

// A model that fails on every input, or outputs `width` scores.
struct Scores : skein::Model {
  explicit Scores(std::int64_t width, bool fail = false) : width_(width), fail_(fail) {
    w_ = register_parameter("w", torch::ones({1}));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    if (fail_) throw std::runtime_error("mat1 and mat2 shapes cannot be multiplied\n(more lines)");
    return (x.sum(1, true) * w_).expand({x.size(0), width_}).contiguous();
  }
  std::int64_t width_;
  bool fail_;
  torch::Tensor w_;
};

struct PassFixture : engine_test::Engine {
  std::ostringstream log;
  skein::core::ForwardPass pass_for(skein::Model& model, bool bf16 = false) {
    const auto precision = bf16 ? skein::core::Precision::bf16_mixed : skein::core::Precision::fp32;
    return skein::core::ForwardPass(
        {model, *parts.loss, parts.splits.scaling, info, "mine", "cross_entropy", precision, torch::kCPU, &log});
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(forward_pass, PassFixture)

BOOST_AUTO_TEST_CASE(sets_the_outputs_and_returns_the_loss) {
  auto b = batch(5);
  const auto loss = forward->loss_of(b);
  BOOST_TEST((b.outputs.sizes() == torch::IntArrayRef({5, 3})));
  BOOST_TEST(loss.dim() == 0);
  BOOST_TEST(loss.requires_grad());
}

BOOST_AUTO_TEST_CASE(a_failing_model_is_one_line_naming_it_and_the_inputs_shape) {
  Scores failing(3, true);
  auto pass = pass_for(failing);
  auto b = batch(2);
  BOOST_TEST(message_of([&] { pass.loss_of(b); }) ==
             "model 'mine' failed on inputs of shape [2, 4]: mat1 and mat2 shapes cannot be multiplied");
  BOOST_TEST(skein::testing::contains(log.str(), "(more lines)"));  // the whole message goes to the log
}

BOOST_AUTO_TEST_CASE(a_classifier_scoring_another_number_of_classes_is_refused) {
  Scores narrow(2);
  auto pass = pass_for(narrow);
  auto b = batch(4);
  targets.back().fill_(1);  // labels 1..C: the hint says to shift them
  const auto message = message_of<skein::ConfigError>([&] { pass.loss_of(b); });
  BOOST_TEST(message == "model 'mine' outputs 2 class scores per sample, but the dataset has 3 classes (0 to 2): "
                        "the labels start at 1; shift them to 0..1, or give the model 3 outputs");
}

BOOST_AUTO_TEST_CASE(bf16_mixed_outputs_reach_the_loss_as_float32) {
  auto pass = pass_for(*parts.model, true);
  auto b = batch(3);
  pass.loss_of(b);
  BOOST_TEST(b.outputs.scalar_type() == torch::kFloat32);
}

BOOST_AUTO_TEST_CASE(predict_runs_in_eval_mode_without_gradients) {
  parts.model->train();
  const auto out = forward->predict(torch::randn({2, 4}));
  BOOST_TEST(!parts.model->is_training());
  BOOST_TEST(!out.requires_grad());
}

BOOST_AUTO_TEST_SUITE_END()
