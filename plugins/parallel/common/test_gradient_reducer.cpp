#define BOOST_TEST_MODULE parallel_common
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/torch.h>

#include "gradient_reducer.hpp"
#include "skein/torch_compat/process_group.hpp"

// GradientReducer on two ranks: threads of this test, Gloo over loopback.

namespace {

// Runs fn(rank, group) on two threads, each rank with a Gloo group over
// loopback on one HashStore.
void on_two_ranks(const std::function<void(int, c10::intrusive_ptr<c10d::ProcessGroup>)>& fn) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        auto gloo = c10d::ProcessGroupGloo::Options::create();
        gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
        fn(r, skein::torch_compat::make_process_group(store, r, 2, gloo));
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  BOOST_TEST(errors[0] == "");
  BOOST_TEST(errors[1] == "");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gradient_reducer)

// Stage 2 keeps only this rank's gradients: another rank's bucket is a
// buffer in transit, released once reduced, and this rank's parameter alone
// in its bucket has no buffer at all (its bucket is its .grad, dropped after
// the step), so after a step a rank holds gradient buffers only for its own
// parameters that share a bucket. Buckets of one parameter (cap 1 byte;
// more foreign buckets than may be in transit at once) and of several (cap
// 1 MiB: in backward's order 7 6 | 5 | 4 | 3 | 2 1 | 0, the pairs rank 1's),
// over two steps; gradient of parameter k on rank r is (r + 1)(k + 1), so
// its average is 1.5 (k + 1).
BOOST_AUTO_TEST_CASE(stage_2_holds_buffers_for_its_own_gradients_only) {
  const std::vector<int> owners{0, 1, 1, 0, 1, 0, 1, 1};
  for (const std::size_t cap : {std::size_t{1}, std::size_t{1} << 20}) {
    const std::vector<std::size_t> shared = cap == 1 ? std::vector<std::size_t>{} : std::vector<std::size_t>{1, 2, 6, 7};
    auto is_shared = [&](std::size_t k) { return std::find(shared.begin(), shared.end(), k) != shared.end(); };
    std::vector<std::int64_t> held(2);
    on_two_ranks([&](int rank, c10::intrusive_ptr<c10d::ProcessGroup> group) {
      std::vector<torch::Tensor> params;
      for (std::size_t k = 0; k < owners.size(); ++k) params.push_back(torch::zeros({100 + 10 * static_cast<long>(k)}).requires_grad_());
      skein_parallel::ReducerOptions o;
      o.cap_bytes = o.first_cap_bytes = cap;
      o.owners = owners;
      o.who = "zero";
      skein_parallel::GradientReducer reducer(group, params, o);
      for (int step = 0; step < 2; ++step) {
        for (auto& p : params)  // an optimizer's zero_grad
          if (p.grad().defined()) p.mutable_grad().zero_();
        auto loss = torch::zeros({});
        for (std::size_t k = 0; k < params.size(); ++k) loss = loss + params[k].sum() * ((rank + 1) * (k + 1.0));
        loss.backward();
        reducer.finish();
        for (std::size_t k = 0; k < params.size(); ++k) {
          if (owners[k] != rank) {
            if (params[k].grad().defined()) throw std::runtime_error("a gradient of another rank's parameter is kept");
            continue;
          }
          if (!torch::allclose(params[k].grad(), torch::full_like(params[k], 1.5 * (k + 1.0))))
            throw std::runtime_error("parameter " + std::to_string(k) + ": not the average at step " + std::to_string(step));
        }
        reducer.drop_borrowed_gradients();  // the optimizer has stepped
        for (std::size_t k = 0; k < params.size(); ++k)
          if (owners[k] == rank && params[k].grad().defined() != is_shared(k))
            throw std::runtime_error("parameter " + std::to_string(k) + ": a borrowed gradient kept, or a slot dropped");
      }
      held[static_cast<std::size_t>(rank)] = reducer.held_bytes();
    });
    for (int r = 0; r < 2; ++r) {
      std::int64_t own = 0;
      for (std::size_t k = 0; k < owners.size(); ++k)
        if (owners[k] == r && is_shared(k)) own += (100 + 10 * static_cast<std::int64_t>(k)) * 4;
      BOOST_TEST(held[static_cast<std::size_t>(r)] == own, "rank " << r << ", cap " << cap);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
