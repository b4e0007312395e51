// History sync cost: W processes on this machine each record B batches per
// epoch and sync through a history backend plugin (local, tcpstore or
// filestore), as the trainer does at every epoch end. Prints one JSON line.
//   history_sync --backend NAME --world W --batches B [--epochs E] [--plugin-dir D]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/filesystem.hpp>
#include <torch/csrc/distributed/c10d/FileStore.hpp>

#include "skein/host/option_schema.hpp"
#include "skein/host/plugin_registry.hpp"
#include "skein/history_backend.hpp"
#include "skein/io/store.hpp"
#include "skein/run_store.hpp"

namespace fs = boost::filesystem;

namespace {

// All ranks leave together (not timed), so that a sync measures the sync.
void barrier(c10d::Store& store, const std::string& name, int world) {
  if (store.add(name, 1) == world) skein::store_set(store, name + "/go", "1");
  store.wait({name + "/go"});
}

int worker(int rank, int world, const std::string& backend, long batches, long epochs,
           const std::string& plugin_dir, const std::string& dir) {
  skein::RunInfo run;
  run.rank = rank;
  run.world_size = world;
  run.run_id = "bench";
  run.run_dir = dir;
  run.timeout_s = 120;
  skein::RunStore rs;
  rs.kind = skein::RunStore::Kind::file;
  rs.store = c10::make_intrusive<c10d::FileStore>(dir + "/rendezvous", world);
  skein::core::PluginRegistry registry;
  registry.scan_directory(plugin_dir);
  const auto& rec = registry.require(backend);
  skein::Options opts(backend, skein::core::validate_options(rec.options, nlohmann::json::object(), backend, backend));
  auto history_backend = registry.create<skein::HistoryBackend>(rec, skein::PluginArgs{opts, run, nullptr, &rs});
  skein::History history;
  const int k_loss = history.batches().key("train_loss"), k_size = history.batches().key("train_batch_size");
  std::vector<double> seconds;
  for (long e = 0; e <= epochs; ++e) {  // epoch 0 warms up
    history.new_epoch();
    for (long b = 0; b < batches; ++b) {
      history.batches().new_row();
      history.batches().put(k_loss, 1.0 / (b + 1));
      history.batches().put(k_size, 64);
    }
    barrier(*rs.store, "b" + std::to_string(e), world);
    const auto start = std::chrono::steady_clock::now();
    history_backend->sync_epoch(history);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  history_backend->close();
  if (rank == 0) {
    seconds.erase(seconds.begin());
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    // Store round trips per rank and epoch, by construction (store_history.hpp).
    const bool store = backend != "local";
    std::cout << "{\"backend\": \"" << backend << "\", \"world\": " << world << ", \"batches\": " << batches
              << ", \"sync_ms\": " << median * 1e3 << ", \"per_batch_us\": " << median * 1e6 / batches
              << ", \"round_trips_rank0\": " << (store ? (world == 1 ? 2 : world + 1) : 0)
              << ", \"round_trips_other\": " << (store && world > 1 ? 3 : 0)
              << ", \"rows_merged\": " << history.last()["batches"].size() << "}" << std::endl;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "tcpstore";
  int world = 2;
  long batches = 1000, epochs = 10;
  std::string plugin_dir = (boost::dll::program_location().parent_path().parent_path() / "lib/skein/plugins").string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--backend") backend = argv[i + 1];
    else if (flag == "--world") world = std::stoi(argv[i + 1]);
    else if (flag == "--batches") batches = std::stol(argv[i + 1]);
    else if (flag == "--epochs") epochs = std::stol(argv[i + 1]);
    else if (flag == "--plugin-dir") plugin_dir = argv[i + 1];
  }
  const fs::path dir = fs::temp_directory_path() / fs::unique_path("skein-bench-%%%%%%");
  fs::create_directories(dir);
  std::vector<pid_t> children;
  for (int r = 0; r < world; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      try {
        _exit(worker(r, world, backend, batches, epochs, plugin_dir, dir.string()));
      } catch (const std::exception& e) {
        std::cerr << "rank " << r << ": " << e.what() << std::endl;
        _exit(1);
      }
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  fs::remove_all(dir);
  return failed ? 1 : 0;
}
