#include "event_trim.hpp"

#include <boost/filesystem.hpp>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "event_writer.hpp"
#include "skein/io/atomic_file.hpp"
#include "skein/io/input_file.hpp"

namespace fs = boost::filesystem;

namespace skein_tb {

namespace {

// The protobuf fields of one message, read one at a time. A malformed
// message ends the reading (ok() turns false).
class Fields {
 public:
  explicit Fields(const std::string& bytes) : s_(bytes) {}
  bool next() {
    if (pos_ >= s_.size() || !ok_) return false;
    const std::uint64_t key = varint();
    field_ = static_cast<int>(key >> 3);
    switch (key & 7) {
      case 0: number_ = varint(); bytes_.clear(); break;
      case 1: skip(8); break;
      case 5: skip(4); break;
      case 2: {
        const std::uint64_t n = varint();
        if (!ok_ || n > s_.size() - pos_) return ok_ = false;
        bytes_ = s_.substr(pos_, n);
        pos_ += n;
        break;
      }
      default: return ok_ = false;
    }
    return ok_;
  }
  bool ok() const { return ok_; }
  int field() const { return field_; }
  std::uint64_t number() const { return number_; }
  const std::string& bytes() const { return bytes_; }

 private:
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= s_.size()) break;
      const auto b = static_cast<std::uint8_t>(s_[pos_++]);
      v |= std::uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    ok_ = false;
    return 0;
  }
  void skip(std::size_t n) {
    if (n > s_.size() - pos_) ok_ = false;
    else pos_ += n;
  }

  const std::string& s_;
  std::size_t pos_ = 0;
  bool ok_ = true;
  int field_ = 0;
  std::uint64_t number_ = 0;
  std::string bytes_;
};

// Event{step = 2, summary = 5 {value = 1 {tag = 1}}}: its step and tags.
void step_and_tags(const std::string& event, std::int64_t& step, std::vector<std::string>& tags) {
  Fields e(event);
  while (e.next()) {
    if (e.field() == 2) step = static_cast<std::int64_t>(e.number());
    if (e.field() != 5) continue;
    Fields summary(e.bytes());
    while (summary.next()) {
      if (summary.field() != 1) continue;
      Fields value(summary.bytes());
      while (value.next())
        if (value.field() == 1) tags.push_back(value.bytes());
    }
  }
}

bool covered(const std::string& event, std::int64_t last_epoch, std::int64_t batch_steps) {
  std::int64_t step = 0;
  std::vector<std::string> tags;
  step_and_tags(event, step, tags);
  for (const auto& tag : tags)
    if (tag.rfind("batch/", 0) == 0 ? step >= batch_steps : step > last_epoch) return false;
  return true;
}

std::uint32_t u32_at(const std::string& s, std::size_t pos) {
  std::uint32_t v;
  std::memcpy(&v, s.data() + pos, 4);
  return v;
}

void trim_file(const std::string& path, std::int64_t last_epoch, std::int64_t batch_steps) {
  const auto read = skein::read_whole_file(path);
  if (!read) throw std::runtime_error("tensorboard: cannot read " + path);
  const std::string& bytes = *read;
  std::string kept;
  std::size_t pos = 0;
  while (bytes.size() - pos >= 12) {
    std::uint64_t len;
    std::memcpy(&len, bytes.data() + pos, 8);
    if (u32_at(bytes, pos + 8) != masked_crc32c(bytes.substr(pos, 8)) || len > bytes.size() - pos - 16) break;
    const std::string event = bytes.substr(pos + 12, len);
    if (u32_at(bytes, pos + 12 + len) != masked_crc32c(event)) break;
    if (covered(event, last_epoch, batch_steps)) kept.append(bytes, pos, 16 + len);
    pos += 16 + len;
  }
  if (kept.size() != bytes.size()) skein::write_file_atomic(path, kept);
}

}  // namespace

void keep_events_up_to(const std::string& dir, std::int64_t last_epoch, std::int64_t batch_steps) {
  boost::system::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (fs::directory_iterator it(dir), end; it != end; ++it)
    if (it->path().filename().string().rfind("events.out.tfevents.", 0) == 0 && fs::is_regular_file(it->status()))
      trim_file(it->path().string(), last_epoch, batch_steps);
}

}  // namespace skein_tb
