#pragma once
// SDK API version and the build fingerprint a plugin must share with the host.
//
// API rule: a plugin is accepted when its major equals the host's and its
// minor is <= the host's minor. The fingerprint (SDK version, libtorch version,
// libstdc++ dual-ABI flag, compiler family and major) must match exactly,
// because plugins exchange C++ objects (torch tensors, std::string) with the host.
#include <torch/csrc/api/include/torch/version.h>

#include "skein/detail/export.hpp"

// 3.9: skein::BufferSync (skein/parallel.hpp; a new optional base, no vtable changed).
// 3.8: skein::RegroupingParallel and skein::WorldChangeListener (skein/parallel.hpp and skein/run.hpp;
//      new optional bases, no vtable changed): live recovery from a lost rank.
// 3.7: TrainContext::settings() (a virtual at its end: plugins call it, only the
//      host implements TrainContext), skein::RunSettings and skein::run_key (the
//      config's top-level keys by name), in skein/run.hpp.
// 3.6: skein::ShardedInSpans and skein::ParameterSpan (a new optional base of
//      parallel wrappers; no vtable changed): parameters owned in parts.
// 3.5: skein::ElementwiseOptimizer (a new optional base of optimizer factories; no
//      vtable changed): large parameters stepped in pieces under a sharded optimizer.
// 3.4: History keeps the order keys were recorded in (a member at its end:
//      plugins get a History by reference only), History::from_json of an
//      nlohmann::ordered_json and History::first_epochs; skein::ScaledInputs
//      (a new optional base of datasets; no vtable changed): the scaling a
//      dataset applies to its raw inputs, which export and predict apply too.
// 3.3: skein::ShardedOptimizer (a new optional base of parallel wrappers; no vtable
//      changed); class_ids_of (skein/loss.hpp) and check_held_out_shape (skein/dataset.hpp)
//      moved in from the kit; the file formats the host and plugins share are
//      the contract's skein/io/ (libskein_io), no longer the kit's.
// 3.2: RunInfo::device (a new field at its end), the device the run trains on.
// 3.1: options declare their limits: OptionType::choice, OptionSpec::choices and
//      ::range (new fields at its end: the host reads a plugin's options from its
//      manifest, never from its OptionSpec array), SKEIN_CHOICES, SKEIN_RANGE,
//      SKEIN_CHOICE_OPTION, SKEIN_OPTIONS_STRUCT's names.
// 3.0: the plugin contract alone under skein/; helpers moved to skein/kit/
//      (libskein_kit, versioned on its own: skein/kit/kit_version.hpp), host-only
//      names to the host; run_info.hpp + run_output.hpp are skein/run.hpp,
//      warn() is in skein/errors.hpp; ClassificationLoss, ElementwiseLoss,
//      LibtorchOptimizer and the dataset helpers moved to the kit.
// 2.5: skein::OptionError (a ConfigError naming its option as data).
// 2.4: skein::EpochScorer, skein::TestReporter, skein::OwnValidation (new optional bases).
// 2.3: skein::EpochReporter (a new optional base of callbacks; no vtable of 2.2 changed).
// 2.2: skein::run_output_dir (a directory recorded as a container of the plugin's files).
// 2.1: skein::ParallelState (a new optional base; no vtable of 2.0 changed).
// 2.0: Callback::on_exception and SampleSource::targets_in_memory (vtable changes). 1.x: 1.1 plugin kinds loss
// and optimizer; 1.2 skein/run_output.hpp.
#define SKEIN_API_MAJOR 3
#define SKEIN_API_MINOR 9
#define SKEIN_SDK_VERSION "0.1.0"

#define SKEIN_STR_(x) #x
#define SKEIN_STR(x) SKEIN_STR_(x)

#if defined(__clang__)
#define SKEIN_COMPILER_ID "clang-" SKEIN_STR(__clang_major__)
#elif defined(__GNUC__)
#define SKEIN_COMPILER_ID "gcc-" SKEIN_STR(__GNUC__)
#else
#define SKEIN_COMPILER_ID "unknown"
#endif

#define SKEIN_BUILD_FINGERPRINT                                          \
  "sdk=" SKEIN_SDK_VERSION ";torch=" SKEIN_STR(TORCH_VERSION_MAJOR) "." \
  SKEIN_STR(TORCH_VERSION_MINOR) ";cxx11abi=" SKEIN_STR(_GLIBCXX_USE_CXX11_ABI) \
  ";compiler=" SKEIN_COMPILER_ID

namespace skein {
// The fingerprint libskein_sdk itself was built with (the host's).
SKEIN_EXPORT const char* host_fingerprint();
}  // namespace skein
