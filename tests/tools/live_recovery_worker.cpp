// One process of tests/test_live_recovery.cpp: a training loop in miniature
// over a Gloo group that outlives lost members through skein::core::Quorum.
// Each step all-reduces a gradient, then agrees (a second collective) on
// committing it and on the replacements waiting, and applies it. On any
// failure the survivors agree on the next generation, build its group under
// its own store prefix and take the leader's state (parameters and step):
// a step some applied and others did not is then the same everywhere. A
// process left out (it was stopped past the window) comes back as a
// replacement. Progress and the result go to the test's store.
//
//   live_recovery_worker PORT ID WORLD STEPS FINAL_MEMBERS TIMEOUT_MS [join]
// Runs STEPS committed steps, and on past them until the group has
// FINAL_MEMBERS members (so that a replacement started late is still taken in).
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#include "skein/detail/json.hpp"
#include "skein/io/store.hpp"
#include "skein/torch_compat/process_group.hpp"
#include "skein/training/store/quorum.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using skein::core::Membership;

c10::intrusive_ptr<c10d::ProcessGroup> group_of(const c10::intrusive_ptr<c10d::Store>& store,
                                                const skein::core::Quorum& quorum, const Membership& m, int id,
                                                std::chrono::milliseconds timeout) {
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(quorum.group_prefix(m.generation), store);
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  return skein::torch_compat::make_process_group(prefixed, m.rank_of(id), static_cast<int>(m.members.size()),
                                                 options);
}

void all_reduce(c10d::ProcessGroup& group, torch::Tensor& t, c10d::ReduceOp op) {
  std::vector<torch::Tensor> v{t};
  c10d::AllreduceOptions o;
  o.reduceOp = op;
  group.allreduce(v, o)->wait();
}

// A digest of the parameters' bytes: equal on every process, or a step was
// applied by some and not others.
std::string digest(const torch::Tensor& t) {
  const auto* p = static_cast<const char*>(t.data_ptr());
  return std::to_string(std::hash<std::string>{}(std::string(p, p + t.nbytes())));
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::cerr << "usage: live_recovery_worker PORT ID WORLD STEPS FINAL_MEMBERS TIMEOUT_MS [join]\n";
    return 2;
  }
  const int port = std::atoi(argv[1]);
  int id = std::atoi(argv[2]);
  const int world = std::atoi(argv[3]);
  const long steps = std::atol(argv[4]);
  const std::size_t final_members = std::strtoul(argv[5], nullptr, 10);
  const std::chrono::milliseconds timeout(std::atol(argv[6]));
  const bool joiner = argc > 7 && std::string(argv[7]) == "join";
  torch::set_num_threads(1);
  // A write to a peer that is gone must fail as an error to recover from,
  // not end this process (Gloo's sends do not all pass MSG_NOSIGNAL: a
  // stopped worker resumed after the others moved on died of SIGPIPE).
  std::signal(SIGPIPE, SIG_IGN);

  c10::intrusive_ptr<c10d::Store> store =
      c10::make_intrusive<c10d::TCPStore>("127.0.0.1", skein::tcp_store_options(port, false, 1, 120));
  skein::core::QuorumOptions options;
  options.window = 2 * timeout;  // a survivor stuck in a collective learns of the loss within `timeout`
  options.first_joiner_id = world;
  skein::core::Quorum quorum(*store, "test", options);
  const int first_id = id;
  Membership m;
  if (joiner) {
    id = quorum.ask_to_join();
    m = quorum.wait_to_be_taken_in(id, std::chrono::seconds(120));
  } else {
    m = Membership::initial(world);
  }

  torch::Tensor param = torch::zeros({4096}, torch::kDouble);
  torch::Tensor weights = torch::rand({256, 256});  // the step's compute
  long step = 0;
  long failures = 0, rejoins = 0;
  double longest_recovery_ms = 0;
  std::optional<Clock::time_point> failed_at;
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  bool build = true;
  const auto deadline = Clock::now() + std::chrono::seconds(180);
  while (Clock::now() < deadline) {
    try {
      if (build) {
        group.reset();
        group = group_of(store, quorum, m, id, timeout);
        // Everyone takes the leader's state (a replacement's first).
        torch::Tensor at = torch::tensor({static_cast<double>(step)}, torch::kDouble);
        for (auto* t : {&param, &at}) {
          std::vector<torch::Tensor> one{*t};
          group->broadcast(one)->wait();
        }
        step = static_cast<long>(at.item<double>());
        build = false;
      }
      if (step >= steps && m.members.size() >= final_members) break;
      (void)torch::matmul(weights, weights);  // stands for forward and backward
      torch::Tensor grad = torch::full({4096}, static_cast<double>((step % 7) + 1), torch::kDouble);
      all_reduce(*group, grad, c10d::ReduceOp::SUM);
      torch::Tensor agree = torch::tensor({m.leader() == id ? static_cast<double>(quorum.joiners_asked()) : 0.0},
                                          torch::kDouble);
      all_reduce(*group, agree, c10d::ReduceOp::MAX);
      param -= 0.001 * (grad / static_cast<double>(m.members.size()));  // the mean: exactly (step % 7) + 1
      ++step;
      store->add("progress/" + std::to_string(first_id), 1);
      if (failed_at) {
        longest_recovery_ms = std::max(
            longest_recovery_ms, std::chrono::duration<double, std::milli>(Clock::now() - *failed_at).count());
        failed_at.reset();
      }
      const auto asked = static_cast<std::int64_t>(agree.item<double>());
      if (asked > m.joiners_seen) {
        m = quorum.grow(m, asked);
        build = true;
      }
    } catch (const std::exception& e) {
      std::cerr << "id " << id << ", step " << step << ", " << m.to_string() << ": " << first_line(e.what()) << std::endl;
      ++failures;
      if (!failed_at) failed_at = Clock::now();
      group.reset();
      m = quorum.after_failure(m, id);
      std::cerr << "id " << id << " goes on in " << m.to_string() << std::endl;
      if (!m.has(id)) {  // left out: back as a replacement
        ++rejoins;
        id = quorum.ask_to_join();
        m = quorum.wait_to_be_taken_in(id, std::chrono::seconds(120));
      }
      build = true;
    }
  }
  const bool finished = step >= steps && m.members.size() >= final_members;
  const nlohmann::json result = {{"first_id", first_id},   {"id", id},
                                 {"generation", m.generation}, {"members", m.members},
                                 {"step", step},           {"digest", digest(param)},
                                 {"value", param[0].item<double>()},
                                 {"failures", failures},   {"rejoins", rejoins},
                                 {"finished", finished},   {"longest_recovery_ms", longest_recovery_ms}};
  skein::store_set(*store, "result/" + std::to_string(first_id), result.dump());
  std::cout << result.dump() << std::endl;
  return finished ? 0 : 1;
}
