#define BOOST_TEST_MODULE csv
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <filesystem>

#include <torch/torch.h>

#include "skein/dataset.hpp"
#include "skein/detail/warning_log.hpp"
#include "skein/errors.hpp"
#include "skein/io/input_file.hpp"
#include "skein/testing.hpp"

// The csv dataset plugin: parsing, the header and target rules, class ids,
// csv_classes.json, every error (file, line, column; a ConfigError or a data
// error). Its runs through `skein train`: tests/test_csv_runs.cpp.

namespace {

using skein::testing::contains;

nlohmann::json load_json(const std::string& path) { return nlohmann::json::parse(skein::read_whole_file(path).value()); }

// What opening a dataset threw: a ConfigError ("config"), another
// std::runtime_error ("data"), or nothing ("").
struct Failure {
  std::string kind;
  std::string message;
};

struct Fixture {
  // The csv dataset as `skein train` creates it, as rank `run.rank` writing into `run.run_dir`.
  std::shared_ptr<skein::Dataset> open(nlohmann::json options, const skein::RunInfo& run = {}) {
    skein::testing::Harness harness(skein::testing::HarnessOptions{{}, run.run_dir});
    harness.run().rank = run.rank;
    return harness.create<skein::Dataset>("csv", options);
  }
  Failure failure(nlohmann::json options) {
    try {
      open(std::move(options));
    } catch (const skein::ConfigError& e) {
      return {"config", e.what()};
    } catch (const std::runtime_error& e) {
      return {"data", e.what()};
    }
    return {};
  }
  // The message of a ConfigError (exit 2) from opening the dataset.
  std::string config_error(nlohmann::json options) {
    const auto f = failure(std::move(options));
    BOOST_TEST(f.kind == "config", f.message);
    return f.message;
  }
  // The message of a data error (std::runtime_error, not a ConfigError: exit 1).
  std::string data_error(nlohmann::json options) {
    const auto f = failure(std::move(options));
    BOOST_TEST(f.kind == "data", f.message);
    return f.message;
  }
  // Writes `text` to tmp/NAME; returns the path.
  std::string file(const std::string& name, const std::string& text) { return tmp.write(name, text); }

  skein::testing::TempDir tmp;
};

// The warnings given while it lives (skein::warn's log hook).
struct Warnings {
  Warnings() {
    skein::set_warning_log([this](const std::string& line) { lines.push_back(line); });
  }
  ~Warnings() { skein::set_warning_log(nullptr); }
  std::string all() const {
    std::string text;
    for (const auto& line : lines) text += line;
    return text;
  }
  std::vector<std::string> lines;
};

std::vector<float> floats(const torch::Tensor& t) {
  auto c = t.contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}
std::vector<std::int64_t> longs(const torch::Tensor& t) {
  auto c = t.contiguous();
  return {c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel()};
}

const std::string kIris =
    "sepal_length,sepal_width,species\n"
    "5.1,3.5,setosa\n"
    "7.0,3.2,versicolor\n"
    "6.3,3.3,virginica\n"
    "4.9,3.0,setosa\n";

}  // namespace

BOOST_FIXTURE_TEST_SUITE(csv, Fixture)

BOOST_AUTO_TEST_CASE(classification_shapes_values_and_dtypes) {
  const auto train = file("train.csv", kIris);
  const auto test = file("test.csv", "sepal_length,sepal_width,species\n6.0,2.2,virginica\n5.0,3.6,setosa\n");
  auto data = open({{"train", train}, {"test", test}});
  const auto info = data->info();
  BOOST_TEST(info.input_shape == std::vector<std::int64_t>({2}));
  BOOST_TEST(info.num_classes == 3);
  const auto split = data->train();
  BOOST_TEST(split.inputs.sizes() == torch::IntArrayRef({4, 2}));
  BOOST_TEST(split.inputs.dtype() == torch::kFloat32);
  BOOST_TEST(split.targets.sizes() == torch::IntArrayRef({4}));
  BOOST_TEST(split.targets.dtype() == torch::kLong);
  BOOST_TEST(floats(split.inputs) == std::vector<float>({5.1f, 3.5f, 7.0f, 3.2f, 6.3f, 3.3f, 4.9f, 3.0f}));
  BOOST_TEST(longs(split.targets) == std::vector<std::int64_t>({0, 1, 2, 0}));  // lexicographic labels
  const auto t = data->test();
  BOOST_REQUIRE(t.has_value());
  BOOST_TEST(t->inputs.sizes() == torch::IntArrayRef({2, 2}));
  BOOST_TEST(floats(t->inputs) == std::vector<float>({6.0f, 2.2f, 5.0f, 3.6f}));
  BOOST_TEST(longs(t->targets) == std::vector<std::int64_t>({2, 0}));  // through the train mapping
}

