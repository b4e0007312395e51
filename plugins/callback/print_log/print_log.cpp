// Callback "print_log": one table row per epoch on the main rank; a value that
// is the best so far (history key "<name>_best") is marked with '*'. Rows are
// printed after every callback's on_epoch_end (skein::EpochReporter), so keys
// that callbacks listed after it add (lr, train_dur) are shown too.
#include <iomanip>
#include <sstream>

#include "skein/callback.hpp"
#include "skein/history.hpp"
#include "skein/plugin.hpp"
#include "skein/errors.hpp"

#define SKEIN_PRINT_LOG_DEFAULT_COLUMNS R"(["epoch", "train_loss", "valid_loss", "valid_acc", "dur"])"

// Declared once: the schema and PrintLogOptions.
#define PRINT_LOG_OPTIONS(X)                                   \
  X(columns, string_list, SKEIN_PRINT_LOG_DEFAULT_COLUMNS,     \
    "History keys shown, in order (absent ones are skipped)")  \
  X(precision, integer, "4", "Digits after the decimal point", SKEIN_RANGE("[0, 12]"))

namespace {

SKEIN_OPTIONS_STRUCT(PrintLogOptions, PRINT_LOG_OPTIONS)

class PrintLog final : public skein::Callback, public skein::EpochReporter {
 public:
  explicit PrintLog(const skein::PluginArgs& args)
      : o_(args.options),
        precision_(static_cast<int>(o_.precision)),
        chosen_(nlohmann::json(o_.columns) != nlohmann::json::parse(SKEIN_PRINT_LOG_DEFAULT_COLUMNS)) {
    if (o_.columns.empty()) args.options.fail(PrintLogOptions::names::columns, "must name at least one history key");
  }

  void on_epoch_recorded(skein::TrainContext& ctx) override {
    if (!ctx.run().is_main()) return;
    const auto& epoch = ctx.history().last();
    std::vector<std::string> cols;  // the configured columns present in this epoch
    for (const auto& c : o_.columns)
      if (epoch.contains(c)) cols.push_back(c);
    if (!warned_ && chosen_) warn_missing(epoch);
    if (cols != printed_columns_) print_header(ctx.log(), cols);
    std::ostringstream row;
    for (std::size_t i = 0; i < cols.size(); ++i) {
      row << (i ? "  " : "") << std::setw(width(cols[i])) << format(epoch, cols[i]);
    }
    ctx.log() << row.str() << std::endl;
  }

 private:
  // Columns the user chose that the first epoch lacks: said once (the
  // default columns are not all there in every run, e.g. regression).
  void warn_missing(const nlohmann::json& epoch) {
    warned_ = true;
    std::string missing, keys;
    for (const auto& c : o_.columns)
      if (!epoch.contains(c)) missing += (missing.empty() ? "'" : ", '") + c + "'";
    if (missing.empty()) return;
    for (auto it = epoch.begin(); it != epoch.end(); ++it)
      if (it.key() != skein::history_key::kBatches && !skein::history_key::is_best_mark(it.key()))
        keys += (keys.empty() ? "" : ", ") + it.key();
    skein::warn("print_log: column(s) " + missing + " are not in the history of epoch " +
                (epoch.contains(skein::history_key::kEpoch) ? epoch[skein::history_key::kEpoch].dump() : std::string("?")) + " and are left out (its keys: " + keys + ")");
  }

  static int width(const std::string& col) { return std::max<int>(static_cast<int>(col.size()), 11); }

  void print_header(std::ostream& out, const std::vector<std::string>& cols) {
    std::ostringstream head, rule;
    for (std::size_t i = 0; i < cols.size(); ++i) {
      head << (i ? "  " : "") << std::setw(width(cols[i])) << cols[i];
      rule << (i ? "  " : "") << std::string(static_cast<std::size_t>(width(cols[i])), '-');
    }
    out << head.str() << '\n' << rule.str() << '\n';
    printed_columns_ = cols;
  }

  std::string format(const nlohmann::json& epoch, const std::string& key) const {
    const auto& v = epoch.at(key);
    std::ostringstream s;
    if (v.is_number_float())
      s << std::fixed << std::setprecision(precision_) << v.get<double>();
    else if (v.is_string())
      s << v.get<std::string>();
    else
      s << v.dump();
    auto best = epoch.find(skein::history_key::best_mark(key));
    s << (best != epoch.end() && best->is_boolean() && best->get<bool>() ? "*" : " ");
    return s.str();
  }

  PrintLogOptions o_;
  std::vector<std::string> printed_columns_;
  int precision_;
  bool chosen_;  // columns set by the user, not the default
  bool warned_ = false;
};

}  // namespace

SKEIN_PLUGIN(PrintLog, callback, "print_log", "1.1.0",
             "Epoch table on the main rank; '*' marks a best-so-far value",
             SKEIN_OPTION_SPECS(PRINT_LOG_OPTIONS))
