#pragma once
// One stretch of an epoch's training pass on one world size. A pass that a
// resume continued on another number of ranks is a list of them (the first
// the sampler's, each later one the rest of the one before re-sharded), so
// that any chain of resumes knows which samples are left.
namespace skein::core {

struct PassSegment {
  int world_size = 1;     // ranks that trained this stretch
  long batches_done = 0;  // train batches each of them completed in it
};

}  // namespace skein::core
