#pragma once
// Quoting a value read from data (a CSV cell, a file header's text) in an
// error message, so that a 50 MB field cannot flood the terminal and the log.
#include <cstddef>
#include <string>

namespace skein {

namespace detail {

// The first bytes of `value`, at most `max`, cut at a UTF-8 character
// boundary, with control characters but tab as '?' (a message stays one line).
inline std::string value_head(const std::string& value, std::size_t max) {
  std::size_t cut = value.size();
  if (cut > max) {
    cut = max;
    while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;  // a continuation byte
  }
  std::string head = value.substr(0, cut);
  for (char& c : head)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') c = '?';
  return head;
}

inline std::string size_note(const std::string& value) { return " (" + std::to_string(value.size()) + " bytes)"; }

}  // namespace detail

// `value`, or past `max` bytes its head and "... (N bytes)".
inline std::string capped(const std::string& value, std::size_t max = 60) {
  const std::string head = detail::value_head(value, max);
  return value.size() <= max ? head : head + "..." + detail::size_note(value);
}

// The same in single quotes: 'value', or 'head...' (N bytes).
inline std::string quoted(const std::string& value, std::size_t max = 60) {
  const std::string head = "'" + detail::value_head(value, max);
  return value.size() <= max ? head + "'" : head + "...'" + detail::size_note(value);
}

}  // namespace skein