BOOST_AUTO_TEST_CASE(no_test_file_means_no_test_split) {
  auto data = open({{"train", file("train.csv", kIris)}});
  BOOST_TEST(!data->test().has_value());
}

BOOST_AUTO_TEST_CASE(regression_targets_are_float_with_one_output) {
  const auto train = file("train.csv", "x1,x2,y\n1,2,0.5\n3,4,-1.25\n5,6,1e3\n");
  const auto test = file("test.csv", "x1,x2,y\n7,8,2\n");
  auto data = open({{"train", train}, {"test", test}, {"task", "regression"}});
  BOOST_TEST(data->info().num_classes == 1);
  BOOST_TEST(data->info().input_shape == std::vector<std::int64_t>({2}));
  const auto split = data->train();
  BOOST_TEST(split.targets.dtype() == torch::kFloat32);
  BOOST_TEST(split.targets.sizes() == torch::IntArrayRef({3}));
  BOOST_TEST(floats(split.targets) == std::vector<float>({0.5f, -1.25f, 1000.0f}));
  BOOST_TEST(floats(split.inputs) == std::vector<float>({1, 2, 3, 4, 5, 6}));
  BOOST_TEST(floats(data->test()->targets) == std::vector<float>({2.0f}));
}

BOOST_AUTO_TEST_CASE(header_is_detected_or_absent) {
  // All numbers: the first row is data.
  auto plain = open({{"train", file("plain.csv", "1,2,0\n3,4,1\n5,6,1\n")}});
  BOOST_TEST(plain->train().size() == 3);
  BOOST_TEST(floats(plain->train().inputs)[0] == 1.0f);
  // A string label in the first row alone does not make it a header.
  auto labelled = open({{"train", file("labelled.csv", "1,2,cat\n3,4,dog\n")}});
  BOOST_TEST(labelled->train().size() == 2);
  BOOST_TEST(labelled->info().num_classes == 2);
  // A non-number among the inputs does.
  auto named = open({{"train", file("named.csv", "a,b,label\n1,2,cat\n3,4,dog\n")}});
  BOOST_TEST(named->train().size() == 2);
  // header "yes" takes even an all-number first row as the header.
  auto forced = open({{"train", file("forced.csv", "0,1,2\n3,4,1\n5,6,0\n")}, {"header", "yes"}});
  BOOST_TEST(forced->train().size() == 2);
  BOOST_TEST(floats(forced->train().inputs)[0] == 3.0f);
  // header "no" makes a name row data, which then is not a number.
  const auto err = data_error({{"train", tmp.str("named.csv")}, {"header", "no"}});
  BOOST_TEST(contains(err, tmp.str("named.csv") + ":1: column 1: 'a' is not a number"), err);
}

