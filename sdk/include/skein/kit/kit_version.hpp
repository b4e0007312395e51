#pragma once
// The kit's version: helpers for plugin authors (skein/kit/*.hpp,
// libskein_kit), versioned apart from the plugin contract's API
// (skein/detail/version.hpp). Its major changes when a kit header or symbol
// changes incompatibly; the contract's API does not move with it.
// 1.1: option limits in SKEIN_MONITOR_OPTIONS and SKEIN_ADAM_OPTIONS (API 3.1),
//      adam_like_options, Monitor(options, key), Monitor::key_in.
// 2.0: the file formats moved to the contract's skein/io/ (libskein_io):
//      atomic_file, index_tensor, input_file, memory, npy, quoted,
//      scripted_model, script_operators, store, torch_file; class_ids_of to
//      skein/loss.hpp, check_held_out_shape to skein/dataset.hpp; the harness
//      is skein/testing.hpp (libskein_testing). kit/version.hpp is
//      kit/kit_version.hpp.
// 2.1: ElementwiseStateOf: LibtorchOptimizer of SGD, Adam, AdamW, RMSprop or
//      Adagrad is a skein::ElementwiseOptimizer (API 3.5).
// 3.0: the harness's FakeRun::train_batch runs a batch's hooks around the
//      loss it is given and computes nothing (it was a train step of its own,
//      a second copy of the engine's); a test of a step runs EngineRun's
//      RankEngine::train_step, the engine's own.
#define SKEIN_KIT_VERSION_MAJOR 3
#define SKEIN_KIT_VERSION_MINOR 0
#define SKEIN_KIT_VERSION_PATCH 0
#define SKEIN_KIT_VERSION "3.0.0"
