#include "skein/core/elf_section.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace skein::core {

std::optional<std::string> read_elf_section(const std::string& path, const std::string& name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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
    if (sh.sh_type == SHT_NOBITS || !fits(sh.sh_offset, sh.sh_size)) return std::nullopt;
    return file.substr(sh.sh_offset, sh.sh_size);
  }
  return std::nullopt;
}

}  // namespace skein::core