// pandas writes "0,1,...,N-1" as the header of a DataFrame made from an
// array: "auto" skips it, and says so; any other all-number first row is
// data, and "auto" says that too.
BOOST_AUTO_TEST_CASE(numbered_header_is_skipped_and_numeric_first_row_kept) {
  {
    Warnings w;
    auto data = open({{"train", file("numbered.csv", "0,1,2,3\n5.1,3.5,1.4,0\n4.9,3.0,1.4,1\n6.3,3.3,6.0,2\n")}});
    BOOST_TEST(data->train().size() == 3);
    BOOST_TEST(data->info().num_classes == 3);  // no class "3" from the header
    BOOST_TEST(floats(data->train().inputs)[0] == 5.1f);
    BOOST_REQUIRE(w.lines.size() == 1u);
    BOOST_TEST(contains(w.lines[0], "data (plugin 'csv'): " + tmp.str("numbered.csv") +
                                        ": header \"auto\" took the first row (0,1,...,3"),
               w.all());
    BOOST_TEST(contains(w.lines[0], "as a header; set header \"no\" if it is data"), w.all());
  }
  {
    Warnings w;
    // Two columns: "0,1" is pandas' header too.
    auto data = open({{"train", file("two.csv", "0,1\n0.5,1\n0.25,0\n")}});
    BOOST_TEST(data->train().size() == 2);
    BOOST_TEST(w.lines.size() == 1u, w.all());
  }
  {
    Warnings w;
    // Numbers, but not the column numbers: the first row is data.
    auto data = open({{"train", file("data.csv", "0,1,2,2\n5.1,3.5,1.4,0\n4.9,3.0,1.4,1\n")}});
    BOOST_TEST(data->train().size() == 3);
    BOOST_TEST(floats(data->train().inputs)[0] == 0.0f);
    BOOST_REQUIRE(w.lines.size() == 1u);
    BOOST_TEST(contains(w.lines[0], tmp.str("data.csv") + ": header \"auto\" took the first row, all numbers, as data; "
                                                          "set header \"yes\" if it is a header"),
               w.all());
  }
  {
    Warnings w;
    // header "no" keeps "0,1,2,3" as data; a row of names needs no guess; rank 1 stays quiet.
    auto data = open({{"train", tmp.str("numbered.csv")}, {"header", "no"}});
    BOOST_TEST(data->train().size() == 4);
    BOOST_TEST(data->info().num_classes == 4);
    open({{"train", file("named.csv", kIris)}});
    skein::RunInfo rank1;
    rank1.rank = 1;
    open({{"train", tmp.str("data.csv")}}, rank1);
    BOOST_TEST(w.lines.empty(), w.all());
  }
  {
    Warnings w;
    // The test file follows the same rule, with its own line.
    auto data = open({{"train", tmp.str("numbered.csv")}, {"test", file("test.csv", "0,1,2,3\n6.0,2.2,5.0,2\n")}});
    BOOST_TEST(data->test()->size() == 1);
    BOOST_TEST(w.lines.size() == 1u, w.all());  // the test header repeats the train one: no guess
    auto plain = open({{"train", tmp.str("data.csv")}, {"test", file("test2.csv", "1,2,3,2\n")}});
    BOOST_TEST(plain->test()->size() == 1);
    BOOST_TEST(w.lines.size() == 3u, w.all());
    BOOST_TEST(contains(w.lines[2], tmp.str("test2.csv") + ": header \"auto\" took the first row, all numbers, as data"),
               w.all());
  }
}

BOOST_AUTO_TEST_CASE(target_by_name_by_index_or_last) {
  const auto path = file("t.csv", "a,label,b\n1,x,2\n3,y,4\n5,x,6\n");
  auto by_name = open({{"train", path}, {"target", "label"}});
  BOOST_TEST(by_name->info().input_shape == std::vector<std::int64_t>({2}));
  BOOST_TEST(floats(by_name->train().inputs) == std::vector<float>({1, 2, 3, 4, 5, 6}));
  BOOST_TEST(longs(by_name->train().targets) == std::vector<std::int64_t>({0, 1, 0}));
  auto by_index = open({{"train", path}, {"target", "1"}});
  BOOST_TEST(longs(by_index->train().targets) == std::vector<std::int64_t>({0, 1, 0}));
  // By name, a numeric column as a regression target.
  auto numeric = open({{"train", file("n.csv", "a,b,c\n1,2,3\n4,5,6\n")}, {"target", "a"}, {"task", "regression"}});
  BOOST_TEST(floats(numeric->train().targets) == std::vector<float>({1, 4}));
  BOOST_TEST(floats(numeric->train().inputs) == std::vector<float>({2, 3, 5, 6}));
  // Default: the last column.
  const auto default_target = file("d.csv", "1,2,7\n3,4,9\n");
  auto d = open({{"train", default_target}, {"task", "regression"}});
  BOOST_TEST(floats(d->train().targets) == std::vector<float>({7, 9}));
  BOOST_TEST(floats(d->train().inputs) == std::vector<float>({1, 2, 3, 4}));
  // Without a header an index is the only way; -1 counts from the end.
  auto first = open({{"train", default_target}, {"target", "0"}, {"task", "regression"}});
  BOOST_TEST(floats(first->train().targets) == std::vector<float>({1, 3}));
  auto from_end = open({{"train", default_target}, {"target", "-1"}, {"task", "regression"}});
  BOOST_TEST(floats(from_end->train().targets) == std::vector<float>({7, 9}));
}

