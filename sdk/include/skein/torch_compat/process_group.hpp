#pragma once
// libtorch's versions differ in how a process group is made; this header is
// the one place that knows how (plugins include it, never the c10d classes'
// constructors directly).
//   1.13: c10d::ProcessGroupGloo *is* a c10d::ProcessGroup.
//   2.x:  c10d::ProcessGroupGloo is a c10d::Backend; a c10d::ProcessGroup
//         (store, rank, size) dispatches each collective to the backend set
//         for the device type of its tensors (CPU: Gloo; CUDA: NCCL).
#include <chrono>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/api/include/torch/version.h>

#include "skein/torch_compat/backends.hpp"
#if SKEIN_TORCH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace skein::torch_compat {

#if TORCH_VERSION_MAJOR >= 2
namespace detail {
// A ProcessGroup that dispatches to backends: (store, rank, size) in the
// libtorch 2.x releases since its Options argument went, (store, rank, size,
// options) before. A template, so that only the form this libtorch has is compiled.
template <class Group>
c10::intrusive_ptr<Group> make_dispatching_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                 std::chrono::milliseconds timeout) {
  if constexpr (std::is_constructible_v<Group, c10::intrusive_ptr<c10d::Store>, int, int>)
    return c10::make_intrusive<Group>(store, rank, size);
  else
    return c10::make_intrusive<Group>(store, rank, size, c10::make_intrusive<typename Group::Options>("gloo", timeout));
}
}  // namespace detail
#endif

// A process group of `size` ranks over `store` whose CPU collectives run on
// Gloo with `gloo` (devices, timeout). Collectives of CUDA tensors run on
// NCCL when `nccl` is set (only where SKEIN_TORCH_NCCL; its keys under
// "nccl/" in the store), else on Gloo too.
inline c10::intrusive_ptr<c10d::ProcessGroup> make_process_group(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> gloo, bool nccl = false) {
#if TORCH_VERSION_MAJOR < 2
  if (nccl) throw std::invalid_argument("NCCL is not compiled into this libtorch");
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, std::move(gloo));
#else
  using Group = c10d::ProcessGroup;
  const auto timeout = gloo->timeout;
  auto group = detail::make_dispatching_group<Group>(store, rank, size, timeout);
  auto gloo_backend = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, std::move(gloo));
  group->setBackend(c10::DeviceType::CPU, Group::BackendType::GLOO, gloo_backend);
  if (nccl) {
#if SKEIN_TORCH_NCCL
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    auto nccl_store = c10::make_intrusive<c10d::PrefixStore>("nccl/", store);
    auto nccl_backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(nccl_store, rank, size, options);
    group->setBackend(c10::DeviceType::CUDA, Group::BackendType::NCCL, nccl_backend);
#else
    throw std::invalid_argument("NCCL is not compiled into this libtorch");
#endif
  } else {
    group->setBackend(c10::DeviceType::CUDA, Group::BackendType::GLOO, gloo_backend);
  }
  group->setDefaultBackend(Group::BackendType::GLOO);
  return group;
#endif
}

}  // namespace skein::torch_compat
