#pragma once
// nlohmann::json with default visibility: Skein builds with hidden visibility,
// and JSON values cross library boundaries in exported classes (History,
// Options), so its template instantiations must not be hidden.
#pragma GCC visibility push(default)
#include <nlohmann/json.hpp>
#pragma GCC visibility pop
