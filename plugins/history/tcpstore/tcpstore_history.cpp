// History backend "tcpstore": batch records of all ranks merged every epoch
// through a c10d TCPStore: the run's own when it has one (several machines,
// or an external launcher), else one that rank 0 serves. Note: libtorch's
// TCPStore server (1.13, and 2.x with or without libuv) listens on every
// interface, without authentication.

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "../store_common/store_history.hpp"
#include "skein/errors.hpp"
#include "skein/io/store.hpp"
#include "skein/plugin.hpp"
#include "skein/run_store.hpp"

// Declared once: the schema and TcpStoreOptions.
#define TCPSTORE_OPTIONS(X)                                                             \
  X(host, string, "\"\"",                                                               \
    "Use a TCPStore served at this host (default: the run's store, else one "           \
    "served by rank 0)")                                                                \
  X(port, integer, "0", "Port of that store, or of rank 0's server (0: any free port)", SKEIN_RANGE("[0, 65535]"))

namespace {

SKEIN_OPTIONS_STRUCT(TcpStoreOptions, TCPSTORE_OPTIONS)

c10::intrusive_ptr<c10d::Store> make_store(const skein::PluginArgs& args) {
  const auto& opt = args.options;
  const TcpStoreOptions o(opt);
  const auto& run = args.run;
  const std::string& host = o.host;
  const auto port = o.port;
  const std::string host_option = TcpStoreOptions::names::host;
  if (!host.empty()) {  // a store served elsewhere
    if (port == 0) opt.fail(TcpStoreOptions::names::port, "must be set when '" + host_option + "' is");
    return c10::make_intrusive<c10d::TCPStore>(
        host, skein::tcp_store_options(static_cast<int>(port), false, run.world_size, run.timeout_s));
  }
  const bool shared = args.store && args.store->kind == skein::RunStore::Kind::tcp;
  if (shared) return args.store->store;
  // Rank 0 serves; the others learn its port through the run's store.
  const std::string port_key = skein_history::tcpstore_port_key(run.run_id);
  if (run.rank == 0) {
    auto store = c10::make_intrusive<c10d::TCPStore>(
        "127.0.0.1", skein::tcp_store_options(static_cast<int>(port), true, run.world_size, run.timeout_s));
    if (!run.multi_node)
      skein::warn("history 'tcpstore' serves port " + std::to_string(store->getPort()) +
                  " on every interface (libtorch's TCPStore cannot bind loopback only); "
                  "history 'filestore' opens no port on one machine");
    if (run.world_size > 1) skein::store_set(*args.store->store, port_key, std::to_string(store->getPort()));
    return store;
  }
  if (!args.store || !*args.store)
    throw skein::ConfigError("history 'tcpstore': rank " + std::to_string(run.rank) +
                             " has no run store to find rank 0's server");
  const int server_port = std::stoi(skein::store_get(*args.store->store, port_key));
  const std::string server = run.multi_node ? run.master_addr : "127.0.0.1";
  return c10::make_intrusive<c10d::TCPStore>(
      server, skein::tcp_store_options(server_port, false, run.world_size, run.timeout_s));
}

using TcpStoreHistory = skein_history::StoreHistoryPlugin<make_store>;

}  // namespace

SKEIN_PLUGIN(TcpStoreHistory, history, "tcpstore", "1.0.0",
             "History of all ranks merged each epoch through a c10d TCPStore",
             SKEIN_OPTION_SPECS(TCPSTORE_OPTIONS))
