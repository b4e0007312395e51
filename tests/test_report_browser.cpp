#define BOOST_TEST_MODULE report_browser
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <set>
#include <sstream>

#include "test_support.hpp"

// report.html in a real browser (Debian's chromium, headless, inside a
// private network so that nothing could be fetched): every chart is drawn,
// one line per series with a point per epoch, without a console message;
// and a screenshot of the page is taken.

namespace {

using test::contains;
using test::load_json;
const std::string kSkein = SKEIN_EXE;

// `chromium --headless` with `args` (the browser found on PATH), in a
// private network, its profile in `home` (removed with the test's folder).
test::CommandResult browser(const std::string& home, const std::string& args) {
  return test::run(test::in_private_network(
                       "B=$(command -v chromium || command -v chromium-browser) || "
                       "{ echo 'no chromium: scripts/setup.sh installs it' >&2; exit 5; }; "
                       "HOME=" + home + " \"$B\" --headless --no-sandbox --disable-gpu --hide-scrollbars "
                       "--enable-logging=stderr --v=0 " + args),
                   180);
}

std::uint32_t big_endian(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes.at(at + i));
  return v;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(report_browser, test::Workspace)

BOOST_AUTO_TEST_CASE(every_chart_is_drawn_in_a_headless_browser) {
  auto cfg = test::synthetic_config();
  cfg["callbacks"] = {{{"plugin", "report"}}};
  const std::string run_dir = dir("run");
  auto r = test::run(kSkein + " train --config " + write_config(cfg) + " --run-dir " + run_dir);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string report = run_dir + "/report.html";

  // A copy with the checking script at its end, its DOM after the script ran.
  std::string page = test::read_text(report);
  const auto end = page.rfind("</body>");
  BOOST_REQUIRE(end != std::string::npos);
  page.insert(end, "<script>\n" + test::read_text(SKEIN_SOURCE_DIR "/tests/tools/report_check.js") + "</script>\n");
  const std::string checked = dir("checked.html");
  test::write_text(checked, page);
  auto dom = browser(dir("home"), "--virtual-time-budget=10000 --dump-dom file://" + checked);
  BOOST_REQUIRE_MESSAGE(dom.exit_code == 0, dom.err);
  // No console message of the page's (an error, a failed fetch); the
  // browser's own pages (chrome://) may log theirs.
  std::istringstream log(dom.err);
  for (std::string line; std::getline(log, line);)
    BOOST_TEST(!(contains(line, ":CONSOLE") && !contains(line, "source: chrome://")), line);
  const std::string open = "<pre id=\"skein-check\">", close = "</pre>";
  const auto at = dom.out.rfind(open);
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, dom.out);
  const auto seen = nlohmann::json::parse(dom.out.substr(at + open.size(), dom.out.find(close, at) - at - open.size()));
  BOOST_TEST(seen.at("errors").empty(), seen.dump());

  // One chart per metric, one line per series, a point per epoch, drawn.
  const auto history = load_json(run_dir + "/history.json");
  const std::size_t epochs = history.size();
  BOOST_TEST(epochs == 3u);
  std::set<std::string> titles;
  std::size_t lines = 0;
  for (const auto& chart : seen.at("charts")) {
    titles.insert(chart.at("title").get<std::string>());
    for (const auto& line : chart.at("lines")) {
      ++lines;
      BOOST_TEST(line.at("points").get<std::size_t>() == epochs, chart.dump());
      BOOST_TEST(line.at("length").get<double>() > 100, chart.dump());  // across the plot, not a dot
    }
    // The lines' own pixels: a 2 px line across 440 px is about a thousand.
    BOOST_TEST(chart.at("coloured").get<int>() - chart.at("coloured_without_lines").get<int>() >
                   300 * static_cast<int>(chart.at("lines").size()),
               chart.dump());
  }
  BOOST_TEST(titles.count("loss") == 1u);
  BOOST_TEST(titles.count("acc") == 1u);
  BOOST_TEST(lines >= 4u);  // train_loss, valid_loss, valid_acc, dur

  // A screenshot of the page itself: a PNG of the window's size.
  const std::string shot = dir("report.png");
  auto s = browser(dir("home"), "--window-size=1000,2000 --screenshot=" + shot + " file://" + report);
  BOOST_REQUIRE_MESSAGE(s.exit_code == 0, s.err);
  const std::string png = test::read_text(shot);
  BOOST_REQUIRE(png.size() > 24);
  BOOST_TEST(png.substr(1, 3) == "PNG");
  BOOST_TEST(big_endian(png, 16) == 1000u);
  BOOST_TEST(big_endian(png, 20) == 2000u);
  BOOST_TEST(png.size() > 20000u);  // a page with charts and tables, not a blank one (~5 kB)
}

BOOST_AUTO_TEST_SUITE_END()
