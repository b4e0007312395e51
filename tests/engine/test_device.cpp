// The device part: the config's "device" resolved per process (device.hpp),
// and loss scaling for precision 16-mixed (loss_scaler.hpp). This machine
// has no GPU: CUDA is refused with one line, "auto" picks the CPU; on a
// machine with one, the same cases check what it picks.
#include <boost/test/unit_test.hpp>

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/optim/sgd.h>
#include <torch/version.h>

#include "skein/errors.hpp"
#include "skein/testing.hpp"
#include "skein/training/device/device.hpp"
#include "skein/training/device/loss_scaler.hpp"

using skein::testing::message_of;

namespace {

skein::RunInfo local_rank(int r) {
  skein::RunInfo run;
  run.local_rank = r;
  return run;
}

const int visible = static_cast<int>(torch::cuda::device_count());

}  // namespace

BOOST_AUTO_TEST_SUITE(device)

BOOST_AUTO_TEST_CASE(spellings_other_than_the_four_are_one_line_naming_the_value) {
  for (const char* good : {"auto", "cpu", "cuda", "cuda:0", "cuda:7"}) skein::core::check_device_spec(good);
  for (const char* bad : {"gpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cuda0", ""}) {
    const auto message = message_of<skein::ConfigError>([&] { skein::core::check_device_spec(bad); });
    BOOST_TEST(message == "device: must be auto, cpu, cuda or cuda:N, got '" + std::string(bad) + "'");
  }
}

BOOST_AUTO_TEST_CASE(cpu_is_the_cpu) {
  const auto chosen = skein::core::choose_device("cpu", local_rank(3));
  BOOST_TEST(chosen.device.str() == "cpu");
  BOOST_TEST(chosen.why == "cpu");
}

BOOST_AUTO_TEST_CASE(auto_takes_cuda_of_the_local_rank_when_there_is_one_else_the_cpu) {
  const auto chosen = skein::core::choose_device("auto", local_rank(1));
  if (visible == 0) {
    BOOST_TEST(chosen.device.str() == "cpu");
    BOOST_TEST(chosen.why.rfind("auto: ", 0) == 0, chosen.why);
  } else {
    BOOST_TEST(chosen.device.str() == "cuda:" + std::to_string(1 % visible));
    BOOST_TEST(chosen.why.find("LOCAL_RANK 1") != std::string::npos, chosen.why);
  }
}

BOOST_AUTO_TEST_CASE(cuda_without_a_device_is_one_line_naming_what_is_missing) {
  if (visible > 0) {
    BOOST_TEST(skein::core::choose_device("cuda", local_rank(0)).device.str() == "cuda:0");
    const auto beyond = "cuda:" + std::to_string(visible);
    const auto message = message_of<skein::ConfigError>([&] { skein::core::choose_device(beyond, local_rank(0)); });
    BOOST_TEST(message.find("device: '" + beyond + "' asked for, but ") == 0, message);
    return;
  }
  for (const char* spec : {"cuda", "cuda:1"}) {
    const auto message = message_of<skein::ConfigError>([&] { skein::core::choose_device(spec, local_rank(0)); });
    BOOST_TEST(message.find("device: '" + std::string(spec) + "' asked for, but ") == 0, message);
    BOOST_TEST(message.find("use \"auto\" or \"cpu\" to train on the CPU") != std::string::npos, message);
    BOOST_TEST(message.find('\n') == std::string::npos);
  }
}

