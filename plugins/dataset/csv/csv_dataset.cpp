// Dataset "csv": one sample per row of a delimited text file. Every column but
// the target is a float32 input; the target is a class label (classification:
// labels become class ids 0..C-1, the mapping saved in the run directory as
// csv_classes.json) or a float32 value (regression: one model output).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <unordered_map>

#include <boost/filesystem.hpp>
#include <torch/types.h>

#include "csv_table.hpp"
#include "skein/io/atomic_file.hpp"
#include "skein/dataset.hpp"
#include "skein/io/input_file.hpp"
#include "skein/errors.hpp"
#include "skein/detail/json.hpp"
#include "skein/plugin.hpp"
#include "skein/io/quoted.hpp"
#include "skein/run.hpp"

// Declared once: the schema and CsvOptions (read_settings checks them into Settings).
#define CSV_OPTIONS(X)                                                                                    \
  X(train, string, nullptr, "Training CSV file")                                                          \
  X(test, string, "\"\"", "Test CSV file with the same columns (empty: no test split)")                   \
  X(valid, string, "\"\"",                                                                                \
    "Validation CSV file with the same columns, used instead of valid_split (empty: valid_split)")       \
  X(target, string, "\"\"", "Target column: a header name or a 0-based index (empty: the last column)")   \
  X(header, choice, "\"auto\"",                                                                           \
    "Whether the first row is a header; auto: when a non-target field is not a number or when it is "     \
    "0,1,...,N-1 (a warning says which an all-number first row was taken for)",                         \
    SKEIN_CHOICES("auto|yes|no"))                                                                         \
  X(task, choice, "\"classification\"",                                                                   \
    "classification (labels to class ids, saved as csv_classes.json), binary (two labels "               \
    "to 0/1 float targets, one output, for bce_with_logits; saved likewise) or regression "              \
    "(float targets, one output)",                                                                       \
    SKEIN_CHOICES("classification|binary|regression"))                                                    \
  X(max_classes, integer, "1000", "Most distinct labels a classification target may hold (more is an error)", \
    SKEIN_RANGE("[2, )"))                                                                                 \
  X(delimiter, string, "\",\"", "Field separator, one character (e.g. \";\" or \"\\t\")")

