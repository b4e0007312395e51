#pragma once
// Named points where a test injects a fault (SIGKILL, _exit) in the middle
// of an operation that must survive one, such as writing a checkpoint. Here
// the function does nothing and reads nothing; the fault-injection library
// of the tests (tests/tools/fault_injection.cpp), put first with LD_PRELOAD,
// replaces it. A C symbol, called across the library boundary, so that the
// dynamic linker can interpose it.
#include "skein/detail/export.hpp"

extern "C" SKEIN_EXPORT void skein_fault_point(const char* name, long value);
