#include "skein/training/run/log_stream.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "skein/io/atomic_file.hpp"
#include "skein/detail/warning_log.hpp"
#include "skein/errors.hpp"

namespace skein::core {

int TeeBuf::overflow(int c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const auto ch = traits_type::to_char_type(c);
  const bool ok = a_->sputc(ch) != traits_type::eof() && b_->sputc(ch) != traits_type::eof();
  if (ch == '\n') b_->pubsync();
  return ok ? c : traits_type::eof();
}

std::streamsize TeeBuf::xsputn(const char* s, std::streamsize n) {
  const auto wa = a_->sputn(s, n);
  const auto wb = b_->sputn(s, n);
  if (std::memchr(s, '\n', static_cast<std::size_t>(n))) b_->pubsync();
  return std::min(wa, wb);
}

int TeeBuf::sync() {
  const int ra = a_->pubsync();
  const int rb = b_->pubsync();
  return (ra == 0 && rb == 0) ? 0 : -1;
}

NullStream::NullStream() : std::ostream(nullptr) { rdbuf(&buf_); }

RunLog::RunLog(bool main, bool echo)
    : tee_(echo ? std::cout.rdbuf() : static_cast<std::streambuf*>(&null_), &pending_), out_(nullptr) {
  out_.rdbuf(main ? static_cast<std::streambuf*>(&tee_) : &null_);
}

void RunLog::attach(const std::string& path, bool append) {
  if (out_.rdbuf() != &tee_) return;
  const int fd = open_no_follow(path, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC));
  file_ = std::make_unique<__gnu_cxx::stdio_filebuf<char>>(fd, std::ios::out | (append ? std::ios::app : std::ios::out));
  if (!file_->is_open()) throw std::runtime_error("cannot write " + path);
  const std::string before = pending_.str();
  file_->sputn(before.data(), static_cast<std::streamsize>(before.size()));
  file_->pubsync();
  tee_.set_second(file_.get());
}

void RunLog::note(const std::string& line) {
  if (out_.rdbuf() != &tee_) return;
  out_.flush();  // keeps the file's order of lines
  std::streambuf& to = file_ ? static_cast<std::streambuf&>(*file_) : pending_;
  to.sputn(line.data(), static_cast<std::streamsize>(line.size()));
  to.pubsync();
}

void RunLog::set_main(bool main, const std::string& path) {
  const bool was = out_.rdbuf() == &tee_;
  if (main == was) return;
  out_.flush();
  out_.rdbuf(main ? static_cast<std::streambuf*>(&tee_) : &null_);
  if (main && !file_ && !path.empty()) attach(path, true);
}

WarningLogScope::WarningLogScope(RunLog& log) {
  set_warning_log([&log](const std::string& line) { log.note(line); });
}

WarningLogScope::~WarningLogScope() { set_warning_log(nullptr); }

}  // namespace skein::core
