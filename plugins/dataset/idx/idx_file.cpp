#include "idx_file.hpp"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>

namespace skein_idx {

namespace {

// Deflate never inflates more than 1032 times (zlib's technical details):
// a bound on what a gzip file of a given size can hold.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

std::uint32_t big_endian_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

// The header at the start of `bytes` (`size` of them, maybe more to come):
// dims and the header's length. Throws when it is incomplete or invalid.
struct Header {
  std::vector<std::int64_t> dims;
  std::size_t length = 0;     // bytes before the data
  std::uint64_t body = 0;     // product(dims): bytes of data
};

Header parse_header(const std::uint8_t* bytes, std::size_t size, const std::string& path) {
  // Two zero bytes, a type code (0x08 = unsigned byte), the number of
  // dimensions, then one big-endian uint32 per dimension.
  if (size < 4) throw std::runtime_error(path + ": too short for an IDX header");
  if (bytes[0] != 0 || bytes[1] != 0) {
    char magic[16];
    std::snprintf(magic, sizeof magic, "0x%02x%02x%02x%02x", bytes[0], bytes[1], bytes[2], bytes[3]);
    throw std::runtime_error(path + ": bad magic " + magic + " (not an IDX file)");
  }
  if (bytes[2] != 0x08)
    throw std::runtime_error(path + ": IDX element type 0x" + std::to_string(bytes[2]) +
                             " is not supported (only unsigned byte, 0x08)");
  const std::size_t ndims = bytes[3];
  if (ndims == 0) throw std::runtime_error(path + ": IDX file declares no dimensions");
  Header h;
  h.length = 4 + 4 * ndims;
  if (size < h.length) throw std::runtime_error(path + ": truncated IDX header");
  h.body = 1;
  for (std::size_t i = 0; i < ndims; ++i) {
    h.dims.push_back(big_endian_u32(&bytes[4 + 4 * i]));
    if (__builtin_mul_overflow(h.body, static_cast<std::uint64_t>(h.dims.back()), &h.body))
      throw std::runtime_error(path + ": IDX dimensions too large (their product overflows)");
  }
  return h;
}

[[noreturn]] void truncated(const std::string& path, std::uint64_t expected, std::uint64_t got) {
  throw std::runtime_error(path + ": truncated: header promises " + std::to_string(expected) +
                           " bytes of data, file has " + std::to_string(got));
}

[[noreturn]] void trailing(const std::string& path, std::uint64_t extra) {
  throw std::runtime_error(path + ": " + std::to_string(extra) + " unexpected bytes after the data");
}

using GzFile = std::unique_ptr<gzFile_s, int (*)(gzFile)>;

// Reads up to n bytes; fewer only at the end of the data. gzread reads gzip
// and plain files alike.
std::size_t read_some(gzFile f, std::uint8_t* out, std::size_t n, const std::string& path) {
  std::size_t done = 0;
  while (done < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
    const int got = gzread(f, out + done, chunk);
    if (got < 0) {
      int err = 0;
      throw std::runtime_error(path + ": corrupt or truncated gzip data (" + gzerror(f, &err) + ")");
    }
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

}  // namespace

void read_idx_into(const std::string& path, std::uint64_t max_bytes, IdxSink& sink) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error(path + ": cannot open");
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  GzFile f(gzopen(path.c_str(), "rb"), gzclose);
  if (!f) throw std::runtime_error(path + ": cannot open");
  gzbuffer(f.get(), 256 * 1024);  // fewer, larger reads (zlib's default is 8 KiB)

  std::uint8_t head[4 + 4 * 255];
  std::size_t got = read_some(f.get(), head, 4, path);
  if (got == 4 && head[0] == 0 && head[1] == 0) got += read_some(f.get(), head + 4, 4 * std::size_t{head[3]}, path);
  const Header h = parse_header(head, got, path);
  const bool plain = gzdirect(f.get()) == 1;
  // Checked before anything is allocated: the header may lie.
  if (plain && file_size - h.length < h.body) truncated(path, h.body, file_size - h.length);
  if (plain && file_size - h.length > h.body) trailing(path, file_size - h.length - h.body);
  if (!plain && h.body / kMaxDeflateRatio > file_size)
    throw std::runtime_error(path + ": header promises " + std::to_string(h.body) +
                             " bytes of data, more than a gzip file of " + std::to_string(file_size) +
                             " bytes can hold");
  if (h.body > max_bytes)
    throw std::runtime_error(path + ": header promises " + std::to_string(h.body) +
                             " bytes of data, more than this machine's memory (" + std::to_string(max_bytes) +
                             " bytes)");

  sink.start(h.dims);
  std::uint64_t done = 0;
  while (done < h.body) {
    const auto [buffer, size] = sink.buffer();
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(size, h.body - done));
    const std::size_t body = read_some(f.get(), buffer, want, path);
    if (body > 0) sink.filled(body);
    done += body;
    if (body < want) truncated(path, h.body, done);
  }
  // Decompress no further than one byte past the declared size.
  std::uint8_t more = 0;
  if (read_some(f.get(), &more, 1, path) != 0)
    throw std::runtime_error(path + ": more data than its header declares (" + std::to_string(h.body) +
                             " bytes)");
}

IdxArray read_idx(const std::string& path, std::uint64_t max_bytes) {
  // The whole data in one buffer: zlib inflates straight into it.
  class ArraySink final : public IdxSink {
   public:
    explicit ArraySink(IdxArray& arr) : arr_(arr) {}
    void start(const std::vector<std::int64_t>& dims) override {
      arr_.dims = dims;
      std::uint64_t body = 1;
      for (auto d : dims) body *= static_cast<std::uint64_t>(d);  // no overflow: checked in the header
      arr_.data.resize(static_cast<std::size_t>(body));
    }
    std::pair<std::uint8_t*, std::size_t> buffer() override {
      return {arr_.data.data() + filled_, arr_.data.size() - filled_};
    }
    void filled(std::size_t size) override { filled_ += size; }

   private:
    IdxArray& arr_;
    std::size_t filled_ = 0;
  };
  IdxArray arr;
  ArraySink sink(arr);
  read_idx_into(path, max_bytes, sink);
  return arr;
}

IdxArray parse_idx(const std::vector<std::uint8_t>& bytes, const std::string& path) {
  const Header h = parse_header(bytes.data(), bytes.size(), path);
  const std::uint64_t body = bytes.size() - h.length;
  if (body < h.body) truncated(path, h.body, body);
  if (body > h.body) trailing(path, body - h.body);
  IdxArray arr;
  arr.dims = h.dims;
  arr.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(h.length), bytes.end());
  return arr;
}

}  // namespace skein_idx
