#include "skein/training/checkpoint/checkpoint_blob.hpp"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include <boost/filesystem.hpp>

#include "skein/detail/json.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

// CBOR of {file name: its bytes}: nlohmann_json frames it, no format of our own.
std::string pack_checkpoint_dir(const std::string& dir) {
  nlohmann::json files = nlohmann::json::object();
  for (fs::directory_iterator it(dir), end; it != end; ++it) {
    if (!fs::is_regular_file(it->symlink_status())) continue;
    std::ifstream in(it->path().string(), std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) throw std::runtime_error("cannot read " + it->path().string());
    files[it->path().filename().string()] = nlohmann::json::binary(bytes);
  }
  const std::vector<std::uint8_t> cbor = nlohmann::json::to_cbor(files);
  return std::string(cbor.begin(), cbor.end());
}

void unpack_checkpoint_dir(const std::string& bytes, const std::string& dir) {
  const nlohmann::json files = nlohmann::json::from_cbor(bytes.begin(), bytes.end());
  fs::create_directories(dir);
  for (const auto& [name, content] : files.items()) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      throw std::runtime_error("a checkpoint sent by the leader names a file '" + name + "'");
    const auto& data = content.get_binary();
    std::ofstream out((fs::path(dir) / name).string(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    if (!out) throw std::runtime_error("cannot write " + (fs::path(dir) / name).string());
  }
}

}  // namespace skein::core
