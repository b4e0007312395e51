#pragma once
// libtorch's versions differ in how a process group is made; this header is
// the one place that knows how (plugins include it, never the c10d classes'
// constructors directly).
//   1.13: c10d::ProcessGroupGloo *is* a c10d::ProcessGroup.
//   2.x:  c10d::ProcessGroupGloo is a c10d::Backend; a c10d::ProcessGroup
//         (store, rank, size) dispatches each collective to the backend set
//         for the device type of its tensors (CPU: Gloo; CUDA: NCCL).
#include <chrono>
#include <string>
#include <type_traits>
#include <utility>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/api/include/torch/version.h>

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
// Gloo with `options` (devices, timeout).
inline c10::intrusive_ptr<c10d::ProcessGroup> make_gloo_group(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> options) {
#if TORCH_VERSION_MAJOR < 2
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, std::move(options));
#else
  using Group = c10d::ProcessGroup;
  auto group = detail::make_dispatching_group<Group>(store, rank, size, options->timeout);
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, std::move(options));
  group->setBackend(c10::DeviceType::CPU, Group::BackendType::GLOO, gloo);
  group->setDefaultBackend(Group::BackendType::GLOO);
  return group;
#endif
}

}  // namespace skein::torch_compat