BOOST_AUTO_TEST_CASE(target_name_wins_over_index) {
  // A header column named "0" is that column, not column index 0.
  auto data = open({{"train", file("t.csv", "a,0,b\n1,5,2\n3,6,4\n")}, {"target", "0"}, {"task", "regression"}});
  BOOST_TEST(floats(data->train().targets) == std::vector<float>({5, 6}));
}

BOOST_AUTO_TEST_CASE(other_delimiters) {
  auto semi = open({{"train", file("s.csv", "a;b;c\n1.5;2;x\n3;4;y\n")}, {"delimiter", ";"}});
  BOOST_TEST(floats(semi->train().inputs) == std::vector<float>({1.5f, 2, 3, 4}));
  BOOST_TEST(semi->info().num_classes == 2);
  auto tab = open({{"train", file("t.tsv", "a\tb\tc\n1\t2\tx\n")}, {"delimiter", "\t"}});
  BOOST_TEST(floats(tab->train().inputs) == std::vector<float>({1, 2}));
  // With ';' a comma is an ordinary character: "1,5" is not a number.
  const auto err = data_error({{"train", file("c.csv", "1,5;2;x\n")}, {"delimiter", ";"}, {"header", "no"}});
  BOOST_TEST(contains(err, "c.csv:1: column 1: '1,5' is not a number"), err);
}

BOOST_AUTO_TEST_CASE(quoted_fields_keep_the_delimiter) {
  const auto path = file("q.csv",
                         "\"x, first\",\"y\",label\n"
                         "\"1.5\",2,\"red, dark\"\n"
                         "3,\"4\",\"blue\"\n"
                         "5, 6 ,C:\\red\n");
  auto data = open({{"train", path}});
  BOOST_TEST(data->info().input_shape == std::vector<std::int64_t>({2}));
  BOOST_TEST(floats(data->train().inputs) == std::vector<float>({1.5f, 2, 3, 4, 5, 6}));
  // Labels sorted: "C:\red" < "blue" < "red, dark" (a backslash is an ordinary character).
  BOOST_TEST(longs(data->train().targets) == std::vector<std::int64_t>({2, 1, 0}));
  // The header name with its comma appears in messages.
  const auto err = data_error({{"train", file("bad.csv", "\"x, first\",y,label\n\"abc\",2,z\n")}});
  BOOST_TEST(contains(err, "bad.csv:2: column 1 ('x, first'): 'abc' is not a number"), err);
}

BOOST_AUTO_TEST_CASE(crlf_bom_and_blank_lines) {
  const auto path = file("w.csv", "\xEF\xBB\xBF" "a,b,label\r\n1,2,x\r\n\r\n   \r\n3,4,y\r\n");
  auto data = open({{"train", path}});
  BOOST_TEST(data->train().size() == 2);
  BOOST_TEST(floats(data->train().inputs) == std::vector<float>({1, 2, 3, 4}));
  BOOST_TEST(data->info().num_classes == 2);  // "y", not "y\r"
  // Blank lines still count: the bad value is on line 5 of the file.
  const auto err = data_error({{"train", file("w2.csv", "a,b,label\r\n1,2,x\r\n\r\n\r\n3,q,y\r\n")}});
  BOOST_TEST(contains(err, "w2.csv:5: column 2 ('b'): 'q' is not a number"), err);
}

