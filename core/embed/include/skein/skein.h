/* skein.h: the C ABI of skein sessions (C99; C++ and Fortran call it too).
 *
 * A session trains a Skein model inside the calling program, one batch at a
 * time, with the config, plugins, callbacks, history sync and checkpoints of
 * `skein train`; skein/session.hpp is the C++ API it wraps.
 *
 *   skein_session* s = NULL;
 *   if (skein_session_create(config_json, NULL, &s) != SKEIN_OK) {
 *     fprintf(stderr, "%s\n", skein_last_error(NULL));
 *     return 1;
 *   }
 *   int64_t xs[2] = {64, 4}, ys[2] = {64, 4};
 *   skein_tensor x = {xbuf, 2, xs, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
 *   skein_tensor y = {ybuf, 2, ys, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
 *   double loss;
 *   skein_train_step(s, &x, &y, &loss);
 *   int stop;
 *   skein_end_epoch(s, &stop);
 *   skein_session_destroy(s);
 *
 * Link: -lskein_c (CMake: skein::c), which brings libskein_session and libtorch.
 *
 * Errors: every call returns a skein_status; no C++ exception and no abort
 * crosses this ABI. The message of a session's last failed call is
 * skein_last_error(session); calls that have no live session (a failed
 * create, a destroyed or unknown handle) leave theirs in
 * skein_last_error(NULL), kept per thread.
 *
 * Buffers: the caller owns every buffer, in host or CUDA device memory
 * (skein_tensor's device fields). Inputs and targets are read during the call
 * only, in place (no copy) when their dtype is what the model or loss takes
 * (float32 inputs; int64 class indices or float32 values), in either layout,
 * on the session's device; other dtypes and devices are converted or copied
 * into a temporary.
 * skein_predict writes into the caller's output buffer, whose shape must be
 * the model output's. Strings returned stay valid until the next call on the
 * same session (or, for NULL, on the same thread).
 *
 * Threads: calls on one session are serialized (a second thread waits);
 * different sessions are independent but share libtorch's process-wide state
 * (its random generator, which each session seeds when created, and its
 * thread pools). Destroying a session while another thread uses it is an
 * error of the program, as for any handle.
 *
 * Distributed: every process of a launcher (torchrun, mpirun, srun, or
 * RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set by hand; skein train
 * --nproc-per-node starts skein train workers only, not a program of yours)
 * creates its session the same way; train steps, skein_end_epoch and
 * skein_save_checkpoint are then collectives that every rank calls equally
 * often, each rank with its own data.
 */
#ifndef SKEIN_SKEIN_H
#define SKEIN_SKEIN_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define SKEIN_C_EXPORT __attribute__((visibility("default")))
#else
#define SKEIN_C_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this ABI: 2 (2: skein_tensor's device fields). */
#define SKEIN_C_API_VERSION 2
SKEIN_C_EXPORT int skein_c_api_version(void);

typedef enum skein_status {
  SKEIN_OK = 0,
  SKEIN_ERROR_ARGUMENT = 1, /* a null pointer, a bad rank, shape, dtype or layout, a small buffer */
  SKEIN_ERROR_HANDLE = 2,   /* not a live session: destroyed, or never created */
  SKEIN_ERROR_CONFIG = 3,   /* the config, a plugin or its options, a run directory, a checkpoint */
  SKEIN_ERROR_STATE = 4,    /* a call out of order: a checkpoint inside an epoch, a finished session */
  SKEIN_ERROR_RUNTIME = 5,  /* training failed: the model, the loss, a peer rank, a file */
  SKEIN_ERROR_MEMORY = 6    /* out of memory */
} skein_status;

typedef enum skein_dtype { SKEIN_FLOAT32 = 0, SKEIN_FLOAT64 = 1, SKEIN_INT32 = 2, SKEIN_INT64 = 3 } skein_dtype;

/* How the elements lie in memory. Either way `shape` lists the dimensions
 * batch first, as the model sees them: a C array x[64][4] is {64, 4}
 * row-major; a Fortran array x(64, 4) is {64, 4} column-major. */
typedef enum skein_layout { SKEIN_ROW_MAJOR = 0, SKEIN_COLUMN_MAJOR = 1 } skein_layout;

#define SKEIN_MAX_RANK 8

/* Where a buffer lives. A CUDA buffer (device memory of the calling
 * program: cudaMalloc, a CUDA Fortran or OpenACC device array) is used on
 * that device as it is when the session trains there (the config's
 * "device"), else copied to the session's device; outputs are written into it
 * on its device. */
typedef enum skein_device_type { SKEIN_DEVICE_HOST = 0, SKEIN_DEVICE_CUDA = 1 } skein_device_type;

/* A caller's buffer seen as a tensor. dtype, layout and the device fields are
 * plain int32_t (a C enum's size is the compiler's choice; Fortran passes
 * c_int). An initializer that leaves the device fields out zeroes them: host
 * memory, as in ABI 1. */
typedef struct skein_tensor {
  void* data;           /* the first element */
  int rank;             /* dimensions, 1 to SKEIN_MAX_RANK; the first is the batch */
  const int64_t* shape; /* `rank` sizes, each at least 1 (host memory) */
  int32_t dtype;        /* a skein_dtype */
  int32_t layout;       /* a skein_layout */
  int32_t device_type;  /* ABI 2: a skein_device_type */
  int32_t device_index; /* ABI 2: the CUDA device's ordinal (device_type SKEIN_DEVICE_CUDA) */
} skein_tensor;

/* An open session (opaque). */
typedef struct skein_session skein_session;

