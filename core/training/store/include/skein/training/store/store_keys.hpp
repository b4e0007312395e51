#pragma once
// Every key skein writes into a run's c10d store: the one table of them. All
// start with "skein/"; those of one attempt of a run carry its run id, so the
// attempts of a restarted run never read each other's values.
#include <cstdint>
#include <string>

namespace skein::store_key {

// The run.
inline std::string run_id() { return "skein/run_id"; }    // agreed when the environment gives none
inline std::string run_dir() { return "skein/run_dir"; }  // chosen by rank 0 when not given
// Rank r's TORCHELASTIC_RESTART_COUNT, gathered by rank 0 when an external
// agent (torchrun) restarted the run; rank 0's decision from them, the
// attempt and whether it resumes: {"attempt": "N", "resume": bool}.
inline std::string agent_attempt(int rank) { return "skein/agent_attempt/" + std::to_string(rank); }
inline std::string agent_restart() { return "skein/agent_restart"; }
// Rank r's history digest, compared at the end of the run.
inline std::string digest(const std::string& run, int rank) {
  return "skein/digest/" + run + "/" + std::to_string(rank);
}
// Rank r's part of checkpoint `name` of `epoch` ("rng": its generator state,
// "parallel": the parallel wrapper's state), read by rank 0.
inline std::string checkpoint_part(const std::string& run, const std::string& name, long epoch,
                                   const std::string& part, int rank) {
  return "skein/ckpt/" + run + "/" + name + "/" + std::to_string(epoch) + "/" + part + "/" + std::to_string(rank);
}

// Every rank's name for a session's `call`-th save_checkpoint (and whether
// it was refused there), compared before the collective write.
inline std::string session_checkpoint_name(const std::string& run, long call) {
  return "skein/session_save/" + run + "/" + std::to_string(call);
}

// Live recovery's agreements (quorum.hpp) in `scope` (the run id): for
// generation g, each survivor's arrival ("alive/<id>", "arrived") and the
// decision ("members"); the ids reported lost; the replacements' count, and
// the generation that took replacement `id` in.
inline std::string quorum(const std::string& scope, std::int64_t generation, const std::string& name) {
  return "skein/quorum/" + scope + "/" + std::to_string(generation) + "/" + name;
}
inline std::string quorum_joiners(const std::string& scope) { return "skein/quorum/" + scope + "/joiners"; }
inline std::string quorum_lost(const std::string& scope, int id) {
  return "skein/quorum/" + scope + "/lost/" + std::to_string(id);
}
inline std::string quorum_taken_in(const std::string& scope, int id) {
  return "skein/quorum/" + scope + "/taken_in/" + std::to_string(id);
}
inline std::string quorum_closed(const std::string& scope) { return "skein/quorum/" + scope + "/closed"; }
// The engine's live recovery (live_recovery.hpp) in run `run`: that the run
// trains with it, the recoveries (a count and each one's record) and the
// world size the run ended with (for run.json).
inline std::string live_recovery_on(const std::string& run) { return "skein/live/" + run + "/on"; }
inline std::string live_recoveries(const std::string& run) { return "skein/live/" + run + "/recoveries"; }
inline std::string live_recovery(const std::string& run, std::int64_t n) {
  return "skein/live/" + run + "/recovery/" + std::to_string(n);
}
inline std::string live_final_world(const std::string& run) { return "skein/live/" + run + "/final_world"; }

// The launchers of a multi-node run (their own rendezvous store).
inline std::string launcher_max_restarts() { return "skein/launcher/max_restarts"; }
inline std::string launcher_attempt(int number) { return "skein/launcher/attempt" + std::to_string(number) + "/"; }
inline std::string launcher_run_dir() { return "skein/launcher/run_dir"; }

// Plugins keep keys of their own under "skein/<kind>/" (the history plugins
// in plugins/history/store_common/store_history.hpp, ddp in its source).

}  // namespace skein::store_key