BOOST_AUTO_TEST_CASE(classes_json_is_written_by_rank_0_into_the_run_dir) {
  const auto train = file("train.csv", kIris);
  skein::RunInfo run;
  run.run_dir = tmp.str("run");
  std::filesystem::create_directories(run.run_dir);
  open({{"train", train}}, run);
  const auto classes = load_json(run.run_dir + "/csv_classes.json");
  BOOST_TEST(classes == nlohmann::json::parse(R"({"classes": ["setosa", "versicolor", "virginica"]})"),
             classes.dump());

  skein::RunInfo other = run;
  other.run_dir = tmp.str("rank1");
  other.rank = 1;
  std::filesystem::create_directories(other.run_dir);
  open({{"train", train}}, other);
  BOOST_TEST(!std::filesystem::exists(other.run_dir + "/csv_classes.json"));
  // Regression has no classes to save.
  skein::RunInfo reg = run;
  reg.run_dir = tmp.str("reg");
  std::filesystem::create_directories(reg.run_dir);
  open({{"train", file("r.csv", "1,2\n3,4\n")}, {"task", "regression"}}, reg);
  BOOST_TEST(!std::filesystem::exists(reg.run_dir + "/csv_classes.json"));
}

BOOST_AUTO_TEST_CASE(integer_labels_are_ordered_numerically) {
  skein::RunInfo run;
  run.run_dir = tmp.str();
  auto data = open({{"train", file("n.csv", "1,10\n2,2\n3,1\n4,2\n")}}, run);
  BOOST_TEST(data->info().num_classes == 3);
  BOOST_TEST(longs(data->train().targets) == std::vector<std::int64_t>({2, 1, 0, 1}));
  BOOST_TEST(load_json(tmp.str("csv_classes.json"))["classes"] ==
             nlohmann::json::parse(R"(["1", "2", "10"])"));
  // One non-integer label: all are ordered as strings.
  auto mixed = open({{"train", file("m.csv", "1,10\n2,2\n3,b\n")}}, run);
  BOOST_TEST(longs(mixed->train().targets) == std::vector<std::int64_t>({0, 1, 2}));
  BOOST_TEST(load_json(tmp.str("csv_classes.json"))["classes"] ==
             nlohmann::json::parse(R"(["10", "2", "b"])"));
}

BOOST_AUTO_TEST_CASE(missing_files_are_config_errors) {
  auto err = config_error({{"train", tmp.str("nope.csv")}});
  BOOST_TEST(contains(err, "data (plugin 'csv'): option 'train': cannot read '" + tmp.str("nope.csv") + "'"), err);
  BOOST_TEST(contains(err, "No such file"), err);
  err = config_error({{"train", file("train.csv", kIris)}, {"test", tmp.str("t.csv")}});
  BOOST_TEST(contains(err, "option 'test': cannot read '" + tmp.str("t.csv") + "'"), err);
  err = config_error({{"train", tmp.str()}});
  BOOST_TEST(contains(err, "option 'train': cannot read '" + tmp.str() + "' (a directory)"), err);
  err = config_error({{"train", ""}});
  BOOST_TEST(contains(err, "option 'train'"), err);
}

