#include <boost/test/unit_test.hpp>

#include <torch/torch.h>

#include "skein/training/engine/step_pieces.hpp"

// Large parameters cut into flat pieces that an optimizer steps: the pieces
// cover their parameter once, in order, over its storage, and their
// gradients follow the parameter's.
BOOST_AUTO_TEST_SUITE(step_pieces)

namespace {

std::vector<torch::Tensor> parameters() {
  return {torch::arange(10.0).reshape({2, 5}).requires_grad_(), torch::ones({3}).requires_grad_()};
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_large_parameter_is_cut_in_order_and_a_small_one_kept_whole) {
  const auto params = parameters();
  const skein::core::StepPieces cut(params, 4);
  BOOST_TEST(cut.cuts_any());
  const auto& pieces = cut.pieces();
  BOOST_REQUIRE(pieces.size() == 4u);  // 4 + 4 + 2 of the matrix, the vector whole
  BOOST_TEST(pieces[0].offset == 0);
  BOOST_TEST(pieces[1].offset == 4);
  BOOST_TEST(pieces[2].length == 2);
  BOOST_TEST(pieces[3].whole);
  BOOST_TEST(pieces[3].tensor.is_same(params[1]));
  BOOST_TEST(torch::equal(pieces[1].tensor, torch::arange(4.0, 8.0)));
  // Over the parameter's storage: writing a piece writes the parameter.
  torch::NoGradGuard no_grad;
  pieces[2].tensor.fill_(-1);
  BOOST_TEST(params[0][1][4].item<double>() == -1.0);
  BOOST_TEST(!skein::core::StepPieces(params, 0).cuts_any());
  BOOST_TEST(!skein::core::StepPieces(params, 10).cuts_any());
}

// Stepped in pieces, SGD with momentum does to the parameter what it does to it whole.
BOOST_AUTO_TEST_CASE(an_optimizer_over_the_pieces_steps_the_parameter_as_a_whole) {
  const auto whole = parameters();
  const auto pieced = parameters();
  const skein::core::StepPieces cut(pieced, 3);
  torch::optim::SGD a(whole, torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::optim::SGD b(cut.tensors(), torch::optim::SGDOptions(0.1).momentum(0.9));
  for (int s = 0; s < 3; ++s) {
    a.zero_grad();
    b.zero_grad();
    cut.after_zero_grad();
    for (const auto& params : {whole, pieced}) ((params[0] * params[0]).sum() + params[1].sum() * s).backward();
    cut.before_step();
    a.step();
    b.step();
  }
  BOOST_TEST(torch::equal(whole[0], pieced[0]));
  BOOST_TEST(torch::equal(whole[1], pieced[1]));
}

// A restore points a parameter at new storage (Tensor::set_): the pieces follow it.
BOOST_AUTO_TEST_CASE(pieces_follow_their_parameter_to_new_storage) {
  const auto params = parameters();
  const skein::core::StepPieces cut(params, 4);
  {
    torch::NoGradGuard no_grad;
    params[0].set_(torch::full({2, 5}, 7.0));
  }
  params[0].mutable_grad() = torch::ones({2, 5});
  cut.before_step();
  BOOST_TEST(torch::equal(cut.pieces()[0].tensor, torch::full({4}, 7.0)));
  BOOST_TEST(torch::equal(cut.pieces()[2].tensor.grad(), torch::ones({2})));
  torch::optim::SGD sgd(cut.tensors(), torch::optim::SGDOptions(1.0));
  sgd.step();
  BOOST_TEST(torch::equal(params[0].detach(), torch::full({2, 5}, 6.0)));
}

// zero_grad reaches a cut parameter's gradient: none after it, or zeros.
BOOST_AUTO_TEST_CASE(zero_grad_of_the_pieces_reaches_their_parameter) {
  const auto params = parameters();
  const skein::core::StepPieces cut(params, 4);
  torch::optim::SGD sgd(cut.tensors(), torch::optim::SGDOptions(1.0));
  params[0].mutable_grad() = torch::ones({2, 5});
  cut.before_step();
  sgd.zero_grad();
  cut.after_zero_grad();
  const auto& grad = params[0].grad();
  BOOST_TEST((!grad.defined() || torch::equal(grad, torch::zeros({2, 5}))));
  for (const auto& piece : cut.pieces())
    if (!piece.whole) BOOST_TEST(!piece.tensor.grad().defined());
}

BOOST_AUTO_TEST_SUITE_END()
