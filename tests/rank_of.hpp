#pragma once
// A RunInfo for rank `rank` of `world_size` processes, the rest defaults:
// for tests of what ranks decide or split among themselves.
#include "skein/run.hpp"

namespace test {

inline skein::RunInfo rank_of(int rank, int world_size) {
  skein::RunInfo run;
  run.rank = rank;
  run.world_size = world_size;
  return run;
}

}  // namespace test