BOOST_AUTO_TEST_CASE(bad_options_are_config_errors) {
  const auto train = file("train.csv", kIris);
  auto err = config_error({{"train", train}, {"header", "maybe"}});
  BOOST_TEST(contains(err, "data (plugin 'csv'): option 'header' must be auto, yes or no, got 'maybe'"), err);
  err = config_error({{"train", train}, {"task", "ranking"}});
  BOOST_TEST(contains(err, "option 'task' must be classification, binary or regression, got 'ranking'"), err);
  err = config_error({{"train", train}, {"delimiter", ";;"}});
  BOOST_TEST(contains(err, "option 'delimiter' must be one character, got ';;'"), err);
  err = config_error({{"train", train}, {"delimiter", "\""}});
  BOOST_TEST(contains(err, "option 'delimiter'"), err);
  err = config_error({{"train", train}, {"target", "specis"}});
  BOOST_TEST(contains(err, "option 'target' names 'specis', which is no column of " + train +
                               " (columns: sepal_length, sepal_width, species)"),
             err);
  err = config_error({{"train", train}, {"target", "3"}});
  BOOST_TEST(contains(err, "option 'target' is column index 3, but " + train + " has 3 columns"), err);
  err = config_error({{"train", file("plain.csv", "1,2,3\n")}, {"target", "y"}});
  BOOST_TEST(contains(err, "option 'target' names 'y', but " + tmp.str("plain.csv") + " has no header row"), err);
  err = config_error({{"train", file("twice.csv", "y,y,z\n1,2,3\n")}, {"target", "y"}});
  BOOST_TEST(contains(err, "option 'target' names 'y', which heads more than one column"), err);
}

BOOST_AUTO_TEST_CASE(values_that_are_not_numbers) {
  const auto header = std::string("a,petal_width,label\n");
  auto err = data_error({{"train", file("x.csv", header + "1,2,x\n3,abc,y\n")}});
  BOOST_TEST(contains(err, tmp.str("x.csv") + ":3: column 2 ('petal_width'): 'abc' is not a number"), err);
  err = data_error({{"train", file("nan.csv", header + "1,nan,x\n")}});
  BOOST_TEST(contains(err, "nan.csv:2: column 2 ('petal_width'): 'nan' is not finite (nan and inf are refused)"),
             err);
  err = data_error({{"train", file("inf.csv", header + "-inf,1,x\n")}});
  BOOST_TEST(contains(err, "inf.csv:2: column 1 ('a'): '-inf' is not finite"), err);
  err = data_error({{"train", file("big.csv", header + "1e39,1,x\n")}});
  BOOST_TEST(contains(err, "big.csv:2: column 1 ('a'): '1e39' is out of float32 range"), err);
  err = data_error({{"train", file("empty_field.csv", header + "1,,x\n")}});
  BOOST_TEST(contains(err, "empty_field.csv:2: column 2 ('petal_width'): empty field"), err);
  err = data_error({{"train", file("partial.csv", header + "1,2.5e,x\n")}});
  BOOST_TEST(contains(err, "partial.csv:2: column 2 ('petal_width'): '2.5e' is not a number"), err);
  // Without a header the column has no name.
  err = data_error({{"train", file("plain.csv", "1,2,0\n3,4x,1\n")}});
  BOOST_TEST(contains(err, "plain.csv:2: column 2: '4x' is not a number"), err);
  // Regression targets are numbers too.
  err = data_error({{"train", file("r.csv", "x,y\n1,inf\n")}, {"task", "regression"}});
  BOOST_TEST(contains(err, "r.csv:2: column 2 ('y'): 'inf' is not finite"), err);
  // Tiny values are not an error: they round to float32 (here to 0).
  auto tiny = open({{"train", file("tiny.csv", "1e-50,+2,x\n")}});
  BOOST_TEST(floats(tiny->train().inputs) == std::vector<float>({0, 2}));
}

