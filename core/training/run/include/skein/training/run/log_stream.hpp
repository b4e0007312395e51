#pragma once
#include <ext/stdio_filebuf.h>

#include <fstream>
#include <memory>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>

#include "skein/detail/export.hpp"

namespace skein::core {

// A streambuf writing to two others (stdout and the run's train.log). The
// second is synced at every line end, so a crash loses no finished line.
class SKEIN_EXPORT TeeBuf : public std::streambuf {
 public:
  TeeBuf(std::streambuf* a, std::streambuf* b) : a_(a), b_(b) {}
  void set_second(std::streambuf* b) { b_ = b; }

 protected:
  int overflow(int c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  std::streambuf* a_;
  std::streambuf* b_;
};

// Discards everything (the log of non-main ranks).
class SKEIN_EXPORT NullBuf : public std::streambuf {
 protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

// A stream that discards everything.
class SKEIN_EXPORT NullStream : public std::ostream {
 public:
  NullStream();

 private:
  NullBuf buf_;
};

// The run's log: on rank 0, stdout at once and <run_dir>/train.log from
// attach() on (what came before is written first), so that nothing is written
// into the run directory before the run is known to start; elsewhere nothing.
class SKEIN_EXPORT RunLog {
 public:
  // `echo`: stdout too (sessions may keep their program's stdout clean).
  explicit RunLog(bool main, bool echo = true);
  std::ostream& stream() { return out_; }
  // Throws std::runtime_error when the file cannot be opened (or is a link).
  void attach(const std::string& path, bool append);
  // A line for the log file only (warnings, which stderr shows already).
  void note(const std::string& line);
  // Live recovery made this process the run's main (its old main was lost),
  // or no longer (it was left out): from now on it writes the log, appending
  // to `path`, or nothing.
  void set_main(bool main, const std::string& path);

 private:
  std::stringbuf pending_;
  std::unique_ptr<__gnu_cxx::stdio_filebuf<char>> file_;  // opened without following links
  TeeBuf tee_;
  NullBuf null_;
  std::ostream out_;
};

// Routes skein::warn's lines into a RunLog's file while it lives.
class SKEIN_EXPORT WarningLogScope {
 public:
  explicit WarningLogScope(RunLog& log);
  ~WarningLogScope();
  WarningLogScope(const WarningLogScope&) = delete;
  WarningLogScope& operator=(const WarningLogScope&) = delete;
};

}  // namespace skein::core
