#pragma once
#include <ostream>
#include <streambuf>

#include "skein/export.hpp"

namespace skein::core {

// A streambuf writing to two others (stdout and the run's train.log).
class SKEIN_EXPORT TeeBuf : public std::streambuf {
 public:
  TeeBuf(std::streambuf* a, std::streambuf* b) : a_(a), b_(b) {}

 protected:
  int overflow(int c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  std::streambuf* a_;
  std::streambuf* b_;
};

// A stream that discards everything (the log of non-main ranks).
class SKEIN_EXPORT NullStream : public std::ostream {
 public:
  NullStream();

 private:
  class NullBuf : public std::streambuf {
   protected:
    int overflow(int c) override { return traits_type::not_eof(c); }
    std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
  } buf_;
};

}  // namespace skein::core
