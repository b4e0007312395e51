#pragma once
// The kit's version: helpers for plugin authors (skein/kit/*.hpp,
// libskein_kit), versioned apart from the plugin contract's API
// (skein/detail/version.hpp). Its major changes when a kit header or symbol
// changes incompatibly; the contract's API does not move with it.
// 1.1: option limits in SKEIN_MONITOR_OPTIONS and SKEIN_ADAM_OPTIONS (API 3.1),
//      adam_like_options, Monitor(options, key), Monitor::key_in.
#define SKEIN_KIT_VERSION_MAJOR 1
#define SKEIN_KIT_VERSION_MINOR 1
#define SKEIN_KIT_VERSION_PATCH 0
#define SKEIN_KIT_VERSION "1.1.0"
