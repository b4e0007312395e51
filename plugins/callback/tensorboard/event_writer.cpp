#include "event_writer.hpp"

#include <unistd.h>

#include <boost/crc.hpp>
#include <boost/filesystem.hpp>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace skein_tb {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

template <class T>
void little_endian(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof v);  // x86-64 and aarch64 Linux are little-endian
  out.append(bytes, sizeof v);
}

void field_bytes(std::string& out, int field, const std::string& bytes) {
  varint(out, static_cast<std::uint64_t>(field) << 3 | 2);
  varint(out, bytes.size());
  out += bytes;
}

std::string event_header(double wall_time) {
  std::string e;
  varint(e, 1 << 3 | 1);
  little_endian(e, wall_time);
  return e;
}

}  // namespace

std::uint32_t masked_crc32c(const std::string& data) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data.data(), data.size());
  const std::uint32_t c = crc.checksum();
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string event_file_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return "events.out.tfevents." + std::to_string(static_cast<long>(now_seconds())) + "." + host + "." +
         std::to_string(::getpid());
}

EventWriter::EventWriter(const std::string& path) : path_(path) {
  boost::filesystem::create_directories(boost::filesystem::path(path).parent_path());
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_) throw std::runtime_error("tensorboard: cannot create " + path_);
  std::string e = event_header(now_seconds());
  field_bytes(e, 3, "brain.Event:2");
  record(e);
  flush();
}

void EventWriter::scalar(const std::string& tag, std::int64_t step, float value) {
  std::string v;
  field_bytes(v, 1, tag);
  varint(v, 2 << 3 | 5);
  little_endian(v, value);
  std::string summary;
  field_bytes(summary, 1, v);
  std::string e = event_header(now_seconds());
  varint(e, 2 << 3 | 0);
  varint(e, static_cast<std::uint64_t>(step));
  field_bytes(e, 5, summary);
  record(e);
}

void EventWriter::record(const std::string& event) {
  std::string length;
  little_endian(length, static_cast<std::uint64_t>(event.size()));
  std::string framed = length;
  little_endian(framed, masked_crc32c(length));
  framed += event;
  little_endian(framed, masked_crc32c(event));
  out_.write(framed.data(), static_cast<std::streamsize>(framed.size()));
  if (!out_) throw std::runtime_error("tensorboard: cannot write " + path_);
}

}  // namespace skein_tb
