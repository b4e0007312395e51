#pragma once
// Option declarations several plugins share, written once: entries of a
// SKEIN_PLUGIN option list (or of an option X-macro list, SKEIN_OPTION_SPECS).
// Macros only, no torch: a manifest can be built from them alone.

// The options Monitor reads, declared once for every plugin that watches a
// history key: entries of a SKEIN_PLUGIN option list. MONITOR_DEFAULT and
// THRESHOLD_DEFAULT are JSON texts; MONITOR_DOC says what the key decides;
// WHEN prefixes every doc line (e.g. "plateau: ", or "" for none).
#define SKEIN_MONITOR_OPTIONS(MONITOR_DEFAULT, MONITOR_DOC, THRESHOLD_DEFAULT, WHEN)                 \
  SKEIN_OPTION("monitor", string, MONITOR_DEFAULT, WHEN MONITOR_DOC),                                \
      SKEIN_OPTION("threshold", number, THRESHOLD_DEFAULT, WHEN "smallest change that counts as an improvement", \
                   SKEIN_RANGE("[0, )")),                                                            \
      SKEIN_CHOICE_OPTION("threshold_mode", "rel", "rel|abs",                                        \
                          WHEN "rel: threshold is a share of the best value; abs: an amount"),       \
      SKEIN_OPTION("lower_is_better", boolean, "null",                                                \
                   WHEN "direction (null: from the key's name: *_loss and the like lower, others higher)")

// The activations SequentialModel::add_activation_and_dropout makes
// (nn_helpers.hpp), as an X-macro entry: X(activation, choice, ...).
#define SKEIN_ACTIVATION_OPTION(X)                                  \
  X(activation, choice, "\"relu\"", "Activation after each layer", \
    SKEIN_CHOICES("relu|gelu|tanh|sigmoid|leaky_relu|elu"))

// The options Adam-like optimizers share (read_adam_options reads all but lr),
// as X-macro entries: X(name, type, default_json, doc). The weight decay's
// default and meaning differ (Adam's L2 penalty, AdamW's decoupled decay).
#define SKEIN_ADAM_OPTIONS(X, WEIGHT_DECAY_DEFAULT, WEIGHT_DECAY_DOC)                                     \
  X(lr, number, "0.001", "Learning rate", SKEIN_RANGE("(0, )"))                                           \
  X(betas, number_list, "[0.9, 0.999]", "Coefficients of the running averages (two)", SKEIN_RANGE("[0, 1)")) \
  X(eps, number, "1e-8", "Term added to the denominator", SKEIN_RANGE("[0, )"))                           \
  X(weight_decay, number, WEIGHT_DECAY_DEFAULT, WEIGHT_DECAY_DOC, SKEIN_RANGE("[0, )"))                   \
  X(amsgrad, boolean, "false", "AMSGrad variant")
