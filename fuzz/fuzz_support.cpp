#include "fuzz_support.hpp"

#include <cxxabi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <typeinfo>

namespace skein_fuzz {

MemFile::MemFile(const char* name) {
  fd_ = ::memfd_create(name, MFD_CLOEXEC);
  if (fd_ < 0) {
    std::perror("memfd_create");
    std::abort();
  }
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

MemFile::~MemFile() {
  if (fd_ >= 0) ::close(fd_);
}

void MemFile::write(const void* data, std::size_t size) {
  if (::ftruncate(fd_, 0) != 0) finding("memfd: ftruncate failed");
  const char* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd_, p + done, size - done, static_cast<off_t>(done));
    if (n <= 0) finding("memfd: write failed");
    done += static_cast<std::size_t>(n);
  }
}

void finding(const std::string& what) {
  std::fprintf(stderr, "\n==skein-fuzz== FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

namespace {
std::string demangled(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? d.get() : name;
}
}  // namespace

void unexpected(const std::exception& e, const std::string& context) {
  finding(context + ": unexpected exception " + demangled(typeid(e).name()) + ": " + e.what());
}

void unexpected_unknown(const std::string& context) {
  finding(context + ": unexpected exception of a non-std type");
}

}  // namespace skein_fuzz
