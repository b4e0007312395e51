#include "guard.hpp"

#include <exception>
#include <iostream>

#include <boost/program_options/errors.hpp>

#include "skein/host/exit_codes.hpp"
#include "skein/host/failure_report.hpp"
#include "skein/errors.hpp"

namespace skein::launcher {

int fail(int code, const std::string& message) {
  // A worker started by `skein train` reports to its launcher, whose summary
  // line carries the error. A config error is the same on every rank: the
  // launcher's line is then the only one. Other errors are printed here too,
  // each rank's own (the root cause and what it caused in its peers).
  const bool launcher_has_it = skein::core::report_failure(message, code);
  if (!(launcher_has_it && code == exit_code::kConfig)) std::cerr << "skein: error: " << core::failure_line(message) << std::endl;
  return code;
}

int run_guarded(const std::string& command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const boost::program_options::error& e) {
    return fail(exit_code::kConfig, std::string(e.what()) + " (see skein " + command + " --help)");
  } catch (const std::exception& e) {
    return fail(core::exit_code_for(e), e.what());
  } catch (...) {
    return fail(exit_code::kFailure, "unknown failure");
  }
}

}  // namespace skein::launcher
