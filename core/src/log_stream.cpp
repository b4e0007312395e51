#include "skein/core/log_stream.hpp"

namespace skein::core {

int TeeBuf::overflow(int c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const auto ch = traits_type::to_char_type(c);
  const bool ok = a_->sputc(ch) != traits_type::eof() && b_->sputc(ch) != traits_type::eof();
  return ok ? c : traits_type::eof();
}

std::streamsize TeeBuf::xsputn(const char* s, std::streamsize n) {
  const auto wa = a_->sputn(s, n);
  const auto wb = b_->sputn(s, n);
  return std::min(wa, wb);
}

int TeeBuf::sync() {
  const int ra = a_->pubsync();
  const int rb = b_->pubsync();
  return (ra == 0 && rb == 0) ? 0 : -1;
}

NullStream::NullStream() : std::ostream(nullptr) { rdbuf(&buf_); }

}  // namespace skein::core
