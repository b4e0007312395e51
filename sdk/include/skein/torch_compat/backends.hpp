#pragma once
// Which c10d backends the libtorch Skein is built against has, without
// including them. USE_C10D_NCCL is set by libtorch's CMake targets when it
// was built with NCCL (PyPI's CUDA wheels); Skein makes NCCL process groups
// through libtorch 2.x's dispatching ProcessGroup only (Debian's 1.13 is
// CPU-only).
#include <torch/csrc/api/include/torch/version.h>

#if defined(USE_C10D_NCCL) && TORCH_VERSION_MAJOR >= 2
#define SKEIN_TORCH_NCCL 1
#define SKEIN_DISTRIBUTED_BACKENDS "gloo, nccl"
#else
#define SKEIN_TORCH_NCCL 0
#define SKEIN_DISTRIBUTED_BACKENDS "gloo"
#endif
