#pragma once
// Symbol visibility. Everything in Skein builds with -fvisibility=hidden; the
// SDK's interface classes and the plugin entry points are the only exports,
// so every interface has exactly one vtable and typeinfo (in libskein_sdk).
#define SKEIN_EXPORT __attribute__((visibility("default")))
