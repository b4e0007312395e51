#pragma once
// For fuzz_config: a bundled plugin's SKEIN_PLUGIN declaration, compiled
// alone, yields a library holding only that plugin's manifest section (no
// class, no factory, no torch). The registry discovers plugins by reading that
// section without loading anything, so these stand in for the real plugins
// when configs are resolved. fuzz/CMakeLists.txt generates one source per
// plugin: this header, then the plugin file from its SKEIN_PLUGIN( on.
#include "skein/kit/option_lists.hpp"  // option lists plugins share (torch-free)
#include "skein/plugin.hpp"

#undef SKEIN_PLUGIN
// Only the manifest half of skein/plugin.hpp's SKEIN_PLUGIN; CLASS is not needed.
#define SKEIN_PLUGIN(CLASS, KIND, NAME, VERSION, DESCRIPTION, ...) \
  namespace {                                                      \
  SKEIN_PLUGIN_MANIFEST(KIND, NAME, VERSION, DESCRIPTION, __VA_ARGS__) \
  }

// ddp's texts name the distributed backends its libtorch has
// (skein/torch_compat/process_group.hpp, which needs torch): the CPU's here.
#ifndef SKEIN_DISTRIBUTED_BACKENDS
#define SKEIN_DISTRIBUTED_BACKENDS "gloo"
#endif
