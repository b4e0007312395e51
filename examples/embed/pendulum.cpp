// Online training of a surrogate from a running simulation, in C++.
//
// The "simulation" is a damped pendulum (angle, angular velocity) advanced
// by RK4. Each epoch it runs fresh trajectories, and a Skein session learns
// the map state(t) -> state(t + dt) from them, batch by batch, as the
// simulation produces them; then the trained model replaces the simulator
// for a 40-step rollout, and its error against the simulator is printed.
//
//   pendulum CONFIG RUN_DIR [MAX_EPOCHS]
//
// The same program runs on several processes (ddp + tcpstore in
// surrogate_ddp.json) under any launcher: each rank simulates its own
// trajectories, and the session averages gradients and syncs the history.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <skein/session.hpp>

namespace {

struct State {
  double theta, omega;
};

constexpr double kDt = 0.1;

State derivative(State s) { return {s.omega, -std::sin(s.theta) - 0.1 * s.omega}; }

State simulate_step(State s) {
  auto add = [](State a, State d, double h) { return State{a.theta + h * d.theta, a.omega + h * d.omega}; };
  const State k1 = derivative(s), k2 = derivative(add(s, k1, kDt / 2)), k3 = derivative(add(s, k2, kDt / 2)),
              k4 = derivative(add(s, k3, kDt));
  return {s.theta + kDt / 6 * (k1.theta + 2 * k2.theta + 2 * k3.theta + k4.theta),
          s.omega + kDt / 6 * (k1.omega + 2 * k2.omega + 2 * k3.omega + k4.omega)};
}

// `trajectories` runs of `steps` steps from random states: (inputs, targets) pairs.
void simulate(std::mt19937& rng, int trajectories, int steps, std::vector<float>& x, std::vector<float>& y) {
  std::uniform_real_distribution<double> angle(-2.0, 2.0), speed(-1.0, 1.0);
  x.clear();
  y.clear();
  for (int t = 0; t < trajectories; ++t) {
    State s{angle(rng), speed(rng)};
    for (int i = 0; i < steps; ++i) {
      const State next = simulate_step(s);
      x.insert(x.end(), {static_cast<float>(s.theta), static_cast<float>(s.omega)});
      y.insert(y.end(), {static_cast<float>(next.theta), static_cast<float>(next.omega)});
      s = next;
    }
  }
}

torch::Tensor rows(std::vector<float>& v, std::int64_t first, std::int64_t count) {
  return torch::from_blob(v.data() + 2 * first, {count, 2}, torch::kFloat);  // no copy
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CONFIG RUN_DIR [MAX_EPOCHS]\n", argv[0]);
    return 2;
  }
  const long max_epochs = argc > 3 ? std::stol(argv[3]) : 30;
  try {
    skein::SessionOptions options;
    options.run_dir = argv[2];
    options.overwrite = true;
    skein::Session session(std::string(argv[1]), options);
    const int rank = session.context().run().rank;
    std::mt19937 rng(1000 + rank);  // each rank simulates its own trajectories
    std::mt19937 valid_rng(77 + rank);
    std::vector<float> x, y, vx, vy;
    simulate(valid_rng, 2, 64, vx, vy);
    const std::int64_t batch = 64;
    for (long epoch = 1; epoch <= max_epochs; ++epoch) {
      simulate(rng, 32, 64, x, y);
      // Shuffle the pairs (the same permutation for inputs and targets).
      const std::int64_t n = static_cast<std::int64_t>(x.size() / 2);
      std::vector<std::int64_t> order(n);
      for (std::int64_t i = 0; i < n; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<float> sx(x.size()), sy(y.size());
      for (std::int64_t i = 0; i < n; ++i)
        for (int k = 0; k < 2; ++k) sx[2 * i + k] = x[2 * order[i] + k], sy[2 * i + k] = y[2 * order[i] + k];
      for (std::int64_t lo = 0; lo + batch <= n; lo += batch) session.train_step(rows(sx, lo, batch), rows(sy, lo, batch));
      session.eval_step(rows(vx, 0, static_cast<std::int64_t>(vx.size() / 2)), rows(vy, 0, static_cast<std::int64_t>(vy.size() / 2)));
      if (session.end_epoch()) break;
    }
    session.finish();  // early_stopping's load_best restores the best epoch here

    // The surrogate in place of the simulator.
    State truth{1.0, 0.0};
    torch::Tensor state = torch::tensor({1.0f, 0.0f}).reshape({1, 2});
    double sum_sq = 0;
    const int steps = 40;
    for (int i = 0; i < steps; ++i) {
      truth = simulate_step(truth);
      state = session.predict(state);
      const double dt = state[0][0].item<double>() - truth.theta, dw = state[0][1].item<double>() - truth.omega;
      sum_sq += dt * dt + dw * dw;
    }
    if (rank == 0)
      std::printf("surrogate rollout: %d steps, rms error %.4f (final angle %.4f, simulator %.4f), %ld epochs\n", steps,
                  std::sqrt(sum_sq / steps), state[0][0].item<double>(), truth.theta, session.epoch());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pendulum: error: %s\n", e.what());
    return 1;
  }
}
