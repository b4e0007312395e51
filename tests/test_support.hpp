#pragma once
// Helpers shared by the test programs.
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <boost/filesystem.hpp>

#include "idx_test_files.hpp"
#include "skein/detail/json.hpp"
#include "skein/testing.hpp"

#include "skein/host/plugin_registry.hpp"
#include "skein/dataset.hpp"
#include "skein/detail/version.hpp"

// The host's plugin API as messages print it: "3.2".
#define SKEIN_HOST_API SKEIN_STR(SKEIN_API_MAJOR) "." SKEIN_STR(SKEIN_API_MINOR)

namespace test {

// Whether this program was built with AddressSanitizer (whose malloc and
// shadow memory change what memory limits and allocator tests can expect).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// A fresh directory under the system temp dir, removed on destruction.
using TempDir = skein::testing::TempDir;  // the SDK harness's

// A temp dir for a test's configs and run directories.
struct Workspace {
  TempDir tmp;
  int runs = 0;  // configs written so far
  // Writes `cfg` to a new file c<N>.json; returns its path.
  std::string write_config(const nlohmann::json& cfg);
  std::string dir(const std::string& name) const { return tmp.str(name); }
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// A Workspace whose `skein(ARGS, ENV)` runs `ENV skein train ARGS` with the
// test plugins, inside a private network namespace (in_private_network),
// bounded at 240 s.
struct TrainWorkspace : Workspace {
  CommandResult skein(const std::string& args, const std::string& env = "");
};
// Runs a shell command line with stdout/stderr captured (bounded by `timeout -k`).
CommandResult run(const std::string& command_line, int timeout_seconds = 240);

// `sh -c COMMAND`, inside a private network namespace with only loopback up
// (unshare -rn) when this machine allows it, so that ports opened by the
// command are reachable from nowhere else.
std::string in_private_network(const std::string& command);
// Shell lines that make two "hosts": network namespaces host0 and host1
// joined by a veth pair, at <subnet>.1 and <subnet>.2 ("10.213.7"), each
// line exiting 3 where the machine allows none. For a script run by
// `unshare -nm --propagation private sh SCRIPT` (the host stays untouched).
std::string two_hosts_setup(const std::string& subnet);
bool private_network_available();
// An `env ...` prefix for a command: the fault-injection library
// (tests/tools/fault_injection.cpp) preloaded, and `fault` set, e.g.
// "SKEIN_TEST_CRASH_IN_CHECKPOINT=3". Under ASan, the preload is allowed to
// come before the sanitizer's runtime (it allocates nothing).
std::string with_fault(const std::string& fault);
// An `env ...` prefix for a program that is not instrumented but loads
// Skein's libraries (Python's ctypes, torchrun's workers): under ASan, the
// sanitizer's runtime preloaded (it must come first in a process's library
// list) and leak checks off (the interpreter's allocations are not
// Skein's); "" in other builds.
std::string for_uninstrumented_program();
// A TCP port free on 127.0.0.1 right now.
int free_port();

// A registry of the bundled plugins plus the test plugins.
void load_test_plugins(skein::core::PluginRegistry& registry);

// The message of the E that `f` throws, or "" when it returns (the SDK's harness's).
using skein::testing::message_of;

// IDX test files (plugins/dataset/idx/idx_test_files.hpp).
using idx_test::write_idx;
using idx_test::write_tiny_mnist;

void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);
nlohmann::json load_json(const std::string& path);

using skein::testing::contains;  // the SDK harness's
// Exactly one error line on stderr, starting "skein: error: " (after any
// "skein: warning: " lines).
bool one_error_line(const CommandResult& r);

// tests/python/interop.py ARGS under the Python of the libtorch under test (SKEIN_PYTHON).
CommandResult interop_py(const std::string& args);
// `r` exited with `code`, with one error line on stderr holding every part.
void expect_one_error(const CommandResult& r, int code, const std::vector<std::string>& parts);

// A small, fast config on the synthetic dataset.
nlohmann::json synthetic_config();
// Two processes' worth of it: the probe model, DDP, a synced history, 4
// epochs, a checkpoint every epoch (test plugins: TEST_PLUGIN_DIR).
nlohmann::json two_process_config();
// What two runs of the same training share: the epochs of a history without
// timings and without the probe's record of the hooks it saw (a restarted
// run sees more).
nlohmann::json comparable_history(nlohmann::json epochs);
// Checks (Boost.Test) that the restarted run of two_process_config() trained
// exactly as the uninterrupted one: same history, same final parameters to
// the bit, and ranks that agreed.
void expect_same_training(const std::string& straight_dir, const std::string& restarted_dir);

}  // namespace test
