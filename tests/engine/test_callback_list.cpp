#include <boost/test/unit_test.hpp>

#include "engine_fixture.hpp"
#include "skein/errors.hpp"
#include "skein/training/engine/callback_list.hpp"

using engine_test::RecordingCallback;
using skein::core::CallbackList;
using skein::testing::message_of;

namespace {

struct Thrower : skein::Callback {
  void on_epoch_end(skein::TrainContext&) override { throw 42; }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(callback_list)

BOOST_AUTO_TEST_CASE(runs_a_hook_of_every_callback_in_order) {
  CallbackList list;
  std::vector<std::string> order;
  auto a = std::make_shared<RecordingCallback>(), b = std::make_shared<RecordingCallback>();
  list.add("a", a);
  list.add("b", b);
  list.each("on_epoch_end", [&](skein::Callback& cb) { order.push_back(&cb == a.get() ? "a" : "b"); });
  BOOST_TEST(order == (std::vector<std::string>{"a", "b"}));
}

BOOST_AUTO_TEST_CASE(a_non_standard_exception_names_the_plugin_and_the_hook) {
  CallbackList list;
  list.add("thrower", std::make_shared<Thrower>());
  skein::testing::Harness harness;
  skein::testing::FakeRun run(harness);
  const auto message = message_of<std::runtime_error>(
      [&] { list.each("on_epoch_end", [&](skein::Callback& cb) { cb.on_epoch_end(run); }); });
  BOOST_TEST(message == "callback 'thrower' threw a non-standard exception in on_epoch_end");
}

BOOST_AUTO_TEST_CASE(each_as_reaches_only_callbacks_of_that_role) {
  struct Reporter : skein::Callback, skein::EpochReporter {
    int calls = 0;
    void on_epoch_recorded(skein::TrainContext&) override { ++calls; }
  };
  CallbackList list;
  auto reporter = std::make_shared<Reporter>();
  list.add("plain", std::make_shared<RecordingCallback>());
  list.add("reporter", reporter);
  skein::testing::Harness harness;
  skein::testing::FakeRun run(harness);
  int reached = 0;
  list.each_as<skein::EpochReporter>("on_epoch_recorded", [&](skein::EpochReporter& r) {
    r.on_epoch_recorded(run);
    ++reached;
  });
  BOOST_TEST(reached == 1);
  BOOST_TEST(reporter->calls == 1);
}

BOOST_AUTO_TEST_CASE(every_callback_hears_of_a_failure_even_when_one_cannot) {
  CallbackList list;
  auto first = std::make_shared<RecordingCallback>(), second = std::make_shared<RecordingCallback>();
  first->fail_in_on_exception = true;
  list.add("first", first);
  list.add("second", second);
  skein::testing::Harness harness;
  skein::testing::FakeRun run(harness);
  list.notify_failure(run, "disk full\nmore detail");
  BOOST_TEST(first->seen == (std::vector<std::string>{"exception:disk full"}));
  BOOST_TEST(second->seen == (std::vector<std::string>{"exception:disk full"}));
}

BOOST_AUTO_TEST_CASE(states_restore_by_position_and_plugin_name) {
  CallbackList list;
  auto a = std::make_shared<RecordingCallback>(), b = std::make_shared<RecordingCallback>();
  a->saved = {{"best", 0.5}};
  list.add("a", a);
  list.add("b", b);
  const auto states = skein::core::callback_states_json(list.states());
  BOOST_TEST(states.dump() == R"([{"plugin":"a","state":{"best":0.5}},{"plugin":"b","state":null}])");

  a->saved = nullptr;
  list.restore({{"a", {{"best", 0.25}}}, {"other", 7}}, "checkpoint c");
  BOOST_TEST(a->saved == (nlohmann::json{{"best", 0.25}}));
  BOOST_TEST(b->saved.is_null());  // another plugin's state is not loaded into it
}

BOOST_AUTO_TEST_CASE(a_state_that_does_not_fit_names_the_callback) {
  CallbackList list;
  list.add("a", std::make_shared<RecordingCallback>());
  const auto message = message_of<skein::ConfigError>([&] { list.restore({{"a", "unfit"}}, "checkpoint c"); });
  BOOST_TEST(message == "checkpoint c: the state of callback 'a' does not fit: no such field");
}

BOOST_AUTO_TEST_SUITE_END()
