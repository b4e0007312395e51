#include "skein/io/store.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <stdexcept>

#include <torch/csrc/distributed/c10d/FileStore.hpp>

#include "skein/errors.hpp"

namespace skein {

namespace {

// FileStore whose failed operations are reported with its file's name and
// leave it removed at destruction (open_file_store).
class CheckedFileStore final : public c10d::FileStore {
 public:
  CheckedFileStore(const std::string& path, int users) : c10d::FileStore(path, users), file_(path) {}
  ~CheckedFileStore() override {
    // ~FileStore appends a record, and returns at once when its file is gone.
    if (failed_ || filesystem_full()) ::unlink(file_.c_str());
  }

  // The operations that append to the file: a failure may leave its last
  // record torn (a full disk). Reading ones fail only by timing out.
  void set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    writing([&] { c10d::FileStore::set(key, value); });
  }
  std::vector<std::uint8_t> compareSet(const std::string& key, const std::vector<std::uint8_t>& expected,
                                       const std::vector<std::uint8_t>& desired) override {
    return writing([&] { return c10d::FileStore::compareSet(key, expected, desired); });
  }
  std::int64_t add(const std::string& key, std::int64_t value) override {
    return writing([&] { return c10d::FileStore::add(key, value); });
  }
  bool deleteKey(const std::string& key) override {
    return writing([&] { return c10d::FileStore::deleteKey(key); });
  }

 private:
  template <class Op>
  auto writing(const Op& op) -> decltype(op()) {
    try {
      return op();
    } catch (const std::exception& e) {
      failed_ = true;
      throw std::runtime_error("cannot write the store file " + file_ + ": " + first_line(e.what()));
    }
  }

  // Whether the file's filesystem has no block left for the destructor's record.
  bool filesystem_full() const {
    struct statvfs fs {};
    return ::statvfs(file_.c_str(), &fs) == 0 && fs.f_bavail == 0;
  }

  std::string file_;
  bool failed_ = false;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> open_file_store(const std::string& path, int users, double timeout_s) {
  c10::intrusive_ptr<CheckedFileStore> store;
  try {
    // libtorch 2.x's constructor already appends a record (its count of the
    // file's users): a full disk fails it there, with no file named.
    store = c10::make_intrusive<CheckedFileStore>(path, users);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot write the store file " + path + ": " + first_line(e.what()));
  }
  store->setTimeout(to_millis(timeout_s));
  return store;
}

c10d::TCPStoreOptions tcp_store_options(int port, bool is_server, int world_size,
                                        double timeout_s) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = is_server;
  opts.numWorkers = world_size;
  opts.waitWorkers = false;
  opts.timeout = to_millis(timeout_s);
  return opts;
}

void store_set(c10d::Store& store, const std::string& key, const std::string& value) {
  store.set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
}

std::string store_get(c10d::Store& store, const std::string& key) {
  auto bytes = store.get(key);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace skein
