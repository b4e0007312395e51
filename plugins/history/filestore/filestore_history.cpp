// History backend "filestore": batch records of all ranks merged every epoch
// through a c10d FileStore: a file every rank can open (a shared filesystem
// across machines), no network. The file is removed when the run ends.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <boost/filesystem.hpp>

#include "../store_common/store_history.hpp"
#include "skein/errors.hpp"
#include "skein/io/store.hpp"
#include "skein/plugin.hpp"
#include "skein/run.hpp"
#include "skein/run_store.hpp"

namespace fs = boost::filesystem;

// Declared once: the schema and FileStoreOptions.
#define FILESTORE_OPTIONS(X)                                                                        \
  X(path, string, "\"\"",                                                                            \
    "Store file (default: history.filestore in the run directory; across "                         \
    "machines, a path on a shared filesystem, which needs --allow-outside-run-dir)")

namespace {

SKEIN_OPTIONS_STRUCT(FileStoreOptions, FILESTORE_OPTIONS)
constexpr const char* kPath = FileStoreOptions::names::path;

struct StorePath {
  std::string path;
  bool ours = false;  // an earlier attempt of this run created it
};

StorePath store_path(const skein::PluginArgs& args) {
  StorePath p;
  const FileStoreOptions o(args.options);
  if (o.path.empty()) {
    if (args.run.multi_node)
      args.options.fail(kPath, "must name a file on a filesystem every machine shares");
    p.ours = skein::is_run_output(args.run, "history.filestore");  // asked before recording it
    p.path = skein::run_output_path(args.run, "history.filestore", args.options.owner() + ": store file");
  } else {
    p.ours = skein::is_run_output(args.run, o.path);
    p.path = skein::run_output_path(args.options, kPath, args.run);
  }
  return p;
}

c10::intrusive_ptr<c10d::Store> make_store(const skein::PluginArgs& args) {
  const StorePath where = store_path(args);
  const std::string& path = where.path;
  const auto& run = args.run;
  boost::system::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  // A file left by a crashed attempt of this run would confuse FileStore's
  // clean-up count: rank 0 removes it before anyone opens it. Any other file
  // is not skein's to delete.
  const std::string ready_key = skein_history::filestore_ready_key(run.run_id);
  const bool coordinated = run.world_size > 1 && args.store && *args.store;
  if (run.rank == 0) {
    if (fs::exists(fs::symlink_status(path, ec))) {
      if (!where.ours)
        args.options.fail(kPath, "names '" + path + "', which exists and was not created by this run; " +
                                      "skein never deletes a file it did not write (remove it yourself, or choose another path)");
      fs::remove(path, ec);
    }
  } else if (coordinated) {
    args.store->store->wait({ready_key});
  }
  // FileStore opens its file only at the first operation, at the end of the
  // first epoch: a path that cannot be written is found here instead.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    args.options.fail(kPath, "names '" + path + "', which rank " + std::to_string(run.rank) +
                                  " cannot open for writing: " + std::strerror(errno));
  ::close(fd);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = skein::open_file_store(path, run.world_size, run.timeout_s);  // a full disk: an error, not an abort
  } catch (const std::exception& e) {
    args.options.fail(kPath, "names '" + path + "', which cannot be opened: " + skein::first_line(e.what()));
  }
  if (run.rank == 0 && coordinated) skein::store_set(*args.store->store, ready_key, "1");
  return store;
}

using FileStoreHistory = skein_history::StoreHistoryPlugin<make_store>;

}  // namespace

SKEIN_PLUGIN(FileStoreHistory, history, "filestore", "1.0.1",
             "History of all ranks merged each epoch through a c10d FileStore (no network)",
             SKEIN_OPTION_SPECS(FILESTORE_OPTIONS))