// A value echoed in an error is capped: a 1 MB field gives a short message.
BOOST_AUTO_TEST_CASE(long_values_are_capped_in_errors) {
  const std::string huge(1000000, 'x');
  const std::string head = "'" + std::string(60, 'x') + "...' (1000000 bytes)";
  auto err = data_error({{"train", file("v.csv", "a,b,label\n1," + huge + ",x\n")}});
  BOOST_TEST(contains(err, "v.csv:2: column 2 ('b'): " + head + " is not a number"), err.substr(0, 300));
  BOOST_TEST(err.size() < 400u);
  // A long column name in the place of an error.
  err = data_error({{"train", file("n.csv", "a," + huge + ",label\n1,q,x\n")}});
  BOOST_TEST(contains(err, "n.csv:2: column 2 (" + head + "): 'q' is not a number"), err.substr(0, 300));
  BOOST_TEST(err.size() < 400u);
  // A test label, a test header, and the column list of a bad target.
  const auto train = file("train.csv", kIris);
  err = data_error({{"train", train}, {"test", file("t.csv", "1,2," + huge + "\n")}});
  BOOST_TEST(contains(err, "label " + head + " is not among the 3 classes"), err.substr(0, 300));
  BOOST_TEST(err.size() < 400u + train.size());
  err = data_error({{"train", train}, {"test", file("h.csv", "sepal_length," + huge + ",species\n1,2,setosa\n")}});
  BOOST_TEST(contains(err, "column 2 is " + head + ", but 'sepal_width' in"), err.substr(0, 300));
  BOOST_TEST(err.size() < 400u + train.size());
  std::string wide;
  for (int i = 0; i < 1000; ++i) wide += "c" + std::to_string(i) + ",";
  err = config_error({{"train", file("wide.csv", wide + huge + "\n1\n")},
                      {"target", "nope"}});
  BOOST_TEST(contains(err, "(columns: c0, c1, c2, "), err.substr(0, 300));
  BOOST_TEST(contains(err, "c19, ... (1001 columns))"), err.substr(0, 300));
  BOOST_TEST(err.size() < 600u, err.size());
}

BOOST_AUTO_TEST_CASE(rows_of_another_width) {
  auto err = data_error({{"train", file("x.csv", "a,b,c,d,e\n1,2,3,4,5\n1,2,3,4,5\n\n1,2,3,4\n")}});
  BOOST_TEST(contains(err, tmp.str("x.csv") + ":5: 4 fields, expected 5"), err);
  err = data_error({{"train", file("y.csv", "1,2,3\n1,2,3,4\n")}});
  BOOST_TEST(contains(err, "y.csv:2: 4 fields, expected 3"), err);
  err = data_error({{"train", file("one.csv", "a\n1\n")}});
  BOOST_TEST(contains(err, "one.csv:1: 1 field; a csv dataset needs at least one input column and the target"), err);
}

BOOST_AUTO_TEST_CASE(test_file_with_other_columns) {
  const auto train = file("train.csv", kIris);
  auto err = data_error({{"train", train}, {"test", file("t1.csv", "sepal_length,petal_width,species\n1,2,setosa\n")}});
  BOOST_TEST(contains(err, tmp.str("t1.csv") + ":1: column 2 is 'petal_width', but 'sepal_width' in " + train), err);
  err = data_error({{"train", train}, {"test", file("t2.csv", "sepal_length,species\n1,setosa\n")}});
  BOOST_TEST(contains(err, "t2.csv:1: 2 fields, expected 3 as in " + train), err);
  err = data_error({{"train", train}, {"test", file("t3.csv", "1,2,setosa\n1,setosa\n")}});
  BOOST_TEST(contains(err, "t3.csv:2: 2 fields, expected 3 as in " + train), err);
  // A test file without a header is fine when its columns fit.
  auto data = open({{"train", train}, {"test", file("t4.csv", "1,2,virginica\n")}});
  BOOST_TEST(longs(data->test()->targets) == std::vector<std::int64_t>({2}));
}

BOOST_AUTO_TEST_CASE(unknown_and_empty_labels) {
  const auto train = file("train.csv", kIris);
  auto err = data_error({{"train", train}, {"test", file("t.csv", "sepal_length,sepal_width,species\n1,2,setosa\n\n3,4,virginca\n")}});
  BOOST_TEST(contains(err, tmp.str("t.csv") + ":4: column 3 ('species'): label 'virginca' is not among the 3 classes of " +
                               train),
             err);
  err = data_error({{"train", file("e.csv", "a,b,label\n1,2,x\n3,4,\n")}});
  BOOST_TEST(contains(err, "e.csv:3: column 3 ('label'): empty label"), err);
}

