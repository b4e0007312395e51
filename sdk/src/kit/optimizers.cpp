#include "skein/kit/optimizers.hpp"

#include <cmath>

namespace skein {

double require_positive(const Options& options, const std::string& key, double value) {
  if (!(std::isfinite(value) && value > 0)) options.fail(key, "must be positive and finite");
  return value;
}

double require_nonnegative(const Options& options, const std::string& key, double value) {
  if (!(std::isfinite(value) && value >= 0)) options.fail(key, "must be finite and >= 0");
  return value;
}

double read_positive(const Options& options, const std::string& key) {
  return require_positive(options, key, options.get_number(key));
}

double read_nonnegative(const Options& options, const std::string& key) {
  return require_nonnegative(options, key, options.get_number(key));
}

}  // namespace skein
