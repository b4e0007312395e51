#include "skein/io/npy.hpp"
#include "skein/io/input_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <cctype>
#include <sstream>

#include "skein/io/quoted.hpp"

namespace skein {

namespace {

// The .npy layout (numpy/lib/format.py): "\x93NUMPY", major, minor, header
// length (2 bytes in 1.0, 4 in 2.0 and 3.0, little-endian), then a Python
// dict literal with 'descr', 'fortran_order' and 'shape', then the data.
constexpr char kMagic[] = "\x93NUMPY";

struct Dtype {
  const char* descr;  // without the byte-order character
  torch::ScalarType type;
};
constexpr Dtype kDtypes[] = {{"b1", torch::kBool},  {"i1", torch::kChar},    {"u1", torch::kByte},
                             {"i2", torch::kShort}, {"i4", torch::kInt},     {"i8", torch::kLong},
                             {"f2", torch::kHalf},  {"f4", torch::kFloat},   {"f8", torch::kDouble}};

// The value of `key` in the header's dict literal: a quoted string, True,
// False or a tuple, as written. A plain scan, not std::regex: libstdc++'s
// regex recurses once per character, and a long crafted value (the header
// may be 64 KiB) overflows the stack.
std::string header_value(const std::string& header, const std::string& key, const std::string& name) {
  const auto missing = [&] { return std::runtime_error(name + ": not a .npy file: its header has no '" + key + "'"); };
  const auto skip_space = [&](std::size_t i) {
    while (i < header.size() && std::isspace(static_cast<unsigned char>(header[i]))) ++i;
    return i;
  };
  for (std::size_t at = header.find(key); at != std::string::npos; at = header.find(key, at + 1)) {
    const std::size_t end = at + key.size();
    if (at == 0 || end >= header.size()) continue;
    const char quote = header[at - 1];
    if ((quote != '\'' && quote != '"') || header[end] != quote) continue;
    std::size_t i = skip_space(end + 1);
    if (i >= header.size() || header[i] != ':') continue;
    i = skip_space(i + 1);
    if (i >= header.size()) break;
    const char first = header[i];
    if (first == '\'' || first == '"' || first == '(') {
      const std::size_t close = header.find(first == '(' ? ')' : first, i + 1);
      if (close == std::string::npos) break;
      return header.substr(i, close - i + 1);
    }
    for (const char* word : {"True", "False"})
      if (header.compare(i, std::strlen(word), word) == 0) return word;
    break;
  }
  throw missing();
}

}  // namespace

// Shape, dtype and data offset of a .npy file from its first bytes (the
// whole file's size is `file_size`); checks the data is all there.
struct NpyLayout {
  std::vector<std::int64_t> shape;
  torch::ScalarType type;
  std::size_t data_at;
  std::size_t data_bytes;
};

NpyLayout parse_layout(const std::string& bytes, std::size_t file_size, const std::string& name);

torch::Tensor parse_npy(const std::string& bytes, const std::string& name) {
  const NpyLayout layout = parse_layout(bytes, bytes.size(), name);
  torch::Tensor out = torch::empty(layout.shape, torch::TensorOptions().dtype(layout.type));
  if (layout.data_bytes > 0) std::memcpy(out.data_ptr(), bytes.data() + layout.data_at, layout.data_bytes);
  return out;
}

struct MappedNpy::File {
  std::string path;
  int fd = -1;
  void* base = MAP_FAILED;
  std::size_t size = 0;      // the file's size when mapped: the mapping's
  std::size_t needed = 0;    // bytes up to the array's end
  struct timespec mtime {};  // when mapped

  ~File() {
    if (base != MAP_FAILED) ::munmap(base, size);
    if (fd >= 0) ::close(fd);
  }
};

MappedNpy::MappedNpy(const std::string& path) {
  regular_file_size(path);  // before the open: opening a FIFO waits for a writer
  auto file = std::make_shared<File>();
  file->path = path;
  file->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file->fd < 0) throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(file->fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw std::runtime_error("'" + path + "' is not a regular file");
  file->size = static_cast<std::size_t>(st.st_size);
  file->mtime = st.st_mtim;
  if (file->size) file->base = ::mmap(nullptr, file->size, PROT_READ, MAP_SHARED, file->fd, 0);
  if (file->base == MAP_FAILED)
    throw std::runtime_error("'" + path + "': too short for a .npy file or cannot be mapped");
  const std::size_t head = std::min<std::size_t>(file->size, 1 << 16);  // the header is at most 64 KiB here
  const NpyLayout layout = parse_layout(std::string(static_cast<const char*>(file->base), head), file->size, path);
  file->needed = layout.data_at + layout.data_bytes;
  char* data = static_cast<char*>(file->base) + layout.data_at;
  file_ = file;
  // The tensor's storage keeps the file mapped and open.
  tensor_ = torch::from_blob(data, layout.shape, [file](void*) {}, torch::TensorOptions().dtype(layout.type));
}

void MappedNpy::check() const {
  const File& f = *file_;
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw std::runtime_error(f.path + ": cannot stat the open file: " + std::strerror(errno));
  const auto size = static_cast<std::size_t>(st.st_size);
  const std::string advice =
      "; to replace a file a run reads, write the new one under another name and rename it over the old";
  if (size < f.needed)
    throw std::runtime_error(f.path + ": truncated to " + std::to_string(size) + " bytes while the run reads it (" +
                             std::to_string(f.needed) + " when opened)" + advice);
  if (size != f.size || st.st_mtim.tv_sec != f.mtime.tv_sec || st.st_mtim.tv_nsec != f.mtime.tv_nsec)
    throw std::runtime_error(f.path + ": modified in place while the run reads it" + advice);
}

torch::Tensor map_npy(const std::string& path) { return MappedNpy(path).tensor(); }

namespace {

// The header's dict literal, and the offset of the data that follows it.
std::pair<std::string, std::size_t> header_of(const std::string& bytes, const std::string& name) {
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic) != 0)
    throw std::runtime_error(name + ": not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw std::runtime_error(name + ": truncated .npy header");
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(bytes[8 + i]);
    header_at = 12;
  } else {
    throw std::runtime_error(name + ": .npy format version " + std::to_string(major) + " is not supported");
  }
  if (header_at + header_len > bytes.size()) throw std::runtime_error(name + ": truncated .npy header");
  return {bytes.substr(header_at, header_len), header_at + header_len};
}

