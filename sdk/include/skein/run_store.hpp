#pragma once
// The run's rendezvous store: a c10d FileStore (one machine, our launcher) or
// TCPStore (several machines, or an external launcher), shared by every
// plugin that needs to talk across ranks (history sync, process groups).
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace skein {

struct RunStore {
  enum class Kind { none, file, tcp };
  Kind kind = Kind::none;
  c10::intrusive_ptr<c10d::Store> store;  // null when kind == none
  explicit operator bool() const { return static_cast<bool>(store); }
};

}  // namespace skein
