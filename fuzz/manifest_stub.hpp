#pragma once
// For fuzz_config: a bundled plugin's SKEIN_PLUGIN declaration, compiled
// alone, yields a library holding only that plugin's manifest section (no
// class, no factory, no torch). The registry discovers plugins by reading that
// section without loading anything, so these stand in for the real plugins
// when configs are resolved. fuzz/CMakeLists.txt generates one source per
// plugin: this header, then the plugin file from its SKEIN_PLUGIN( on.
#include "skein/plugin.hpp"

#undef SKEIN_PLUGIN
// The manifest half of skein/plugin.hpp's SKEIN_PLUGIN (same section, same
// fields); CLASS is not needed.
#define SKEIN_PLUGIN(CLASS, KIND, NAME, VERSION, DESCRIPTION, ...)                        \
  namespace {                                                                             \
  constexpr ::skein::OptionSpec skein_plugin_options_[] = {                               \
      __VA_ARGS__ __VA_OPT__(, )::skein::OptionSpec{nullptr, ::skein::OptionType::object,  \
                                                    nullptr, nullptr}};                   \
  constexpr ::skein::manifest::Fields skein_manifest_fields_ = {                          \
      SKEIN_STR(SKEIN_API_MAJOR), SKEIN_STR(SKEIN_API_MINOR), NAME, #KIND, VERSION,      \
      DESCRIPTION, SKEIN_BUILD_FINGERPRINT, skein_plugin_options_,                        \
      sizeof(skein_plugin_options_) / sizeof(::skein::OptionSpec) - 1};                   \
  __attribute__((section(SKEIN_MANIFEST_SECTION), used)) constexpr auto skein_manifest_ = \
      ::skein::manifest::build<::skein::manifest::length(skein_manifest_fields_)>(        \
          skein_manifest_fields_);                                                        \
  }
