#pragma once
// IDX files for tests: the format's writer, used by this plugin's test and by
// the tests that train on IDX data (tests/). Library skein_idx_test_files.
#include <cstdint>
#include <string>
#include <vector>

namespace idx_test {

// Writes an IDX file of unsigned bytes (gzip-compressed when `gzip`).
void write_idx(const std::string& path, const std::vector<std::uint32_t>& dims,
               const std::vector<std::uint8_t>& data, bool gzip);
// Writes a tiny MNIST-like dataset (4 files: train-* and t10k-*) into `dir`:
// class i's images hold a bright bar on a row that depends on i (learnable).
void write_tiny_mnist(const std::string& dir, std::uint32_t train, std::uint32_t test, bool gzip);

}  // namespace idx_test
