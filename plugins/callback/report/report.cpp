// Callback "report": one self-contained report.html in the run directory,
// rewritten atomically at epoch ends (watch it during a run; at most once
// every min_interval_s, so that a long run of short epochs does not spend
// its time rewriting a page that grows with it), and always as training
// and testing end: an inline
// SVG chart per metric (train and valid of one metric on one chart), the best
// epoch marked, the test split's values and confusion matrix once tested,
// and the run's config with its plugin versions. No script, no network.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include "skein/io/atomic_file.hpp"
#include "skein/callback.hpp"
#include "skein/history.hpp"
#include "skein/plugin.hpp"
#include "skein/run.hpp"

// Declared once: the schema and ReportOptions' names (the file is resolved by key: run_output_path).
#define REPORT_OPTIONS(X)                                                                        \
  X(file, string, "\"report.html\"", "File, relative to the run directory")                       \
  X(min_interval_s, number, "2",                                                                    \
    "Rewritten at an epoch's end only when this long since the last time (0: every epoch); always " \
    "when training and testing end", SKEIN_RANGE("[0, )"))

namespace {

SKEIN_OPTIONS_STRUCT(ReportOptions, REPORT_OPTIONS)

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

struct Series {
  std::string key;
  std::vector<std::pair<long, double>> points;  // (epoch, value), finite values only
};

// Charts: "loss" holds train_loss and valid_loss, "acc" train_acc and
// valid_acc; any other numeric key stands alone.
std::map<std::string, std::vector<Series>> charts_of(const nlohmann::json& epochs) {
  std::map<std::string, std::vector<Series>> charts;
  std::map<std::string, Series> series;
  for (const auto& e : epochs) {
    const long epoch = e.at(skein::history_key::kEpoch).get<long>();
    for (auto it = e.begin(); it != e.end(); ++it) {
      if (!it.value().is_number() || it.key() == skein::history_key::kEpoch) continue;
      const double v = it.value().get<double>();
      auto& s = series[it.key()];
      s.key = it.key();
      if (std::isfinite(v)) s.points.push_back({epoch, v});
    }
  }
  for (auto& [key, s] : series) {
    std::string chart = key;
    for (const char* phase : {"train_", "valid_"})
      if (key.rfind(phase, 0) == 0) chart = key.substr(6);
    charts[chart].push_back(std::move(s));
  }
  return charts;
}

std::string svg_chart(const std::string& title, const std::vector<Series>& group) {
  const double w = 520, h = 260, left = 60, right = 20, top = 30, bottom = 40;
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const auto& s : group)
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, double(x)), x1 = std::max(x1, double(x));
      y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h
      << "' viewBox='0 0 " << w << " " << h << "'>\n<text x='" << left << "' y='18' font-size='14'>"
      << escape(title) << "</text>\n";
  if (x0 > x1) return svg.str() + "<text x='60' y='120'>no finite values yet</text></svg>\n";
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + (y0 == 0 ? 1 : std::abs(y0) * 0.1);
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (w - left - right); };
  auto py = [&](double y) { return top + (y1 - y) / (y1 - y0) * (h - top - bottom); };
  svg << "<rect x='" << left << "' y='" << top << "' width='" << w - left - right << "' height='"
      << h - top - bottom << "' fill='none' stroke='#999'/>\n";
  svg << "<text x='" << left - 4 << "' y='" << top + 4 << "' font-size='11' text-anchor='end'>" << num(y1)
      << "</text><text x='" << left - 4 << "' y='" << h - bottom << "' font-size='11' text-anchor='end'>"
      << num(y0) << "</text>\n";
  svg << "<text x='" << left << "' y='" << h - bottom + 16 << "' font-size='11'>epoch " << num(x0)
      << "</text><text x='" << w - right << "' y='" << h - bottom + 16
      << "' font-size='11' text-anchor='end'>epoch " << num(x1) << "</text>\n";
  const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"};
  for (std::size_t i = 0; i < group.size(); ++i) {
    const auto& s = group[i];
    const char* color = colors[i % 4];
    svg << "<polyline fill='none' stroke='" << color << "' stroke-width='2' points='";
    for (const auto& [x, y] : s.points) svg << num(px(x)) << "," << num(py(y)) << " ";
    svg << "'/>\n<text x='" << w - right - 4 << "' y='" << top + 16 + 14 * i << "' font-size='12' fill='"
        << color << "' text-anchor='end'>" << escape(s.key) << "</text>\n";
    if (s.points.empty()) continue;
    // The best epoch of this series.
    auto best = s.points.front();
    for (const auto& p : s.points)
      if (skein::lower_is_better(s.key) ? p.second < best.second : p.second > best.second) best = p;
    svg << "<circle class='best' cx='" << num(px(best.first)) << "' cy='" << num(py(best.second))
        << "' r='5' fill='none' stroke='" << color << "' stroke-width='2'><title>best " << escape(s.key)
        << ": " << num(best.second) << " at epoch " << best.first << "</title></circle>\n";
  }
  return svg.str() + "</svg>\n";
}

