#pragma once
// c10::Allocator's interface: allocate() was const until libtorch 2.3, which
// also added the pure virtual copy_data(). An allocator written for both:
//   c10::DataPtr allocate(size_t n) SKEIN_ALLOCATE_CONST override;
//   #if SKEIN_ALLOCATOR_HAS_COPY_DATA ... copy_data(...) const override #endif
#include <torch/csrc/api/include/torch/version.h>

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define SKEIN_ALLOCATE_CONST
#define SKEIN_ALLOCATOR_HAS_COPY_DATA 1
#else
#define SKEIN_ALLOCATE_CONST const
#define SKEIN_ALLOCATOR_HAS_COPY_DATA 0
#endif
