#pragma once
// What the tests of .pt2 programs share (test_pt2, test_zoo): a workspace
// that runs a Python script of tests/python with the build's torch and
// skein in a private network, the tensors of a torch.save file, and a
// comparison within a relative tolerance.
#include <map>
#include <string>

#include <boost/test/unit_test.hpp>
#include <torch/torch.h>

#include "skein/io/torch_file.hpp"
#include "test_support.hpp"

namespace test {

struct Pt2Workspace : Workspace {
  explicit Pt2Workspace(std::string script) : script_(std::move(script)) {}
  // tests/python/SCRIPT ARGS with the Python whose torch the build uses.
  CommandResult py(const std::string& args, int timeout_s = 600) const {
    return run(std::string(SKEIN_TEST_PYTHON) + " " SKEIN_SOURCE_DIR "/tests/python/" + script_ + " " + args, timeout_s);
  }
  CommandResult skein(const std::string& args) const {
    return run(in_private_network(std::string(SKEIN_EXE) + " " + args), 300);
  }

 private:
  std::string script_;
};

// The dict a torch.save file holds, by key (tensors only).
inline std::map<std::string, torch::Tensor> tensors_of(const std::string& path) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& entry : skein::read_torch_save(path).toGenericDict())
    if (entry.value().isTensor()) out[entry.key().toStringRef()] = entry.value().toTensor();
  return out;
}

// `got` equals `want` within `rel` of want's largest magnitude (at least
// 1e-2, so that values near zero are not held to nothing); integers exactly.
inline void expect_close(const torch::Tensor& got, const torch::Tensor& want, const std::string& what, double rel = 1e-5) {
  BOOST_TEST(got.sizes() == want.sizes(), what << ": shape " << got.sizes() << " vs " << want.sizes());
  if (got.sizes() != want.sizes()) return;
  if (!want.is_floating_point()) {
    BOOST_TEST(torch::equal(got.to(want.scalar_type()), want), what << ": " << got << " vs " << want);
    return;
  }
  const double diff = (got.to(torch::kDouble) - want.to(torch::kDouble)).abs().max().item<double>();
  const double scale = want.abs().max().item<double>();
  BOOST_TEST(diff <= rel * std::max(scale, 1e-2), what << ": max difference " << diff << " for values up to " << scale);
}

}  // namespace test