namespace {

SKEIN_OPTIONS_STRUCT(CsvOptions, CSV_OPTIONS)

using skein_csv::CsvReader;
using skein_csv::NumberStatus;
using skein_csv::Row;

enum class Task { classification, binary, regression };
enum class HeaderMode { automatic, yes, no };

// The options, checked.
struct Settings {
  std::string train, test, valid, target;
  HeaderMode header = HeaderMode::automatic;
  Task task = Task::classification;
  char delimiter = ',';
  std::int64_t max_classes = 1000;
};

using Key = CsvOptions::names;  // option names, for messages

// `header`: the value of option header, one of its choices.
HeaderMode header_mode(const std::string& header) {
  if (header == "auto") return HeaderMode::automatic;
  return header == "yes" ? HeaderMode::yes : HeaderMode::no;
}

// `task`: the value of option task, one of its choices.
Task task_of(const std::string& task) {
  if (task == "classification") return Task::classification;
  return task == "binary" ? Task::binary : Task::regression;
}

char delimiter_of(const skein::Options& opt, const std::string& delimiter) {
  if (delimiter.size() != 1) opt.fail(Key::delimiter, "must be one character, got '" + delimiter + "'");
  if (delimiter == "\"" || delimiter == "\n" || delimiter == "\r")
    opt.fail(Key::delimiter, "cannot be the quote character or a line break");
  return delimiter[0];
}

Settings read_settings(const skein::Options& opt) {
  const CsvOptions o(opt);
  Settings s;
  s.train = o.train;
  if (s.train.empty()) opt.fail(Key::train, "must name a CSV file");
  s.test = o.test;
  s.valid = o.valid;
  s.target = o.target;
  s.header = header_mode(o.header);
  s.task = task_of(o.task);
  s.delimiter = delimiter_of(opt, o.delimiter);
  s.max_classes = o.max_classes;
  return s;
}

// The file named by option `key`, open for reading. A file that cannot be
// read is a configuration error (exit 2), like any option naming nothing.
std::ifstream open_file(const skein::Options& opt, const std::string& key, const std::string& path) {
  const std::string prefix = opt.owner() + ": option '" + key + "': cannot read '" + path + "'";
  if (boost::filesystem::is_directory(path)) throw skein::OptionError(key, prefix + " (a directory)");
  try {
    skein::regular_file_size(path);  // a FIFO would block the open, /dev/zero never end
  } catch (const std::runtime_error& e) {
    throw skein::OptionError(key, opt.owner() + ": option '" + key + "': " + e.what());
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw skein::OptionError(key, prefix + (errno ? " (" + std::string(std::strerror(errno)) + ")" : ""));
  return in;
}

std::string at_line(const std::string& file, std::size_t line) {
  return file + ":" + std::to_string(line) + ": ";
}

std::string fields_text(std::size_t n) { return std::to_string(n) + (n == 1 ? " field" : " fields"); }

// How the columns are used, decided from the train file's first row.
struct Layout {
  std::size_t columns = 0;
  std::size_t target = 0;          // 0-based
  std::vector<std::string> names;  // the header row; empty without one

  std::size_t features() const { return columns - 1; }
  // "FILE:LINE: column 3 ('petal_width')" (1-based; the name when there is a header).
  std::string where(const std::string& file, std::size_t line, std::size_t column) const {
    std::string text = at_line(file, line) + "column " + std::to_string(column + 1);
    if (!names.empty()) text += " (" + skein::quoted(names[column]) + ")";
    return text;
  }
};

// Blank fields prove nothing (a data row may miss a value); nan and inf look
// like numbers, so that a data row holding them is refused, not taken as a header.
bool looks_numeric(const std::string& field) {
  float ignored = 0;
  return field.empty() || skein_csv::parse_float(field, ignored) != NumberStatus::not_a_number;
}

// Whether a first row is a header, and whether option header "auto" guessed
// it (the user then hears which way).
struct HeaderChoice {
  bool header = false;
  bool guessed = false;
};

// A field other than the target that is not a number: the row cannot be data.
bool holds_a_name(const Row& first, std::optional<std::size_t> target) {
  for (std::size_t i = 0; i < first.fields.size(); ++i)
    if (i != target && !looks_numeric(first.fields[i])) return true;
  return false;
}

// "0,1,...,N-1": the column names pandas writes for a DataFrame made from an
// array (to_csv(index=False)). A data row is hardly ever exactly that.
bool is_numbered_header(const Row& first) {
  for (std::size_t i = 0; i < first.fields.size(); ++i)
    if (first.fields[i] != std::to_string(i)) return false;
  return true;
}

// Option header "auto" on a first row: a header when it holds a name (no
// guess: as data it would fail); else, a guess, a header when it numbers the
// columns 0..N-1 and data otherwise.
HeaderChoice guess_header(const Row& first, std::optional<std::size_t> target) {
  if (holds_a_name(first, target)) return {true, false};
  return {is_numbered_header(first), true};
}

// The column option `target` names: "" the last, a name in `names` (the
// header; empty without one), else a 0-based index (negative: from the end).
std::optional<std::size_t> target_column(const std::string& target, const std::vector<std::string>& names,
                                         std::size_t columns) {
  if (target.empty()) return columns - 1;
  const auto named = std::find(names.begin(), names.end(), target);
  if (named != names.end()) return static_cast<std::size_t>(named - names.begin());
  const auto index = skein_csv::parse_integer(target);
  const auto n = static_cast<long long>(columns);
  if (!index || *index < -n || *index >= n) return std::nullopt;
  return static_cast<std::size_t>(*index < 0 ? *index + n : *index);
}

// Whether the train file's first row is a header (option header, or "auto").
HeaderChoice train_header(const Settings& s, const Row& first) {
  if (s.header != HeaderMode::automatic) return {s.header == HeaderMode::yes, false};
  // A target given by name that the first row holds: that row is the header.
  const auto& fields = first.fields;
  if (!s.target.empty() && !skein_csv::parse_integer(s.target) &&
      std::find(fields.begin(), fields.end(), s.target) != fields.end())
    return {true, false};
  return guess_header(first, target_column(s.target, {}, fields.size()));
}

// The warning saying which way "auto" took an all-number first row.
std::string header_guess_text(const std::string& file, const Row& first, bool header) {
  if (header)
    return file + ": header \"auto\" took the first row (0,1,...," + std::to_string(first.fields.size() - 1) +
           ": the column names pandas writes for unnamed columns) as a header; set header \"no\" if it is data";
  return file + ": header \"auto\" took the first row, all numbers, as data; set header \"yes\" if it is a header";
}

// "a, b, c", each name capped and at most 20 of them, for messages.
std::string joined(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 20;
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) text += (i ? ", " : "") + skein::capped(names[i]);
  if (names.size() > kShown) text += ", ... (" + std::to_string(names.size()) + " columns)";
  return text;
}

// Why option `target` names no column of the train file (a ConfigError).
[[noreturn]] void bad_target(const Settings& s, const skein::Options& opt, const Layout& layout) {
  if (skein_csv::parse_integer(s.target))
    opt.fail(Key::target, "is column index " + s.target + ", but " + s.train + " has " +
                           std::to_string(layout.columns) + " columns (0-based)");
  if (!layout.names.empty())
    opt.fail(Key::target, "names '" + s.target + "', which is no column of " + s.train + " (columns: " +
                           joined(layout.names) + ")");
  opt.fail(Key::target, "names '" + s.target + "', but " + s.train + " has no header row" +
                         (s.header == HeaderMode::no ? " (option header is \"no\")"
                                                     : " (its first row is all numbers; set header \"yes\")"));
}

Layout train_layout(const Settings& s, const skein::Options& opt, const Row& first, bool header) {
  Layout layout;
  layout.columns = first.fields.size();
  if (layout.columns < 2)
    throw std::runtime_error(at_line(s.train, first.line) + fields_text(layout.columns) +
                             "; a csv dataset needs at least one input column and the target");
  if (header) layout.names = first.fields;
  const auto target = target_column(s.target, layout.names, layout.columns);
  if (!target) bad_target(s, opt, layout);
  if (std::count(layout.names.begin(), layout.names.end(), s.target) > 1)
    opt.fail(Key::target, "names '" + s.target + "', which heads more than one column of " + s.train);
  layout.target = *target;
  return layout;
}

// A test or validation file's first row is a header as configured; with
// "auto" when it repeats the train header, else as guess_header says.
HeaderChoice test_header(const Settings& s, const Layout& layout, const Row& first) {
  if (s.header != HeaderMode::automatic) return {s.header == HeaderMode::yes, false};
  if (!layout.names.empty() && first.fields == layout.names) return {true, false};
  return guess_header(first, layout.target);
}

// A test or validation header must name the train file's columns, in the same order.
void check_test_header(const Settings& s, const std::string& file, const Layout& layout, const Row& header) {
  const std::string where = at_line(file, header.line);
  if (header.fields.size() != layout.columns)
    throw std::runtime_error(where + fields_text(header.fields.size()) + ", expected " +
                             std::to_string(layout.columns) + " as in " + s.train);
  for (std::size_t i = 0; i < layout.names.size(); ++i)
    if (header.fields[i] != layout.names[i])
      throw std::runtime_error(where + "column " + std::to_string(i + 1) + " is " + skein::quoted(header.fields[i]) +
                               ", but " + skein::quoted(layout.names[i]) + " in " + s.train +
                               " (a test or validation file must have the train file's columns)");
}

// The data rows of one file: inputs row-major [rows, features], and the
// target field of each row as text, with its line for later errors.
struct Table {
  std::string file;
  std::vector<float> inputs;
  std::vector<std::string> targets;
  std::vector<std::size_t> lines;
  std::int64_t rows() const { return static_cast<std::int64_t>(targets.size()); }
};

std::string number_problem(const std::string& text, NumberStatus status) {
  switch (status) {
    case NumberStatus::ok: break;
    case NumberStatus::not_a_number:
      return text.empty() ? "empty field (missing values are not supported)" : skein::quoted(text) + " is not a number";
    case NumberStatus::not_finite: return skein::quoted(text) + " is not finite (nan and inf are refused)";
    case NumberStatus::out_of_range: return skein::quoted(text) + " is out of float32 range";
  }
  return "";
}

float number(const Table& t, const Layout& layout, std::size_t line, std::size_t column, const std::string& text) {
  float value = 0;
  const auto status = skein_csv::parse_float(text, value);
  if (status != NumberStatus::ok)
    throw std::runtime_error(layout.where(t.file, line, column) + ": " + number_problem(text, status));
  return value;
}

// `expected` completes "N fields, expected M" (e.g. " as in train.csv").
void add_row(Table& t, const Layout& layout, const Row& row, const std::string& expected) {
  if (row.fields.size() != layout.columns)
    throw std::runtime_error(at_line(t.file, row.line) + fields_text(row.fields.size()) + ", expected " +
                             std::to_string(layout.columns) + expected);
  for (std::size_t i = 0; i < layout.columns; ++i)
    if (i != layout.target) t.inputs.push_back(number(t, layout, row.line, i, row.fields[i]));
  t.targets.push_back(row.fields[layout.target]);
  t.lines.push_back(row.line);
}

// Reads the rest of `reader`, after `first` (a data row already read, if any).
Table read_rows(CsvReader& reader, const Layout& layout, const std::optional<Row>& first,
                const std::string& expected) {
  Table t;
  t.file = reader.name();
  if (first) add_row(t, layout, *first, expected);
  for (Row row; reader.next(row);) add_row(t, layout, row, expected);
  if (t.rows() == 0) throw std::runtime_error(t.file + ": no data rows, only the header");
  return t;
}

Row first_row(CsvReader& reader) {
  Row first;
  if (!reader.next(first)) throw std::runtime_error(reader.name() + ": empty file (no rows)");
  return first;
}

// Distinct labels in class-id order: numeric when every label is an integer
// (so labels 0..9 keep their ids), lexicographic otherwise.
// The value of a label that is a whole number ("3", "-1", "3.0", "3.000000"
// as numpy.savetxt writes integer classes); none for any other label.
std::optional<double> whole_number(const std::string& label) {
  if (const auto i = skein_csv::parse_integer(label)) return static_cast<double>(*i);
  float v = 0;
  if (skein_csv::parse_float(label, v) != NumberStatus::ok || std::floor(v) != v) return std::nullopt;
  return v;
}

std::vector<std::string> class_names(const std::vector<std::string>& labels) {
  const std::set<std::string> distinct(labels.begin(), labels.end());
  std::vector<std::string> names(distinct.begin(), distinct.end());
  std::vector<double> values;
  for (const auto& name : names) {
    const auto value = whole_number(name);
    if (!value) return names;
    values.push_back(*value);
  }
  std::vector<std::size_t> order(names.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<std::string> sorted;
  for (auto i : order) sorted.push_back(names[i]);
  return sorted;
}

// The row of the first label that is a number but not a whole number, when
// every label is a number: real-valued targets, which classification would
// turn into one class per distinct value.
std::optional<std::size_t> real_valued_label(const Table& t) {
  std::optional<std::size_t> first;
  for (std::size_t r = 0; r < t.targets.size(); ++r) {
    float ignored = 0;
    if (skein_csv::parse_float(t.targets[r], ignored) == NumberStatus::not_a_number) return std::nullopt;
    if (!first && !whole_number(t.targets[r])) first = r;
  }
  return first;
}

// The classes of a classification or binary task, checked: labels, not
// measurements; within the cap; exactly two for binary.
std::vector<std::string> checked_classes(const Table& t, const Layout& layout, const Settings& s,
                                         const skein::Options& opt) {
  std::string column = "the target column (column " + std::to_string(layout.target + 1);
  if (!layout.names.empty()) column += ", " + skein::quoted(layout.names[layout.target]);
  column += ") of " + t.file;
  if (const auto r = real_valued_label(t))
    opt.fail(Key::task, "is " + std::string(s.task == Task::binary ? "binary" : "classification") + ", but " + column +
                         " holds real numbers (" + skein::quoted(t.targets[*r]) + " on line " +
                         std::to_string(t.lines[*r]) + "), not class labels; set \"task\": \"regression\" to "
                         "predict the value");
  const auto classes = class_names(t.targets);
  if (s.task == Task::binary && classes.size() != 2)
    opt.fail(Key::task, "is binary, which needs exactly 2 distinct labels in " + column + "; it holds " +
                         std::to_string(classes.size()));
  if (static_cast<std::int64_t>(classes.size()) > s.max_classes)
    opt.fail(Key::max_classes, "is " + std::to_string(s.max_classes) + ", but " + column + " holds " + std::to_string(classes.size()) +
                                " distinct labels, more than max_classes (" + std::to_string(s.max_classes) +
                                "); raise it if that many classes are meant, or set \"task\": \"regression\" for "
                                "a real-valued target");
  return classes;
}

// Each row's class id; a label outside `classes` (from `train_file`) is an error.
torch::Tensor class_ids(const Table& t, const Layout& layout, const std::vector<std::string>& classes,
                        const std::string& train_file) {
  std::unordered_map<std::string, std::int64_t> id;
  for (std::size_t i = 0; i < classes.size(); ++i) id.emplace(classes[i], static_cast<std::int64_t>(i));
  std::vector<std::int64_t> ids;
  ids.reserve(t.targets.size());
  for (std::size_t r = 0; r < t.targets.size(); ++r) {
    const std::string& label = t.targets[r];
    if (label.empty())
      throw std::runtime_error(layout.where(t.file, t.lines[r], layout.target) + ": empty label");
    const auto found = id.find(label);
    if (found == id.end())
      throw std::runtime_error(layout.where(t.file, t.lines[r], layout.target) + ": label " + skein::quoted(label) +
                               " is not among the " + std::to_string(classes.size()) + " classes of " +
                               train_file);
    ids.push_back(found->second);
  }
  return torch::tensor(ids, torch::kLong);
}

torch::Tensor regression_targets(const Table& t, const Layout& layout) {
  std::vector<float> values;
  values.reserve(t.targets.size());
  for (std::size_t r = 0; r < t.targets.size(); ++r)
    values.push_back(number(t, layout, t.lines[r], layout.target, t.targets[r]));
  return torch::tensor(values, torch::kFloat32);
}

torch::Tensor inputs_of(const Table& t, const Layout& layout) {
  const auto features = static_cast<std::int64_t>(layout.features());
  return torch::from_blob(const_cast<float*>(t.inputs.data()), {t.rows(), features}, torch::kFloat32).clone();
}

// The label of each class id, for mapping predictions back (rank 0 only).
void save_classes(const skein::RunInfo& run, const std::vector<std::string>& classes) {
  if (!run.is_main() || run.run_dir.empty()) return;
  const nlohmann::json doc = {{"classes", classes}};
  // Labels need not be UTF-8 (a Latin-1 file): replace what JSON cannot hold.
  skein::write_file_atomic(skein::run_output_path(run, "csv_classes.json", "data (plugin 'csv'):"),
                           doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

class CsvDataset final : public skein::InMemoryDataset, public skein::OwnValidation {
 public:
  explicit CsvDataset(const skein::PluginArgs& args)
      : opt_(args.options), s_(read_settings(opt_)), main_(args.run.is_main()) {
    Table train = read_train();
    std::optional<Table> test, valid;
    if (!s_.test.empty()) test = read_held_out(Key::test, s_.test);
    if (!s_.valid.empty()) valid = read_held_out(Key::valid, s_.valid);
    info_.input_shape = {static_cast<std::int64_t>(layout_.features())};
    std::vector<std::string> classes;
    if (s_.task != Task::regression) classes = checked_classes(train, layout_, s_, opt_);
    // A regression or binary task has one output per sample (binary: one
    // logit for bce_with_logits, the second label being 1).
    info_.num_classes = s_.task == Task::classification ? static_cast<std::int64_t>(classes.size()) : 1;
    auto split_of = [&](const Table& t) {
      if (s_.task == Task::regression) return skein::TensorSplit{inputs_of(t, layout_), regression_targets(t, layout_)};
      const torch::Tensor ids = class_ids(t, layout_, classes, s_.train);
      return skein::TensorSplit{inputs_of(t, layout_), s_.task == Task::binary ? ids.to(torch::kFloat32) : ids};
    };
    train_ = split_of(train);
    if (test) test_ = split_of(*test);
    if (valid) valid_ = split_of(*valid);
    if (s_.task != Task::regression) save_classes(args.run, classes);
  }

  std::optional<skein::TensorSplit> valid() override { return valid_; }

 private:
  Table read_train() {
    std::ifstream in = open_file(opt_, Key::train, s_.train);
    CsvReader reader(in, s_.train, s_.delimiter);
    const Row first = first_row(reader);
    const HeaderChoice header = train_header(s_, first);
    layout_ = train_layout(s_, opt_, first, header.header);
    if (header.guessed) tell_guess(s_.train, first, header.header);
    return read_rows(reader, layout_, header.header ? std::nullopt : std::optional<Row>(first), "");
  }

  // The test or validation file (option `key`), read with the train file's layout.
  Table read_held_out(const char* key, const std::string& file) {
    std::ifstream in = open_file(opt_, key, file);
    CsvReader reader(in, file, s_.delimiter);
    const Row first = first_row(reader);
    const std::string expected = " as in " + s_.train;
    const HeaderChoice header = test_header(s_, layout_, first);
    if (header.guessed) tell_guess(file, first, header.header);
    if (!header.header) return read_rows(reader, layout_, first, expected);
    check_test_header(s_, file, layout_, first);
    return read_rows(reader, layout_, std::nullopt, expected);
  }

  // One warning line per file, from rank 0 only: every rank reads the same files.
  void tell_guess(const std::string& file, const Row& first, bool header) const {
    if (main_) skein::warn(opt_.owner() + ": " + header_guess_text(file, first, header));
  }

  skein::Options opt_;
  Settings s_;
  bool main_;
  Layout layout_;
  std::optional<skein::TensorSplit> valid_;
};

}  // namespace

SKEIN_PLUGIN(CsvDataset, dataset, "csv", "1.1.0",
             "Rows of a CSV file: numeric input columns and a class label or regression target",
             SKEIN_OPTION_SPECS(CSV_OPTIONS))
