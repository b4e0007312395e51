#define BOOST_TEST_MODULE lr_scheduler
#include <boost/test/unit_test.hpp>

#include "fake_context.hpp"

// The lr_scheduler callback alone: the learning rate each policy sets.
using test::FakeContext;

BOOST_FIXTURE_TEST_SUITE(lr_scheduler, test::Fixture)

BOOST_AUTO_TEST_CASE(lr_scheduler_step_cosine_and_plateau) {
  auto lrs = [&](const nlohmann::json& options, const std::vector<double>& losses) {
    FakeContext ctx;
    auto s = make("lr_scheduler", options);
    s->on_train_begin(ctx);
    std::vector<double> out;
    for (double l : losses) {
      ctx.epoch_with("valid_loss", l);
      s->on_epoch_end(ctx);
      out.push_back(ctx.history().get(-1, "lr").get<double>());
    }
    return out;
  };
  auto step = lrs({{"policy", "step"}, {"step_size", 2}, {"gamma", 0.5}}, {1, 1, 1, 1, 1});
  BOOST_TEST(step == std::vector<double>({0.1, 0.1, 0.05, 0.05, 0.025}), boost::test_tools::per_element());
  auto cosine = lrs({{"policy", "cosine"}, {"t_max", 2}}, {1, 1, 1});
  BOOST_TEST(cosine[1] == 0.05, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(cosine[2] == 0.0, boost::test_tools::tolerance(1e-12));
  auto plateau = lrs({{"policy", "plateau"}, {"patience", 1}, {"factor", 0.5}}, {1, 0.5, 0.6, 0.7, 0.8, 0.9});
  BOOST_TEST(plateau == std::vector<double>({0.1, 0.1, 0.1, 0.1, 0.05, 0.05}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
