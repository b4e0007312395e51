#include "test_support.hpp"

#include <boost/test/unit_test.hpp>

#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "skein/host/option_schema.hpp"

namespace fs = boost::filesystem;

namespace test {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string Workspace::write_config(const nlohmann::json& cfg) {
  const std::string path = tmp.str("c" + std::to_string(++runs) + ".json");
  write_text(path, cfg.dump());
  return path;
}

nlohmann::json load_json(const std::string& path) { return nlohmann::json::parse(read_text(path)); }


bool one_error_line(const CommandResult& r) {
  // Warnings (`skein: warning: ...`, the one way they go) may come first.
  std::string err = r.err;
  while (err.rfind("skein: warning: ", 0) == 0 && err.find('\n') != std::string::npos) err.erase(0, err.find('\n') + 1);
  return err.rfind("skein: error: ", 0) == 0 && err.find('\n') == err.size() - 1;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandResult run(const std::string& command_line, int timeout_seconds) {
  TempDir tmp;
  const std::string out = tmp.str("out"), err = tmp.str("err");
  const std::string full = "timeout -k 5 " + std::to_string(timeout_seconds) + " " + command_line +
                           " >" + out + " 2>" + err + " </dev/null";
  int status = std::system(full.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

namespace {
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

bool private_network_available() {
  static const bool available = [] {
    bool ok = std::system("unshare -rn sh -c 'ip link set lo up' >/dev/null 2>&1") == 0;
    if (!ok) std::fprintf(stderr, "note: no private network namespace here; using the host's loopback\n");
    return ok;
  }();
  return available;
}

CommandResult TrainWorkspace::skein(const std::string& args, const std::string& env) {
  return run(in_private_network(env + " " SKEIN_EXE " train --plugin-dir " TEST_PLUGIN_DIR " " + args), 240);
}

std::string in_private_network(const std::string& command) {
  if (!private_network_available()) return "sh -c " + shell_quote(command);
  return "unshare -rn sh -c " + shell_quote("ip link set lo up && " + command);
}

std::string two_hosts_setup(const std::string& subnet) {
  return "mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns || exit 3\n"
         "ip netns add host0 && ip netns add host1 || exit 3\n"
         "ip link add veth0 type veth peer name veth1 || exit 3\n"
         "ip link set veth0 netns host0 && ip link set veth1 netns host1 || exit 3\n"
         "ip -n host0 addr add " + subnet + ".1/24 dev veth0 || exit 3\n"
         "ip -n host1 addr add " + subnet + ".2/24 dev veth1 || exit 3\n"
         "for n in host0 host1; do ip -n $n link set lo up || exit 3; done\n"
         "ip -n host0 link set veth0 up && ip -n host1 link set veth1 up || exit 3\n";
}

std::string with_fault(const std::string& fault) {
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options =
      (asan && *asan ? std::string(asan) + ":" : std::string()) + "verify_asan_link_order=0";
  return "env LD_PRELOAD=" + shell_quote(FAULT_INJECTION_LIB) + " ASAN_OPTIONS=" + shell_quote(asan_options) +
         " " + fault;
}

namespace {

// The file of the library that defines `symbol` in this process, or "".
std::string library_of(const char* symbol) {
  Dl_info info{};
  void* address = ::dlsym(RTLD_DEFAULT, symbol);
  if (!address || ::dladdr(address, &info) == 0 || !info.dli_fname) return "";
  return info.dli_fname;
}

}  // namespace

std::string for_uninstrumented_program() {
  if (!kAddressSanitizer) return "";
  // libstdc++ too: the runtime resolves the C++ functions it intercepts
  // (__cxa_throw) when it starts, and Python loads libstdc++ only later.
  const std::string runtime = library_of("__asan_init"), cxx = library_of("__cxa_begin_catch");
  if (runtime.empty() || cxx.empty()) return "";
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string options = (asan && *asan ? std::string(asan) + ":" : std::string()) + "detect_leaks=0";
  return "env LD_PRELOAD=" + shell_quote(runtime + " " + cxx) + " ASAN_OPTIONS=" + shell_quote(options) + " ";
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("free_port: cannot bind");
  close(fd);
  return ntohs(addr.sin_port);
}

void load_test_plugins(skein::core::PluginRegistry& registry) {
  registry.scan_directory(SKEIN_PLUGIN_DIR);
  registry.scan_directory(TEST_PLUGIN_DIR);
  if (!registry.problems().empty())
    throw std::runtime_error("test plugins: " + registry.problems().front().message);
}

CommandResult interop_py(const std::string& args) {
  return run(std::string(SKEIN_TEST_PYTHON) + " " + SKEIN_SOURCE_DIR "/tests/python/interop.py " + args, 240);
}

void expect_one_error(const CommandResult& r, int code, const std::vector<std::string>& parts) {
  BOOST_TEST(r.exit_code == code, r.err);
  BOOST_TEST(one_error_line(r), r.err);
  for (const auto& p : parts) BOOST_TEST(contains(r.err, p), "expected '" << p << "' in: " << r.err);
}

nlohmann::json synthetic_config() {
  return nlohmann::json::parse(R"({
    "model": {"plugin": "mlp", "hidden": [32]},
    "data": {"plugin": "synthetic", "samples": 512, "test_samples": 128, "shape": [16],
             "classes": 4, "noise": 1.0},
    "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9},
    "batch_size": 32,
    "max_epochs": 3,
    "seed": 7,
    "valid_split": 0.25,
    "callbacks": []
  })");
}

nlohmann::json two_process_config() {
  auto cfg = synthetic_config();
  cfg["model"] = {{"plugin", "probe_model"}, {"hidden", 8}};
  cfg["parallel"] = {{"plugin", "ddp"}};
  cfg["history"] = {{"plugin", "filestore"}};
  cfg["max_epochs"] = 4;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  return cfg;
}

void expect_same_training(const std::string& straight, const std::string& restarted) {
  BOOST_TEST(comparable_history(load_json(straight + "/history.json")) ==
             comparable_history(load_json(restarted + "/history.json")));
  BOOST_TEST(read_text(straight + "/checkpoints/epoch_0004/model.pt") ==
             read_text(restarted + "/checkpoints/epoch_0004/model.pt"));
  BOOST_TEST(load_json(restarted + "/run.json")["consistent"].get<bool>());
}

nlohmann::json comparable_history(nlohmann::json epochs) {
  for (auto& e : epochs)
    for (const char* k : {"dur", "train_dur", "valid_dur", "samples_per_s", "probe_events"}) e.erase(k);
  return epochs;
}

}  // namespace test