// "auto" on the CPU says why a libtorch with CUDA found no device: above all
// a driver too old for the CUDA it was built with (it trained on the CPU
// without a word), with both versions.
BOOST_AUTO_TEST_CASE(a_driver_too_old_for_this_libtorchs_cuda_is_named_with_both_versions) {
  using skein::core::no_cuda_device_reason;
  auto has = [](const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; };
  const std::string old_driver = no_cuda_device_reason({13020, 12020}, nullptr);
  BOOST_TEST(has(old_driver, "the NVIDIA driver supports CUDA up to 12.2, this libtorch needs CUDA 13.2"), old_driver);
  BOOST_TEST(has(no_cuda_device_reason({13020, -1}, nullptr), "no NVIDIA driver was found"));
  // A driver of CUDA 13.0 runs libtorch's 13.2 runtime: then no device is visible.
  BOOST_TEST(has(no_cuda_device_reason({13020, 13000}, ""), "no CUDA device is visible (CUDA_VISIBLE_DEVICES='')"));
  BOOST_TEST(has(no_cuda_device_reason({12060, 12020}, nullptr), "no CUDA device is visible (the driver found none)"));
  // The driver's version comes from the driver library itself.
  BOOST_TEST(skein::core::cuda_versions(FAKE_LIBCUDA).driver == 12020);
  BOOST_TEST(skein::core::cuda_versions("/nonexistent/libcuda.so.1").driver == -1);
  // libtorch's own CUDA version, from its build summary: there exactly when it has CUDA.
  BOOST_TEST((skein::core::cuda_versions().libtorch > 0) == at::globalContext().hasCUDART());
}

BOOST_AUTO_TEST_CASE(a_cpu_run_has_no_device_generator_state) {
  skein::RunInfo run;
  run.device = "cpu";
  BOOST_TEST(skein::core::device_generator_state(run).empty());
  skein::core::set_device_generator_state(run, torch::zeros({4}, torch::kUInt8));  // nothing to do, no error
}

BOOST_AUTO_TEST_CASE(disabled_loss_scaling_changes_nothing) {
  skein::core::LossScaler off(false, torch::kCPU);
  const auto loss = torch::tensor(2.5);
  BOOST_TEST(off.scale(loss).item<double>() == 2.5);
  auto w = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, 0.1);
  (w.sum() * 3).backward();
  BOOST_TEST(off.unscale(sgd));
  BOOST_TEST(w.grad()[0].item<double>() == 3.0);
  BOOST_TEST(off.current_scale() == 1.0);
}

// libtorch's scaler kernels have a CPU version since 2.3 (PyTorch's
// GradScaler("cpu")); on CUDA they are tested by scripts/gpu-check.sh.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
BOOST_AUTO_TEST_CASE(loss_scaling_unscales_skips_non_finite_steps_and_backs_off) {
  skein::core::LossScaler::Options o;
  o.growth_interval = 2;
  skein::core::LossScaler scaler(true, torch::kCPU, o);
  auto w = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, 0.1);
  const auto scaled = scaler.scale(w.sum() * 3);
  BOOST_TEST(scaled.item<double>() == 6.0 * 65536);
  scaled.backward();
  BOOST_TEST(scaler.unscale(sgd));
  BOOST_TEST(w.grad()[0].item<double>() == 3.0);  // the true gradient again
  scaler.update();
  BOOST_TEST(scaler.current_scale() == 65536.0);

  sgd.zero_grad();
  (w * std::numeric_limits<float>::infinity()).sum().backward();
  BOOST_TEST(!scaler.unscale(sgd));  // the step is to be skipped
  scaler.update();
  BOOST_TEST(scaler.current_scale() == 32768.0);
  BOOST_TEST(scaler.take_skipped() == 1);
  BOOST_TEST(scaler.take_skipped() == 0);

  for (int good = 0; good < 2; ++good) {  // growth_interval good steps in a row double it
    sgd.zero_grad();
    scaler.scale(w.sum()).backward();
    BOOST_TEST(scaler.unscale(sgd));
    scaler.update();
  }
  BOOST_TEST(scaler.current_scale() == 65536.0);

  // What a checkpoint keeps of it continues in another scaler (a resume).
  skein::core::LossScaler resumed(true, torch::kCPU, o);
  resumed.restore(scaler.current_scale() / 4, 1);
  BOOST_TEST(resumed.current_scale() == 16384.0);
  BOOST_TEST(resumed.growth_tracker() == 1);
  sgd.zero_grad();
  resumed.scale(w.sum()).backward();
  BOOST_TEST(resumed.unscale(sgd));
  resumed.update();  // the second good step in a row: doubled
  BOOST_TEST(resumed.current_scale() == 32768.0);
}
#endif

BOOST_AUTO_TEST_CASE(a_disabled_scaler_keeps_no_scale_to_restore) {
  skein::core::LossScaler off(false, torch::kCPU);
  off.restore(8.0, 3);
  BOOST_TEST(off.current_scale() == 1.0);
  BOOST_TEST(off.growth_tracker() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
