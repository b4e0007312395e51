#pragma once
// Writes TensorBoard event files: TFRecord framing (little-endian length,
// masked CRC-32C of the length, data, masked CRC-32C of the data) around
// protobuf-encoded Event messages. Only what scalars need is encoded:
//   Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
#include <cstdint>
#include <fstream>
#include <string>

namespace skein_tb {

// CRC-32C (Castagnoli) of `data`, masked as TFRecord does.
std::uint32_t masked_crc32c(const std::string& data);

// TensorBoard's name for a new event file: events.out.tfevents.<time>.<host>.<pid>.
std::string event_file_name();

class EventWriter {
 public:
  // Creates the file `path` (and the directories above it) and writes the
  // file_version record "brain.Event:2".
  explicit EventWriter(const std::string& path);
  void scalar(const std::string& tag, std::int64_t step, float value);
  void flush() { out_.flush(); }

 private:
  void record(const std::string& event);
  std::string path_;
  std::ofstream out_;
};

}  // namespace skein_tb
