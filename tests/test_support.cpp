#include "test_support.hpp"

#include <sys/wait.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = boost::filesystem;

namespace test {

TempDir::TempDir() {
  path = fs::temp_directory_path() / fs::unique_path("skein-test-%%%%-%%%%-%%%%");
  fs::create_directories(path);
}
TempDir::~TempDir() {
  boost::system::error_code ec;
  fs::remove_all(path, ec);
}
std::string TempDir::str(const std::string& child) const {
  return child.empty() ? path.string() : (path / child).string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
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

void load_test_plugins(skein::core::PluginRegistry& registry) {
  registry.scan_directory(SKEIN_PLUGIN_DIR);
  registry.scan_directory(TEST_PLUGIN_DIR);
  if (!registry.problems().empty())
    throw std::runtime_error("test plugins: " + registry.problems().front().message);
}

void write_idx(const std::string& path, const std::vector<std::uint32_t>& dims,
               const std::vector<std::uint8_t>& data, bool gzip) {
  std::string bytes{'\0', '\0', '\x08', static_cast<char>(dims.size())};
  for (auto d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes += static_cast<char>((d >> shift) & 0xff);
  }
  bytes.append(reinterpret_cast<const char*>(data.data()), data.size());
  if (!gzip) {
    write_text(path, bytes);
    return;
  }
  gzFile f = gzopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

void write_tiny_mnist(const std::string& dir, std::uint32_t train, std::uint32_t test, bool gzip) {
  const std::string ext = gzip ? ".gz" : "";
  auto make = [&](const std::string& prefix, std::uint32_t n) {
    std::vector<std::uint8_t> images(static_cast<std::size_t>(n) * 28 * 28), labels(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      labels[i] = static_cast<std::uint8_t>(i % 10);
      // A bright bar whose row depends on the class: learnable.
      for (int x = 0; x < 28; ++x) images[i * 784 + labels[i] * 2 * 28 + x] = 255;
    }
    write_idx(dir + "/" + prefix + "-images-idx3-ubyte" + ext, {n, 28, 28}, images, gzip);
    write_idx(dir + "/" + prefix + "-labels-idx1-ubyte" + ext, {n}, labels, gzip);
  };
  make("train", train);
  make("t10k", test);
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

}  // namespace test
