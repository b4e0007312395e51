#pragma once
// Loading an optimizer's archive (optimizer.pt) written by either libtorch;
// the one place that knows how their per-parameter keys differ.
//   1.13: states are keyed by the parameter's address as a stream prints it
//         ("0x5638cf75c290"), and loads match those strings.
//   2.x:  keys are the address in decimal, and loads read them back with
//         std::stoull, which reads "0x..." as 0: every state of a 1.13
//         archive lands on the first parameter, the others get none, and
//         the next step dereferences a null state (SIGSEGV in SGD::step).
// Under 2.x an archive with 1.13's keys is copied with its keys in decimal
// before libtorch reads it, so a run checkpointed by Debian's libtorch 1.13
// resumes under PyPI's torch 2.x. (2.x's own keys load under 1.13 as they are:
// 1.13 matches keys as strings, whatever their form.)
#include <cstdint>
#include <sstream>
#include <string>

#include <torch/csrc/api/include/torch/version.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>

namespace skein::torch_compat {

namespace detail {

// "0x5638cf75c290" -> "94787128542864"; anything else unchanged.
inline std::string decimal_address(const std::string& key) {
  if (key.size() < 3 || key[0] != '0' || key[1] != 'x') return key;
  std::size_t used = 0;
  const unsigned long long value = std::stoull(key.substr(2), &used, 16);
  return used == key.size() - 2 ? std::to_string(value) : key;
}

// `from` into `to`, every key and every string value that is a 1.13 address
// rewritten in decimal (the states' keys and the groups' "params/i" lists).
inline void copy_with_decimal_addresses(torch::serialize::InputArchive& from, torch::serialize::OutputArchive& to) {
  for (const std::string& key : from.keys()) {
    const std::string renamed = decimal_address(key);
    torch::serialize::InputArchive child;
    if (from.try_read(key, child)) {
      torch::serialize::OutputArchive copied;
      copy_with_decimal_addresses(child, copied);
      to.write(renamed, copied);
      continue;
    }
    c10::IValue value;
    from.read(key, value);
    if (value.isString()) value = c10::IValue(decimal_address(value.toStringRef()));
    to.write(renamed, value);
  }
}

inline bool has_13_state_keys(torch::serialize::InputArchive& archive) {
  torch::serialize::InputArchive states;
  if (!archive.try_read("state", states)) return false;
  for (const std::string& key : states.keys())
    if (key.rfind("0x", 0) == 0) return true;
  return false;
}

}  // namespace detail

// optimizer.load(archive), for an archive written by either libtorch.
inline void load_optimizer(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive) {
#if TORCH_VERSION_MAJOR >= 2
  if (detail::has_13_state_keys(archive)) {
    torch::serialize::OutputArchive rewritten;
    detail::copy_with_decimal_addresses(archive, rewritten);
    std::stringstream bytes;
    rewritten.save_to(bytes);
    torch::serialize::InputArchive reread;
    reread.load_from(bytes);
    optimizer.load(reread);
    return;
  }
#endif
  optimizer.load(archive);
}

}  // namespace skein::torch_compat
