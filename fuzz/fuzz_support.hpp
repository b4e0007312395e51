#pragma once
// What the fuzz targets share: an in-memory file with a path (so path-based
// readers see exactly the bytes libFuzzer gives), and one way to report a
// finding that is not a sanitizer's own: a message on stderr, then abort(),
// which libFuzzer records as a crash with the input that caused it.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

namespace skein_fuzz {

// A memfd, rewritten for every input; path() is /proc/self/fd/N, which
// opens as a fresh file description, so readers start at offset 0.
class MemFile {
 public:
  explicit MemFile(const char* name);
  ~MemFile();
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  void write(const void* data, std::size_t size);
  void write(const std::string& text) { write(text.data(), text.size()); }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// Reports a broken property of the code under test and aborts.
[[noreturn]] void finding(const std::string& what);
// An exception of a type the code under test must not let escape.
[[noreturn]] void unexpected(const std::exception& e, const std::string& context);
[[noreturn]] void unexpected_unknown(const std::string& context);

// Runs `f`, which must not throw: an exception is a finding named `context`.
template <class F>
void must_not_throw(const std::string& context, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    unexpected(e, context);
  } catch (...) {
    unexpected_unknown(context);
  }
}

// Runs `f`, which may throw only Allowed (its contract): returns that
// exception's message, or nullopt when `f` returns. Any other exception is
// a finding named `context`.
template <class Allowed, class F>
std::optional<std::string> error_of(const std::string& context, F&& f) {
  std::optional<std::string> error;
  must_not_throw(context, [&] {
    try {
      f();
    } catch (const Allowed& e) {
      error = e.what();
    }
  });
  return error;
}

}  // namespace skein_fuzz
