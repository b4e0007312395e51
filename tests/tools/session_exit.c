/* A C program that saves a checkpoint and leaves with exit(0), without
 * skein_session_destroy (issue 62: with "checkpoint_background": true the
 * save was reported done and never written). Trains one step of a tiny MLP
 * first (an MLP of 6 inputs and 3 outputs, mse: the config's).
 *
 *   session_exit RUN_DIR CONFIG.json   (a skein train config) */
#include <stdio.h>
#include <stdlib.h>

#include "skein/skein.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: session_exit RUN_DIR CONFIG.json\n");
    return 2;
  }
  static char config[65536];
  FILE* file = fopen(argv[2], "r");
  if (!file) {
    perror(argv[2]);
    return 2;
  }
  const size_t n = fread(config, 1, sizeof config - 1, file);
  fclose(file);
  config[n] = '\0';
  char options[4096];
  snprintf(options, sizeof options, "{\"run_dir\": \"%s\", \"echo_log\": false}", argv[1]);
  skein_session* s = NULL;
  if (skein_session_create(config, options, &s) != SKEIN_OK) {
    fprintf(stderr, "%s\n", skein_last_error(NULL));
    return 1;
  }
  float x[4][6] = {{0}}, y[4][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 0}};
  const int64_t x_shape[2] = {4, 6}, y_shape[2] = {4, 3};
  skein_tensor in = {&x[0][0], 2, x_shape, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
  skein_tensor targets = {&y[0][0], 2, y_shape, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
  double loss = 0;
  int stop = 0;
  if (skein_train_step(s, &in, &targets, &loss) != SKEIN_OK || skein_end_epoch(s, &stop) != SKEIN_OK ||
      skein_save_checkpoint(s, "mine") != SKEIN_OK) {
    fprintf(stderr, "%s\n", skein_last_error(s));
    return 1;
  }
  exit(0); /* reported saved: it must be on disk now */
}
