#define BOOST_TEST_MODULE npy
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <torch/torch.h>

#include "skein/dataset.hpp"
#include "skein/io/npy.hpp"
#include "skein/testing.hpp"

// The npy dataset plugin reading files that change under it: a file
// truncated or rewritten in place while a run reads it is one error naming
// the file (the mapping would otherwise end the process with SIGBUS or give
// mixed data); a new file renamed over the path changes nothing.

namespace {

using skein::testing::contains;
using skein::testing::message_of;

// 4096 rows of 4 float32 (64 KiB, 16 pages): rows past a truncation lie on
// pages wholly beyond the file's new end, whose reading raises SIGBUS.
constexpr std::int64_t kRows = 4096;

struct Fixture {
  Fixture() {
    write("x.npy", torch::arange(kRows * 4, torch::kFloat32).reshape({kRows, 4}));
    write("y.npy", torch::arange(kRows, torch::kLong).remainder(3));
  }

  // Writes `t` as the .npy file run_dir/name.
  std::string write(const std::string& name, const torch::Tensor& t) {
    return harness.write_file(name, skein::npy_bytes(t));
  }

  std::shared_ptr<const skein::SampleSource> open() {
    data = harness.create<skein::Dataset>("npy", {{"train_inputs", x}, {"train_targets", y}});
    return std::dynamic_pointer_cast<skein::StreamingDataset>(data)->train_source();
  }

  // What fetching `indices` threw (a std::runtime_error), or "".
  static std::string fetch_error(const skein::SampleSource& source, const std::vector<std::int64_t>& indices) {
    return message_of<std::runtime_error>([&] { source.fetch(indices, {}); });
  }

  // Sets the file's modification time to the year 2001, so that a rewrite
  // within the filesystem's timestamp tick still shows.
  static void age(const std::string& path) {
    const struct timespec times[2] = {{1000000000, 0}, {1000000000, 0}};
    BOOST_REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
  }

  skein::testing::Harness harness;
  std::string x = harness.run_dir() + "/x.npy", y = harness.run_dir() + "/y.npy";
  std::shared_ptr<skein::Dataset> data;
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(npy, Fixture)

BOOST_AUTO_TEST_CASE(a_file_truncated_between_batches_is_an_error_naming_it) {
  const auto source = open();
  const auto batch = source->fetch({0, kRows - 1}, {});
  BOOST_TEST(batch.inputs[1][3].item<float>() == kRows * 4 - 1);
  BOOST_REQUIRE(::truncate(x.c_str(), 200) == 0);  // as numpy.save over it starts: open with O_TRUNC
  for (const std::vector<std::int64_t>& rows : {std::vector<std::int64_t>{kRows - 1}, {0, 1}}) {
    const auto err = fetch_error(*source, rows);
    BOOST_TEST(contains(err, x + ": truncated to 200 bytes while the run reads it"), err);
  }
  // The targets file too.
  write("x.npy", torch::zeros({kRows, 4}, torch::kFloat32));
  const auto targets = open();
  BOOST_REQUIRE(::truncate(y.c_str(), 0) == 0);
  BOOST_TEST(contains(fetch_error(*targets, {0}), y + ": truncated to 0 bytes"));
}

BOOST_AUTO_TEST_CASE(a_file_rewritten_in_place_is_an_error_naming_it) {
  age(x);
  const auto source = open();
  BOOST_TEST(fetch_error(*source, {5}).empty());
  write("x.npy", torch::zeros({kRows, 4}, torch::kFloat32));  // same size, same inode, other data
  const auto err = fetch_error(*source, {5});
  BOOST_TEST(contains(err, x + ": modified in place while the run reads it"), err);
}

BOOST_AUTO_TEST_CASE(a_file_renamed_over_the_path_leaves_the_run_on_the_old_one) {
  const auto source = open();
  const std::string fresh = write("new.npy", torch::zeros({2, 4}, torch::kFloat32));
  BOOST_REQUIRE(std::rename(fresh.c_str(), x.c_str()) == 0);
  const auto batch = source->fetch({kRows - 1}, {});
  BOOST_TEST(batch.inputs[0][3].item<float>() == kRows * 4 - 1);
}

BOOST_AUTO_TEST_CASE(mapped_npy_checks_its_file) {
  age(x);
  const skein::MappedNpy mapped(x);
  BOOST_TEST(mapped.tensor().sizes() == torch::IntArrayRef({kRows, 4}));
  mapped.check();  // unchanged: no error
  BOOST_REQUIRE(::truncate(x.c_str(), 128) == 0);
  BOOST_TEST(contains(message_of<std::runtime_error>([&] { mapped.check(); }), x + ": truncated to 128 bytes"));
}

// Text from a file's header is capped in errors: a 20000-byte dtype or shape
// gives a short message.
BOOST_AUTO_TEST_CASE(long_header_values_are_capped_in_errors) {
  auto npy_with = [&](const std::string& descr, const std::string& shape) {
    const std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }\n";
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(dict.size() & 0xff);
    bytes += static_cast<char>(dict.size() >> 8);
    harness.write_file("x.npy", bytes + dict + std::string(8, '\0'));
    return message_of<std::runtime_error>([&] { skein::MappedNpy{x}; });
  };
  const std::string long_text(20000, 'z');
  auto err = npy_with("<" + long_text, "(1,)");
  BOOST_TEST(contains(err, x + ": unsupported dtype '<" + std::string(59, 'z') + "...' (20001 bytes)"), err);
  BOOST_TEST(err.size() < 200u + x.size(), err.size());
  err = npy_with(">" + long_text, "(1,)");
  BOOST_TEST(contains(err, "big-endian dtype '>zzz"), err);
  BOOST_TEST(err.size() < 300u + x.size(), err.size());
  err = npy_with("<f4", "(1" + long_text + ",)");  // not a number, though stoll reads its "1"
  BOOST_TEST(contains(err, x + ": bad shape (1zzz"), err);
  BOOST_TEST(err.size() < 200u + x.size(), err.size());
}

BOOST_AUTO_TEST_SUITE_END()
