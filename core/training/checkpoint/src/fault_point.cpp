#include "skein/training/checkpoint/fault_point.hpp"

// Production: no fault. Kept out of line (and not inlined: the symbol is
// exported and interposable) so that a preloaded definition takes its place.
extern "C" void skein_fault_point(const char*, long) {}