BOOST_AUTO_TEST_CASE(empty_files_and_no_data_rows) {
  auto err = data_error({{"train", file("empty.csv", "")}});
  BOOST_TEST(contains(err, tmp.str("empty.csv") + ": empty file"), err);
  err = data_error({{"train", file("blank.csv", "\n  \r\n")}});
  BOOST_TEST(contains(err, "blank.csv: empty file"), err);
  err = data_error({{"train", file("header.csv", "a,b,label\n")}});
  BOOST_TEST(contains(err, "header.csv: no data rows"), err);
  err = data_error({{"train", file("train.csv", kIris)}, {"test", file("t.csv", "sepal_length,sepal_width,species\n")}});
  BOOST_TEST(contains(err, "t.csv: no data rows"), err);
}

BOOST_AUTO_TEST_CASE(unterminated_quote) {
  const auto err = data_error({{"train", file("q.csv", "a,b,label\n1,\"2,x\n")}});
  BOOST_TEST(contains(err, "q.csv:2: unterminated quote"), err);
}

// task binary: two labels become 0/1 float targets, one output, saved as
// classes are; any other count of labels is an error naming the column.
BOOST_AUTO_TEST_CASE(binary_task_maps_two_labels_to_0_and_1) {
  const auto train = file("train.csv", "x,churn\n1,yes\n2,no\n3,yes\n");
  const auto test = file("test.csv", "x,churn\n4,no\n");
  auto data = open({{"train", train}, {"test", test}, {"task", "binary"}});
  BOOST_TEST(data->info().num_classes == 1);
  BOOST_TEST(data->train().targets.dtype() == torch::kFloat32);
  BOOST_TEST(floats(data->train().targets) == std::vector<float>({1, 0, 1}));
  BOOST_TEST(floats(data->test()->targets) == std::vector<float>({0}));
  const auto one = config_error({{"train", file("one.csv", "x,y\n1,a\n2,a\n")}, {"task", "binary"}});
  BOOST_TEST(contains(one, "option 'task' is binary, which needs exactly 2 distinct labels in the target column "
                           "(column 2, 'y') of"), one);
  BOOST_TEST(contains(one, "it holds 1"), one);
  const auto three = config_error({{"train", file("three.csv", "x,y\n1,0\n2,1\n3,2\n")}, {"task", "binary"}});
  BOOST_TEST(contains(three, "it holds 3"), three);
}

// Real-valued targets are no class labels; a target with more distinct
// labels than max_classes is refused, not a model of that many outputs.
// Whole numbers written with decimals (numpy.savetxt's "%.18e", pandas'
// float columns) are class labels, in numeric order.
BOOST_AUTO_TEST_CASE(whole_numbers_with_decimals_are_labels) {
  auto data = open({{"train", file("whole.csv", "x,y\n1,10.000000\n2,2.000000\n3,0.000000\n4,2.000000\n")}});
  BOOST_TEST(data->info().num_classes == 3);
  BOOST_TEST(floats(data->train().targets.to(torch::kFloat32)) == std::vector<float>({2, 1, 0, 1}));
}

BOOST_AUTO_TEST_CASE(real_valued_or_too_many_labels_are_refused) {
  const auto real = config_error({{"train", file("real.csv", "x,y\n1,2\n2,3.25\n3,4\n")}});
  BOOST_TEST(contains(real, "data (plugin 'csv'): option 'task' is classification, but the target column (column 2, 'y') of"), real);
  BOOST_TEST(contains(real, "holds real numbers ('3.25' on line 3)"), real);
  BOOST_TEST(contains(real, "set \"task\": \"regression\""), real);
  std::string many = "x,y\n";
  for (int i = 0; i < 12; ++i) many += std::to_string(i) + "," + std::to_string(i) + "\n";
  const auto capped = config_error({{"train", file("many.csv", many)}, {"max_classes", 10}});
  BOOST_TEST(contains(capped, "option 'max_classes' is 10, but the target column (column 2, 'y') of"), capped);
  BOOST_TEST(contains(capped, "holds 12 distinct labels, more than max_classes (10)"), capped);
  BOOST_TEST(open({{"train", file("many.csv", many)}, {"max_classes", 12}})->info().num_classes == 12);
  BOOST_TEST(contains(config_error({{"train", file("many.csv", many)}, {"max_classes", 1}}), "must be at least 2"));
}

BOOST_AUTO_TEST_SUITE_END()
