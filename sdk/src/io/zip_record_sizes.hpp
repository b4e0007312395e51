#pragma once
// Checks the sizes a zip archive (torch.save's format) declares for its
// records before libtorch's reader allocates a buffer of each declared size.
#include <cstdint>
#include <map>
#include <string>

namespace skein {

// The size each record declares (what the reader allocates to read it), by
// its name less the archive's top folder ("data.pkl", "data/0"). Throws
// std::runtime_error naming the record when a declared size is more than the
// archive could hold: more than its stored bytes, or 1032 times its
// compressed bytes (deflate's bound). A file that is not a readable zip
// archive passes with no sizes: the reader reports it.
std::map<std::string, std::uint64_t> check_zip_record_sizes(const std::string& path);

}  // namespace skein
