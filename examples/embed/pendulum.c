/* Online training of a surrogate from a running simulation, in C (C99).
 * The same damped pendulum and loop as pendulum.cpp, through skein/skein.h.
 *
 *   pendulum_c CONFIG RUN_DIR [MAX_EPOCHS]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <skein/skein.h>

#define DT 0.1
#define TRAJECTORIES 32
#define STEPS 64
#define PAIRS (TRAJECTORIES * STEPS)
#define BATCH 64

typedef struct {
  double theta, omega;
} state;

static state derivative(state s) {
  state d = {s.omega, -sin(s.theta) - 0.1 * s.omega};
  return d;
}

static state add(state a, state d, double h) {
  state r = {a.theta + h * d.theta, a.omega + h * d.omega};
  return r;
}

static state simulate_step(state s) {
  state k1 = derivative(s), k2 = derivative(add(s, k1, DT / 2)), k3 = derivative(add(s, k2, DT / 2)),
        k4 = derivative(add(s, k3, DT));
  state r = {s.theta + DT / 6 * (k1.theta + 2 * k2.theta + 2 * k3.theta + k4.theta),
             s.omega + DT / 6 * (k1.omega + 2 * k2.omega + 2 * k3.omega + k4.omega)};
  return r;
}

/* A small deterministic generator: uniform in [lo, hi). */
static double uniform(unsigned long long* seed, double lo, double hi) {
  *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return lo + (hi - lo) * (double)(*seed >> 11) / 9007199254740992.0;
}

/* Trajectories from random states, stored as rows {theta, omega}. */
static void simulate(unsigned long long* seed, int trajectories, float* x, float* y) {
  int t, i, row = 0;
  for (t = 0; t < trajectories; ++t) {
    state s;
    s.theta = uniform(seed, -2.0, 2.0);
    s.omega = uniform(seed, -1.0, 1.0);
    for (i = 0; i < STEPS; ++i, ++row) {
      state next = simulate_step(s);
      x[2 * row] = (float)s.theta;
      x[2 * row + 1] = (float)s.omega;
      y[2 * row] = (float)next.theta;
      y[2 * row + 1] = (float)next.omega;
      s = next;
    }
  }
}

static int check(skein_session* s, skein_status status, const char* what) {
  if (status == SKEIN_OK) return 0;
  fprintf(stderr, "pendulum_c: %s: %s: %s\n", what, skein_status_name(status), skein_last_error(s));
  return 1;
}

int main(int argc, char** argv) {
  static float x[PAIRS * 2], y[PAIRS * 2], vx[2 * STEPS * 2], vy[2 * STEPS * 2];
  char options[4096];
  skein_session* s = NULL;
  unsigned long long seed = 1000, valid_seed = 77;
  long max_epochs = argc > 3 ? atol(argv[3]) : 30;
  long epoch;
  int stop = 0, i;
  double loss = 0, sum_sq = 0;
  int64_t batch_shape[2] = {BATCH, 2}, valid_shape[2] = {2 * STEPS, 2}, one_shape[2] = {1, 2};
  float current[2] = {1.0f, 0.0f}, next[2];
  state truth = {1.0, 0.0};
  int64_t epochs = 0;

  if (argc < 3) {
    fprintf(stderr, "usage: %s CONFIG RUN_DIR [MAX_EPOCHS]\n", argv[0]);
    return 2;
  }
  snprintf(options, sizeof options, "{\"run_dir\": \"%s\", \"overwrite\": true}", argv[2]);
  if (check(NULL, skein_session_create_from_file(argv[1], options, &s), "create")) return 1;

  simulate(&valid_seed, 2, vx, vy);
  for (epoch = 1; epoch <= max_epochs && !stop; ++epoch) {
    int lo;
    skein_tensor vin = {vx, 2, valid_shape, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
    skein_tensor vout = {vy, 2, valid_shape, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
    simulate(&seed, TRAJECTORIES, x, y);
    for (lo = 0; lo + BATCH <= PAIRS; lo += BATCH) {
      /* The caller's rows, used in place. */
      skein_tensor in = {x + 2 * lo, 2, batch_shape, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
      skein_tensor out = {y + 2 * lo, 2, batch_shape, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
      if (check(s, skein_train_step(s, &in, &out, &loss), "train_step")) goto fail;
    }
    if (check(s, skein_eval_step(s, &vin, &vout, &loss), "eval_step")) goto fail;
    if (check(s, skein_end_epoch(s, &stop), "end_epoch")) goto fail;
  }
  if (check(s, skein_finish(s), "finish")) goto fail;
  if (check(s, skein_epoch(s, &epochs), "epoch")) goto fail;

  /* The surrogate in place of the simulator. */
  for (i = 0; i < 40; ++i) {
    skein_tensor in = {current, 2, one_shape, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
    skein_tensor out = {next, 2, one_shape, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
    double dt, dw;
    truth = simulate_step(truth);
    if (check(s, skein_predict(s, &in, &out), "predict")) goto fail;
    current[0] = next[0];
    current[1] = next[1];
    dt = current[0] - truth.theta;
    dw = current[1] - truth.omega;
    sum_sq += dt * dt + dw * dw;
  }
  printf("surrogate rollout: 40 steps, rms error %.4f (final angle %.4f, simulator %.4f), %ld epochs\n",
         sqrt(sum_sq / 40), current[0], truth.theta, (long)epochs);
  return check(NULL, skein_session_destroy(s), "destroy");

fail:
  skein_session_destroy(s);
  return 1;
}
