#include "csv_table.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <boost/tokenizer.hpp>

namespace skein_csv {

namespace {

constexpr char kQuote = '"';
constexpr const char* kUtf8Bom = "\xEF\xBB\xBF";

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string trimmed(const std::string& s) {
  const auto first = std::find_if_not(s.begin(), s.end(), is_blank);
  const auto last = std::find_if_not(s.rbegin(), s.rend(), is_blank).base();
  return first < last ? std::string(first, last) : std::string();
}

// from_chars takes no leading '+'; a CSV written by hand or by another tool may have one.
const char* skip_plus(const char* first, const char* last) {
  return (last - first > 1 && *first == '+' && first[1] != '-') ? first + 1 : first;
}

}  // namespace

CsvReader::CsvReader(std::istream& in, std::string name, char delimiter)
    : in_(in), name_(std::move(name)), delimiter_(delimiter) {}

bool CsvReader::next(Row& row) {
  std::string line;
  while (std::getline(in_, line)) {
    ++line_;
    if (line_ == 1 && line.rfind(kUtf8Bom, 0) == 0) line.erase(0, 3);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (std::all_of(line.begin(), line.end(), is_blank)) continue;
    // Without an escape character every '"' toggles quoting, so an odd count
    // leaves a field open; fields spanning lines are not supported.
    if (std::count(line.begin(), line.end(), kQuote) % 2 != 0)
      throw std::runtime_error(name_ + ":" + std::to_string(line_) +
                               ": unterminated quote (a quoted field must end on its line)");
    // No escape characters: a backslash is an ordinary character, as in pandas.
    const boost::escaped_list_separator<char> separator(std::string(), std::string(1, delimiter_),
                                                        std::string(1, kQuote));
    const boost::tokenizer<boost::escaped_list_separator<char>> tokens(line, separator);
    row.line = line_;
    row.fields.clear();
    for (const std::string& token : tokens) row.fields.push_back(trimmed(token));
    return true;
  }
  if (in_.bad()) throw std::runtime_error(name_ + ": read error after line " + std::to_string(line_));
  return false;
}

NumberStatus parse_float(const std::string& text, float& out) {
  const char* last = text.data() + text.size();
  const char* first = skip_plus(text.data(), last);
  const auto [end, ec] = std::from_chars(first, last, out);
  if (ec == std::errc::invalid_argument || end != last) return NumberStatus::not_a_number;
  if (ec == std::errc::result_out_of_range) {
    // Too large or too small for float32: tell them apart in a wider type.
    long double wide = 0;
    if (std::from_chars(first, last, wide).ec != std::errc() ||
        std::fabs(wide) > std::numeric_limits<float>::max())
      return NumberStatus::out_of_range;
    out = static_cast<float>(wide);  // rounds to 0 or a subnormal
  }
  return std::isfinite(out) ? NumberStatus::ok : NumberStatus::not_finite;
}

std::optional<long long> parse_integer(const std::string& text) {
  const char* last = text.data() + text.size();
  const char* first = skip_plus(text.data(), last);
  long long value = 0;
  const auto [end, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || end != last || first == last) return std::nullopt;
  return value;
}

}  // namespace skein_csv