// The test split: its values, and for classification the confusion matrix
// (rows: true class, columns: predicted), each row's recall on its right.
std::string test_section(const nlohmann::json& results) {
  std::ostringstream html;
  html << "<h2>Test split</h2>\n<table>";
  for (auto it = results.begin(); it != results.end(); ++it)
    if (it.key().rfind("test_", 0) == 0 && it.value().is_number())
      html << "<tr><td>" << escape(it.key()) << "</td><td>" << num(it.value().get<double>()) << "</td></tr>";
  html << "</table>\n";
  if (!results.contains("test_confusion_matrix")) return html.str();
  const auto& m = results["test_confusion_matrix"];
  html << "<h3>Confusion matrix</h3>\n<table class='confusion'><tr><th>true \\ predicted</th>";
  for (std::size_t c = 0; c < m.size(); ++c) html << "<th>" << c << "</th>";
  html << "<th>recall</th></tr>\n";
  for (std::size_t t = 0; t < m.size(); ++t) {
    double total = 0;
    html << "<tr><th>" << t << "</th>";
    for (const auto& count : m[t]) {
      total += count.get<double>();
      html << "<td>" << count.get<std::int64_t>() << "</td>";
    }
    html << "<td>" << (total > 0 ? num(m[t][t].get<double>() / total) : std::string("-")) << "</td></tr>\n";
  }
  return html.str() + "</table>\n";
}

class Report final : public skein::Callback, public skein::EpochReporter, public skein::TestReporter {
 public:
  explicit Report(const skein::PluginArgs& args)
      : path_(skein::run_output_path(args.options, ReportOptions::names::file, args.run)),
        min_interval_(ReportOptions(args.options).min_interval_s) {}

  void on_epoch_recorded(skein::TrainContext& ctx) override {
    const auto now = std::chrono::steady_clock::now();
    if (written_ && now - *written_ < std::chrono::duration<double>(min_interval_)) return;
    write(ctx);
    written_ = now;
  }
  void on_train_end(skein::TrainContext& ctx) override { write(ctx); }

  void on_test_end(skein::TrainContext& ctx, const nlohmann::json& results) override {
    test_ = results;
    write(ctx);
  }

 private:
  void write(skein::TrainContext& ctx) {
    if (!ctx.run().is_main()) return;
    const auto& config = ctx.config();
    std::ostringstream html;
    html << "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Skein run "
         << escape(ctx.run().run_dir) << "</title>\n<style>body{font-family:sans-serif;margin:2em}"
         << "svg{margin:0.5em;border:1px solid #eee}table{border-collapse:collapse}"
         << "td,th{border:1px solid #ccc;padding:2px 8px}</style></head><body>\n<h1>Skein run</h1>\n<p>"
         << escape(ctx.run().run_dir) << ": epoch " << ctx.epoch() << " of "
         << ctx.settings().max_epochs << ", " << ctx.run().world_size
         << " process(es). Circles mark each metric's best epoch.</p>\n";
    for (const auto& [title, group] : charts_of(ctx.history().epochs())) html << svg_chart(title, group);
    if (!test_.is_null()) html << test_section(test_);
    html << "<h2>Plugins</h2>\n<table><tr><th>plugin</th><th>kind</th><th>version</th><th>file</th></tr>\n";
    if (const auto versions = config.find(skein::run_key::kPluginVersions); versions != config.end())
      for (auto it = versions->begin(); it != versions->end(); ++it)
        html << "<tr><td>" << escape(it.key()) << "</td><td>" << escape(it.value().value("kind", ""))
             << "</td><td>" << escape(it.value().value("version", "")) << "</td><td>"
             << escape(it.value().value("path", "")) << "</td></tr>\n";
    html << "</table>\n<h2>Config</h2>\n<pre>" << escape(config.dump(2)) << "</pre>\n</body></html>\n";
    skein::write_file_atomic(path_, html.str());
  }

  std::string path_;
  double min_interval_;
  std::optional<std::chrono::steady_clock::time_point> written_;  // by on_epoch_recorded
  nlohmann::json test_;
};

}  // namespace

SKEIN_PLUGIN(Report, callback, "report", "1.3.0",
             "Self-contained report.html with SVG curves, best epochs, the test split (confusion matrix) and the config",
             SKEIN_OPTION_SPECS(REPORT_OPTIONS))
