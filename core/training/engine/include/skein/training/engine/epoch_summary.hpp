#pragma once
// An epoch's values from its (merged) batch records, and the "<key>_best"
// marks of every value that beats all earlier epochs' ones.
#include "skein/detail/export.hpp"
#include "skein/history.hpp"

namespace skein::core {

// For each phase (train, valid), every key of the last epoch's batch records
// averaged weighted by the batch sizes (the mean over all samples of all
// ranks), each marked best or not; then the epoch's duration ("dur").
SKEIN_EXPORT void summarize_epoch(History& history, double seconds);
// Marks the last epoch's train_* and valid_* values that have no mark yet
// (epoch scores an EpochScorer recorded) as the batch values are marked.
SKEIN_EXPORT void mark_best_of_epoch_scores(History& history);

}  // namespace skein::core
