#include "skein/host/elf_section.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string_view>

namespace skein::core {

namespace {
constexpr std::uint64_t kMaxSectionBytes = 16u << 20;  // a manifest is a few KiB
}  // namespace

std::optional<std::string> read_elf_section(const std::string& path, const std::string& name) {
  // Mapped, not read: a huge file named like a plugin costs no memory.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block
  if (fd < 0) return std::nullopt;
  struct stat st {};
  void* base = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    base = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) return std::nullopt;
  const auto length = static_cast<std::size_t>(st.st_size);
  std::unique_ptr<void, std::function<void(void*)>> unmap(base, [length](void* p) { ::munmap(p, length); });
  const std::string_view file(static_cast<const char*>(base), length);
  // Every read below is bounds-checked: the file may be anything.
  auto fits = [&](std::uint64_t offset, std::uint64_t size) {
    return offset <= file.size() && size <= file.size() - offset;
  };
  Elf64_Ehdr eh;
  if (!fits(0, sizeof eh)) return std::nullopt;
  std::memcpy(&eh, file.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shstrndx >= eh.e_shnum)
    return std::nullopt;
  auto section = [&](std::size_t i, Elf64_Shdr& sh) {
    const std::uint64_t at = eh.e_shoff + i * sizeof(Elf64_Shdr);
    if (!fits(at, sizeof sh)) return false;
    std::memcpy(&sh, file.data() + at, sizeof sh);
    return true;
  };
  Elf64_Shdr names;
  if (!section(eh.e_shstrndx, names) || !fits(names.sh_offset, names.sh_size)) return std::nullopt;
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!section(i, sh) || sh.sh_name >= names.sh_size) return std::nullopt;
    const char* n = file.data() + names.sh_offset + sh.sh_name;
    const std::size_t max = names.sh_size - sh.sh_name;
    if (strnlen(n, max) != name.size() || std::memcmp(n, name.data(), name.size()) != 0) continue;
    if (sh.sh_type == SHT_NOBITS || !fits(sh.sh_offset, sh.sh_size) || sh.sh_size > kMaxSectionBytes)
      return std::nullopt;
    return std::string(file.substr(sh.sh_offset, sh.sh_size));
  }
  return std::nullopt;
}

}  // namespace skein::core