/* Creates a session from the JSON text of a skein train config (an object;
 * without "data" it needs "data_info": {"input_shape": [...], "num_classes":
 * N}). `options_json` may be NULL or an object with any of: "run_dir"
 * (string; default: a new directory under runs/), "overwrite" (bool),
 * "resume" (a run directory: continue from its newest complete checkpoint,
 * as skein train --resume, among the checkpoint callback's epoch_* and those
 * skein_save_checkpoint wrote by name into its checkpoints/; config_json is
 * then "null" or "{}", the config is the run's), "plugin_dirs" (list of strings),
 * "batches_per_epoch" (integer: train steps per epoch when known),
 * "echo_log" (bool, default true: the run's log on stdout too),
 * "allow_outside_run_dir" (bool, default false: skein_save_checkpoint may
 * write outside the run directory, as skein train --allow-outside-run-dir).
 * On success *out is the session; on failure *out is NULL and
 * skein_last_error(NULL) says why. */
SKEIN_C_EXPORT skein_status skein_session_create(const char* config_json, const char* options_json,
                                                 skein_session** out);
/* The same, the config read from the JSON file at `config_path`. */
SKEIN_C_EXPORT skein_status skein_session_create_from_file(const char* config_path, const char* options_json,
                                                           skein_session** out);
/* Finishes (as skein_finish) and frees the session; the handle is dead
 * afterwards. Returns the status of the finish (the session goes anyway). */
SKEIN_C_EXPORT skein_status skein_session_destroy(skein_session* session);

/* One training step: forward, loss, backward, gradient sync, and the
 * optimizer step at the end of each accumulation group. `loss` (may be
 * NULL) receives the batch's loss. */
SKEIN_C_EXPORT skein_status skein_train_step(skein_session* session, const skein_tensor* inputs,
                                             const skein_tensor* targets, double* loss);
/* One evaluation step without gradients, recorded as the epoch's valid_* values. */
SKEIN_C_EXPORT skein_status skein_eval_step(skein_session* session, const skein_tensor* inputs,
                                            const skein_tensor* targets, double* loss);
/* The model's outputs for `inputs`, written into `outputs` (float32 or
 * float64, either layout), whose shape must equal the outputs' shape. */
SKEIN_C_EXPORT skein_status skein_predict(skein_session* session, const skein_tensor* inputs,
                                          skein_tensor* outputs);
/* Closes the epoch (history sync, summary, callbacks, checkpoints);
 * *stop (may be NULL) is 1 when a callback asked to stop, the same on every rank.
 * SKEIN_ERROR_STATE ("no step was taken in epoch N") when no train or eval
 * step came since the last skein_end_epoch: an empty epoch would shift every
 * later epoch's number. */
SKEIN_C_EXPORT skein_status skein_end_epoch(skein_session* session, int* stop);
/* A checkpoint in skein train's format at directory `dir` (between epochs).
 * A relative `dir` is a name in the run's checkpoints/ ("mine":
 * RUN_DIR/checkpoints/mine). SKEIN_ERROR_ARGUMENT, naming `dir`, for "",
 * the run directory or one above it, the run's own files (checkpoints/
 * itself, config.json, ...), a path outside the run directory without the
 * option "allow_outside_run_dir", and anything already at `dir` but a
 * checkpoint or an empty directory: a checkpoint there is replaced as a
 * whole, nothing skein did not write is ever removed. On several ranks every
 * rank passes the same `dir`; ranks that differ get SKEIN_ERROR_ARGUMENT on
 * every rank, naming each rank's (compared within the run's timeout).
 * SKEIN_OK means the checkpoint is complete on disk, whatever the config's
 * "checkpoint_background" (a session writes its saves before returning: the
 * program may leave with exit() without skein_session_destroy). */
SKEIN_C_EXPORT skein_status skein_save_checkpoint(skein_session* session, const char* dir);
/* Restores a checkpoint directory (between epochs; a relative `dir` is a
 * name in the run's checkpoints/). Every file is checked first: one that
 * does not fit (another model, world size, a damaged file) is
 * SKEIN_ERROR_CONFIG and the session is as it was. A run's `final` (written
 * by skein_finish and skein train) holds the model only, no optimizer state
 * or history: it cannot be loaded here (SKEIN_ERROR_CONFIG saying so); it is
 * for skein export and skein predict, or the weights a new session starts
 * from with the config's "init_from". */
SKEIN_C_EXPORT skein_status skein_load_checkpoint(skein_session* session, const char* dir);
/* Ends training: the callbacks' on_train_end (early stopping may restore
 * the best parameters). Steps afterwards are SKEIN_ERROR_STATE. */
SKEIN_C_EXPORT skein_status skein_finish(skein_session* session);

/* The last closed epoch's value of `key` ("valid_loss", "train_loss", "lr",
 * ...). SKEIN_ERROR_ARGUMENT when that epoch has no such number. */
SKEIN_C_EXPORT skein_status skein_last_value(skein_session* session, const char* key, double* value);
/* The last closed epoch (0 before the first). */
SKEIN_C_EXPORT skein_status skein_epoch(skein_session* session, int64_t* epoch);
/* This process's rank and the number of processes. */
SKEIN_C_EXPORT skein_status skein_rank(skein_session* session, int* rank, int* world_size);
/* The run directory (valid until the session is destroyed). */
SKEIN_C_EXPORT const char* skein_run_dir(skein_session* session);

/* The message of the session's last failed call ("" when none); for NULL,
 * this thread's last failure without a live session. Never NULL. */
SKEIN_C_EXPORT const char* skein_last_error(const skein_session* session);
/* "SKEIN_ERROR_ARGUMENT", ... ("unknown status" for other values). */
SKEIN_C_EXPORT const char* skein_status_name(int status);

#ifdef __cplusplus
}
#endif

#endif /* SKEIN_SKEIN_H */
