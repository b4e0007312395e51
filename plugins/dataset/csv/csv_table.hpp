#pragma once
// Reading delimited text files (CSV, TSV, ...) row by row, and the number
// parsing the csv dataset needs. Nothing here knows about tensors or options.
#include <cstddef>
#include <istream>
#include <optional>
#include <string>
#include <vector>

namespace skein_csv {

// One non-blank line split into fields (surrounding spaces and tabs trimmed).
struct Row {
  std::size_t line = 0;  // 1-based line in the file
  std::vector<std::string> fields;
};

// Splits lines with Boost.Tokenizer's escaped_list_separator: `delimiter`
// separates fields, '"' quotes them (a delimiter inside quotes is kept).
// Skips blank lines, a UTF-8 byte order mark and the '\r' of CRLF lines.
// `name` (the file's path) prefixes errors.
class CsvReader {
 public:
  CsvReader(std::istream& in, std::string name, char delimiter);

  // The next row, or false at the end of the input. Throws std::runtime_error
  // "NAME:LINE: ..." for a line with an unterminated quote.
  bool next(Row& row);
  const std::string& name() const { return name_; }

 private:
  std::istream& in_;
  std::string name_;
  char delimiter_;
  std::size_t line_ = 0;
};

enum class NumberStatus { ok, not_a_number, not_finite, out_of_range };

// Parses a whole field as a float32 ("1", "-2.5e3", "+.5"). nan and inf are
// recognised but reported as not_finite; values beyond float32 as
// out_of_range; values too small for float32 become 0 (or a subnormal).
NumberStatus parse_float(const std::string& text, float& out);

// The field as a whole integer ("7", "-3", "+12"), or nothing.
std::optional<long long> parse_integer(const std::string& text);

}  // namespace skein_csv