// The element type of 'descr' (C order only, little-endian or one byte).
const Dtype& dtype_of(const std::string& header, const std::string& name) {
  std::string descr = header_value(header, "descr", name);
  descr = descr.substr(1, descr.size() - 2);
  if (header_value(header, "fortran_order", name) != "False")
    throw std::runtime_error(name + ": Fortran-ordered array; save it in C order (numpy.ascontiguousarray)");
  if (descr.size() < 2 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '>' && descr[0] != '='))
    throw std::runtime_error(name + ": unsupported dtype " + skein::quoted(descr) + " (structured arrays are not supported)");
  if (descr[0] == '>' && descr.substr(1) != "i1" && descr.substr(1) != "u1" && descr.substr(1) != "b1")
    throw std::runtime_error(name + ": big-endian dtype " + skein::quoted(descr) + "; save it little-endian (arr.astype('<" +
                             skein::capped(descr.substr(1)) + "'))");
  for (const auto& d : kDtypes)
    if (descr.substr(1) == d.descr) return d;
  const std::string why = descr.substr(1) == "O" ? "object arrays cannot be read (they hold Python objects)"
                                                 : "unsupported dtype " + skein::quoted(descr);
  throw std::runtime_error(name + ": " + why);
}

// The extents of 'shape'; their product fits in int64.
std::vector<std::int64_t> shape_of(const std::string& header, const std::string& name) {
  std::vector<std::int64_t> shape;
  const std::string shape_text = header_value(header, "shape", name);
  std::stringstream items(shape_text.substr(1, shape_text.size() - 2));
  std::string item;
  std::int64_t numel = 1;
  while (std::getline(items, item, ',')) {
    if (item.find_first_not_of(" \t") == std::string::npos) continue;
    std::int64_t extent = 0;
    std::size_t used = 0;
    try {
      extent = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    // After the number only blanks, or the L of a Python 2 long ("(3L, 4L)"):
    // "(3x,)" is no shape.
    if (used > 0 && used < item.size() && item[used] == 'L') ++used;
    const bool whole = used > 0 && item.find_first_not_of(" \t", used) == std::string::npos;
    if (!whole || extent < 0 || (extent > 0 && numel > INT64_MAX / extent))
      throw std::runtime_error(name + ": bad shape " + skein::capped(shape_text) + " in the .npy header");
    numel *= extent;
    shape.push_back(extent);
  }
  return shape;
}

}  // namespace

NpyLayout parse_layout(const std::string& bytes, std::size_t file_size, const std::string& name) {
  const auto [header, data_at] = header_of(bytes, name);
  const Dtype& dtype = dtype_of(header, name);
  const std::vector<std::int64_t> shape = shape_of(header, name);
  std::int64_t numel = 1;
  for (const auto extent : shape) numel *= extent;  // no overflow: checked by shape_of
  const std::size_t item_size = c10::elementSize(dtype.type);
  const std::size_t have = file_size - data_at;
  if (static_cast<std::uint64_t>(numel) > have / item_size)
    throw std::runtime_error(name + ": truncated: the header promises " + std::to_string(numel) + " values of " +
                             std::to_string(item_size) + " bytes, the file holds " + std::to_string(have) +
                             " bytes of data");
  return NpyLayout{shape, dtype.type, data_at, static_cast<std::size_t>(numel) * item_size};
}

torch::Tensor read_npy(const std::string& path) {
  regular_file_size(path);  // /dev/zero would be read without end
  const auto bytes = read_whole_file(path);
  if (!bytes) throw std::runtime_error("cannot read '" + path + "'");
  return parse_npy(*bytes, path);
}

std::string npy_bytes(const torch::Tensor& tensor) {
  const torch::Tensor t = tensor.detach().cpu().contiguous();
  const Dtype* dtype = nullptr;
  for (const auto& d : kDtypes)
    if (d.type == t.scalar_type()) dtype = &d;
  if (!dtype) throw std::runtime_error(std::string("cannot write a ") + c10::toString(t.scalar_type()) + " tensor as .npy");
  // Python's tuple syntax: "()", "(3,)", "(3, 4)".
  std::string shape;
  for (auto extent : t.sizes()) shape += (shape.empty() ? "" : ", ") + std::to_string(extent);
  if (t.dim() == 1) shape += ",";
  shape = "(" + shape + ")";
  const char order = c10::elementSize(t.scalar_type()) == 1 ? '|' : '<';  // no byte order for single bytes
  std::string header = "{'descr': '" + std::string(1, order) + dtype->descr + "', 'fortran_order': False, 'shape': " +
                       shape + ", }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded to 64 bytes.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  if (t.numel() > 0) out.append(static_cast<const char*>(t.data_ptr()), static_cast<std::size_t>(t.numel()) * t.element_size());
  return out;
}

}  // namespace skein
