#include "skein/host/slurm_lists.hpp"

#include <cctype>
#include <sstream>

#include "skein/errors.hpp"

namespace skein::core {

namespace {

// More hosts than any cluster has: a bound on what a typo like "n[0-99999999]" expands to.
constexpr std::size_t kMaxEntries = 1 << 16;

[[noreturn]] void malformed(const std::string& variable, const std::string& value, const std::string& what,
                            const std::string& why) {
  throw ConfigError("environment variable " + variable + "='" + value + "' is not " + what + ": " + why);
}

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;  // 9 digits fit an int
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (s.empty() || s.back() == sep) parts.push_back("");
  return parts;
}

class HostListParser {
 public:
  HostListParser(const std::string& list, const std::string& variable) : list_(list), variable_(variable) {}

  std::vector<std::string> expand() const {
    std::vector<std::string> hosts;
    for (const std::string& entry : entries()) {
      for (std::string& host : expand_entry(entry)) {
        hosts.push_back(std::move(host));
        if (hosts.size() > kMaxEntries) fail("more than " + std::to_string(kMaxEntries) + " hosts");
      }
    }
    return hosts;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { malformed(variable_, list_, "a Slurm host list", why); }

  // The list split at the commas outside brackets.
  std::vector<std::string> entries() const {
    std::vector<std::string> out(1);
    bool in_brackets = false;
    for (char c : list_) {
      if (std::isspace(static_cast<unsigned char>(c))) fail("it contains white space");
      if (c == '[' && in_brackets) fail("'[' inside brackets");
      if (c == ']' && !in_brackets) fail("']' without '['");
      if (c == '[' || c == ']') in_brackets = (c == '[');
      if (c == ',' && !in_brackets) {
        out.emplace_back();
      } else {
        out.back() += c;
      }
    }
    if (in_brackets) fail("'[' is not closed");
    for (const std::string& e : out)
      if (e.empty()) fail("an empty host name");
    return out;
  }

  // One name with its bracket groups multiplied out, the first group outermost.
  std::vector<std::string> expand_entry(const std::string& entry) const {
    std::vector<std::string> names{""};
    std::size_t pos = 0;
    while (pos < entry.size()) {
      const std::size_t open = entry.find('[', pos);
      const std::string literal = entry.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
      for (std::string& n : names) n += literal;
      if (open == std::string::npos) break;
      const std::size_t close = entry.find(']', open);  // entries() saw it closed
      const std::vector<std::string> numbers = expand_group(entry.substr(open + 1, close - open - 1));
      std::vector<std::string> longer;
      for (const std::string& n : names)
        for (const std::string& number : numbers) {
          longer.push_back(n + number);
          if (longer.size() > kMaxEntries) fail("more than " + std::to_string(kMaxEntries) + " hosts");
        }
      names = std::move(longer);
      pos = close + 1;
    }
    return names;
  }

  // "01-03,7" -> 01 02 03 7: each range padded to the width of its lower bound.
  std::vector<std::string> expand_group(const std::string& group) const {
    if (group.empty()) fail("empty brackets");
    std::vector<std::string> numbers;
    for (const std::string& range : split(group, ',')) {
      const std::size_t dash = range.find('-');
      const std::string low = range.substr(0, dash);
      const std::string high = dash == std::string::npos ? low : range.substr(dash + 1);
      if (!all_digits(low) || !all_digits(high)) fail("'[" + group + "]' holds '" + range + "', not a number or range");
      const long from = std::stol(low), to = std::stol(high);
      if (from > to) fail("the range '" + range + "' runs backwards");
      if (static_cast<std::size_t>(to - from) >= kMaxEntries)
        fail("more than " + std::to_string(kMaxEntries) + " hosts");
      for (long v = from; v <= to; ++v) {
        std::string digits = std::to_string(v);
        if (digits.size() < low.size()) digits.insert(0, low.size() - digits.size(), '0');
        numbers.push_back(std::move(digits));
      }
    }
    return numbers;
  }

  const std::string& list_;
  const std::string& variable_;
};

}  // namespace

std::vector<std::string> expand_slurm_hostlist(const std::string& list, const std::string& variable) {
  return HostListParser(list, variable).expand();
}

std::vector<int> expand_slurm_tasks_per_node(const std::string& value, const std::string& variable) {
  auto fail = [&](const std::string& why) { malformed(variable, value, "Slurm's tasks per node", why); };
  std::vector<int> counts;
  for (const std::string& item : split(value, ',')) {
    // "N" or "N(xR)": N tasks on each of R nodes.
    std::string tasks = item, repeat = "1";
    const std::size_t paren = item.find("(x");
    if (paren != std::string::npos) {
      if (item.back() != ')') fail("'" + item + "' is not N or N(xR)");
      tasks = item.substr(0, paren);
      repeat = item.substr(paren + 2, item.size() - paren - 3);
    }
    if (!all_digits(tasks) || !all_digits(repeat)) fail("'" + item + "' is not N or N(xR)");
    const int n = std::stoi(tasks), r = std::stoi(repeat);
    if (n < 1 || r < 1) fail("'" + item + "' counts no tasks");
    if (counts.size() + static_cast<std::size_t>(r) > kMaxEntries)
      fail("more than " + std::to_string(kMaxEntries) + " nodes");
    counts.insert(counts.end(), static_cast<std::size_t>(r), n);
  }
  return counts;
}

}  // namespace skein::core
