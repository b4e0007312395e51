#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace skein {

// Facts about this process's place in the run, known before plugins are created.
// Ranks follow torchrun's environment variables (RANK, WORLD_SIZE, ...).
struct RunInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr;  // MASTER_ADDR, empty outside a distributed run
  int master_port = 0;      // MASTER_PORT
  bool multi_node = false;  // the run spans machines (ranks beyond LOCAL_WORLD_SIZE)
  std::string run_id;       // the same on every rank of one run
  double timeout_s = 300;   // bound of every store wait and collective
  std::uint64_t seed = 0;
  std::string run_dir;
  bool is_main() const { return rank == 0; }
};

// What a dataset provides, handed to the model plugin so it can size itself.
struct DataInfo {
  std::vector<std::int64_t> input_shape;  // per sample, e.g. {1, 28, 28}
  // Classes of a classification task; for other tasks, the width of the
  // model output per sample (e.g. 1 for a single regression target).
  std::int64_t num_classes = 0;
};

}  // namespace skein
