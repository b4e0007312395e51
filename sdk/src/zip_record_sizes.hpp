#pragma once
// Checks the sizes a zip archive (torch.save's format) declares for its
// records before libtorch's reader allocates a buffer of each declared size.
#include <string>

namespace skein {

// Throws std::runtime_error naming the record when a record's declared size
// is more than the archive could hold: more than its stored bytes, or 1032
// times its compressed bytes (deflate's bound). A file that is not a
// readable zip archive passes: the reader reports it.
void check_zip_record_sizes(const std::string& path);

}  // namespace skein
