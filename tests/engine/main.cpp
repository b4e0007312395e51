// The engine parts' unit tests (one file per part: test_<part>.cpp, each a
// suite of its name; CTest runs each suite as its own test).
#define BOOST_TEST_MODULE engine_parts
#include <boost/test/unit_test.hpp>

#include "engine_fixture.hpp"

namespace engine_test {

std::vector<double> logged(const skein::BatchLog& log, const std::string& key) {
  std::vector<double> values;
  for (const auto& cell : log.cells())
    if (log.keys()[cell.key] == key) values.push_back(cell.value);
  return values;
}

}  // namespace engine_test
