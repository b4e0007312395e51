// History backend "tcpstore": batch records of all ranks merged every epoch
// through a c10d TCPStore: the run's own when it has one (several machines,
// or an external launcher), else one that rank 0 serves. Note: libtorch
// 1.13's TCPStore server listens on every interface, without authentication.
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "../store_common/store_history.hpp"
#include "skein/errors.hpp"
#include "skein/plugin.hpp"
#include "skein/run_store.hpp"

namespace {

c10::intrusive_ptr<c10d::Store> make_store(const skein::PluginArgs& args) {
  const auto& opt = args.options;
  const auto& run = args.run;
  const std::string host = opt.get_string("host");
  const auto port = opt.get_int("port");
  if (port < 0 || port > 65535) opt.fail("port", "must be in [0, 65535]");
  c10d::TCPStoreOptions tcp;
  tcp.timeout = std::chrono::milliseconds(static_cast<long>(run.timeout_s * 1000));
  tcp.numWorkers = run.world_size;
  tcp.waitWorkers = false;
  if (!host.empty()) {  // a store served elsewhere
    if (port == 0) opt.fail("port", "must be set when 'host' is");
    tcp.port = static_cast<std::uint16_t>(port);
    return c10::make_intrusive<c10d::TCPStore>(host, tcp);
  }
  const bool shared = args.store && args.store->kind == skein::RunStore::Kind::tcp;
  if (shared) return args.store->store;
  // Rank 0 serves; the others learn its port through the run's store.
  const std::string port_key = "skein/history/tcp_port/" + run.run_id;
  if (run.rank == 0) {
    tcp.isServer = true;
    tcp.port = static_cast<std::uint16_t>(port);
    auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", tcp);
    if (run.world_size > 1) skein::store_set(*args.store->store, port_key, std::to_string(store->getPort()));
    return store;
  }
  if (!args.store || !*args.store)
    throw skein::ConfigError("history 'tcpstore': rank " + std::to_string(run.rank) +
                             " has no run store to find rank 0's server");
  tcp.port = static_cast<std::uint16_t>(std::stoi(skein::store_get(*args.store->store, port_key)));
  const std::string server = run.multi_node ? run.master_addr : "127.0.0.1";
  return c10::make_intrusive<c10d::TCPStore>(server, tcp);
}

class TcpStoreHistory final : public skein_history::StoreHistory {
 public:
  explicit TcpStoreHistory(const skein::PluginArgs& args)
      : StoreHistory(skein_history::prefixed(make_store(args), args.run), args.run) {}
};

}  // namespace

SKEIN_PLUGIN(TcpStoreHistory, history, "tcpstore", "1.0.0",
             "History of all ranks merged each epoch through a c10d TCPStore",
             SKEIN_OPTION("host", string, "\"\"",
                          "Use a TCPStore served at this host (default: the run's store, else one "
                          "served by rank 0)"),
             SKEIN_OPTION("port", integer, "0",
                          "Port of that store, or of rank 0's server (0: any free port)"))
