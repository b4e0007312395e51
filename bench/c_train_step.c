/* Per-step cost of skein_train_step from C (docs/BENCHMARKS.md, "Session
 * step"): the benchmark MLP (784-256-128-10, SGD with momentum) on one fixed
 * batch of 64, the same tensors handwritten_loop --steps uses. Prints one
 * JSON line: microseconds per step, the best of 5 rounds.
 *   c_train_step [STEPS]      (run with OMP_NUM_THREADS=1, as the baseline) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <skein/skein.h>

#define BATCH 64
#define FEATURES 784

static const char* kConfig =
    "{\"model\": {\"plugin\": \"mlp\", \"hidden\": [256, 128]},"
    " \"data_info\": {\"input_shape\": [784], \"num_classes\": 10},"
    " \"optimizer\": {\"plugin\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9},"
    " \"callbacks\": [], \"seed\": 0}";

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char** argv) {
  static float x[BATCH * FEATURES];
  static int64_t y[BATCH];
  const int64_t xs[2] = {BATCH, FEATURES}, ys[1] = {BATCH};
  skein_tensor in = {x, 2, xs, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
  skein_tensor out = {y, 1, ys, SKEIN_INT64, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
  long steps = argc > 1 ? atol(argv[1]) : 500, i;
  int round;
  double best = 1e30, loss = 0;
  skein_session* s = NULL;
  for (i = 0; i < BATCH * FEATURES; ++i) x[i] = (float)((unsigned)(i * 7919u) % 1000u) / 1000.0f - 0.5f;
  for (i = 0; i < BATCH; ++i) y[i] = i % 10;
  if (skein_session_create(kConfig, "{\"run_dir\": \"runs/bench-c-train-step\", \"overwrite\": true, \"echo_log\": false}",
                           &s) != SKEIN_OK) {
    fprintf(stderr, "c_train_step: %s\n", skein_last_error(NULL));
    return 1;
  }
  for (i = 0; i < 50; ++i) skein_train_step(s, &in, &out, &loss); /* warm-up */
  for (round = 0; round < 5; ++round) {
    double t0 = now(), per;
    for (i = 0; i < steps; ++i) {
      if (skein_train_step(s, &in, &out, &loss) != SKEIN_OK) {
        fprintf(stderr, "c_train_step: %s\n", skein_last_error(s));
        return 1;
      }
    }
    per = (now() - t0) / (double)steps * 1e6;
    if (per < best) best = per;
    skein_end_epoch(s, NULL);
  }
  printf("{\"program\": \"c_train_step\", \"us_per_step\": %.1f, \"loss\": %.4f}\n", best, loss);
  return skein_session_destroy(s) == SKEIN_OK ? 0 : 1;
}
