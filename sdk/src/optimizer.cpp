#include "skein/optimizer.hpp"

#include <cmath>

namespace skein {

double read_positive(const Options& options, const std::string& key) {
  const double v = options.get_number(key);
  if (!(std::isfinite(v) && v > 0)) options.fail(key, "must be positive and finite");
  return v;
}

double read_nonnegative(const Options& options, const std::string& key) {
  const double v = options.get_number(key);
  if (!(std::isfinite(v) && v >= 0)) options.fail(key, "must be finite and >= 0");
  return v;
}

}  // namespace skein
