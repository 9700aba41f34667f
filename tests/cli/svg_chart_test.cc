// cli/svg_chart.h: the output is well-formed (balanced tags, escaped text, no NaN
// coordinates) and holds what the chart describes (bars, ticks, legend entries).
#include "cli/svg_chart.h"

#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

// Designated initializers below name only the fields a case is about; the rest keep their
// defaults on purpose, which GCC 12's -Wmissing-field-initializers would flag one by one.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tunejit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A minimal XML well-formedness check: every element closes in order, attribute values are
// quoted, and text and attributes hold no raw '<' and no '&' outside an entity. Returns "" when
// well-formed, else what is wrong.
std::string CheckXml(const std::string& doc) {
  std::vector<std::string> stack;
  static const std::regex kEntity("^&(amp|lt|gt|quot|#39);");
  for (size_t i = 0; i < doc.size();) {
    if (doc[i] == '&') {
      std::string rest = doc.substr(i, 8);
      if (!std::regex_search(rest, kEntity)) return "bare '&' at " + std::to_string(i);
      ++i;
      continue;
    }
    if (doc[i] != '<') {
      ++i;
      continue;
    }
    size_t end = i + 1;
    bool in_quote = false;
    for (; end < doc.size() && (in_quote || doc[end] != '>'); ++end) {
      if (doc[end] == '"') in_quote = !in_quote;
      if (in_quote && doc[end] == '<') return "'<' in an attribute at " + std::to_string(end);
      if (in_quote && doc[end] == '&' && !std::regex_search(doc.substr(end, 8), kEntity))
        return "bare '&' in an attribute at " + std::to_string(end);
    }
    if (end >= doc.size()) return "unterminated tag at " + std::to_string(i);
    std::string tag = doc.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.front() == '?') continue;  // <?xml ...?>
    if (tag.front() == '/') {
      if (stack.empty() || stack.back() != tag.substr(1)) return "unbalanced </" + tag + ">";
      stack.pop_back();
      continue;
    }
    std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    if (tag.back() != '/') stack.push_back(name);
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  return "";
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// The value of attribute `attr` in every element carrying `marker`, as numbers.
std::vector<double> Attr(const std::string& doc, const std::string& marker,
                         const std::string& attr) {
  std::vector<double> out;
  std::regex re(marker + "[^>]*? " + attr + "=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back(std::stod((*it)[1]));
  }
  return out;
}

BarChart TwoSeries() {
  BarChart chart{.title = "VGG-16 batch 128, int8",
                 .y_label = "ms",
                 .series_names = {"tunejit", "cuDNN fp32"},
                 .bound_name = "roofline"};
  chart.groups.push_back({"features.0", {1.2, 2.4}, 0.8});
  chart.groups.push_back({"features.2", {3.0, 6.0}, std::nullopt});
  chart.groups.push_back({"classifier.0", {0.5, 0.25}, 0.1});
  return chart;
}

TEST(SvgBarChart, WellFormedWithOneBarPerValueAndLegend) {
  std::string svg = RenderBarChart(TwoSeries());
  EXPECT_EQ(CheckXml(svg), "");
  EXPECT_EQ(Count(svg, "<rect class=\"bar\""), 6);
  EXPECT_EQ(Count(svg, "class=\"bound\""), 2);  // the group without a bound has no tick
  EXPECT_EQ(Count(svg, "class=\"legend-name\""), 3);
  EXPECT_THAT(svg, HasSubstr(">tunejit</text>"));
  EXPECT_THAT(svg, HasSubstr(">cuDNN fp32</text>"));
  EXPECT_THAT(svg, HasSubstr(">roofline</text>"));
  EXPECT_THAT(svg, HasSubstr(">classifier.0</text>"));
}

TEST(SvgBarChart, BarHeightsAreProportionalOnALinearAxis) {
  std::string svg = RenderBarChart(TwoSeries());
  std::vector<double> h = Attr(svg, "<rect class=\"bar\"", "height");
  ASSERT_EQ(h.size(), 6u);
  EXPECT_NEAR(h[1] / h[0], 2.0, 0.01);  // 2.4 vs 1.2
  EXPECT_NEAR(h[3] / h[2], 2.0, 0.01);  // 6.0 vs 3.0
  EXPECT_GT(h[3], h[0]);
}

TEST(SvgBarChart, LogAxisHasDecadeTicksAndEqualRatiosGiveEqualSteps) {
  BarChart chart = TwoSeries();
  chart.log_y = true;
  std::string svg = RenderBarChart(chart);
  EXPECT_EQ(CheckXml(svg), "");
  // Values span 0.1 .. 6: decades 0.1, 1, 10.
  EXPECT_THAT(svg, HasSubstr(">0.1</text>"));
  EXPECT_THAT(svg, HasSubstr(">1</text>"));
  EXPECT_THAT(svg, HasSubstr(">10</text>"));
  std::vector<double> h = Attr(svg, "<rect class=\"bar\"", "height");
  ASSERT_EQ(h.size(), 6u);
  // 1.2 -> 2.4 and 3 -> 6 are both a doubling: the same number of pixels on a log axis.
  EXPECT_NEAR(h[1] - h[0], h[3] - h[2], 0.02);
}

TEST(SvgBarChart, EscapesText) {
  BarChart chart{.title = "a<b & \"c\"", .y_label = "<ms>", .series_names = {"x&y"}};
  chart.groups.push_back({"conv<1>", {1.0}, std::nullopt});
  std::string svg = RenderBarChart(chart);
  EXPECT_EQ(CheckXml(svg), "");
  EXPECT_THAT(svg, HasSubstr("a&lt;b &amp; &quot;c&quot;"));
  EXPECT_THAT(svg, HasSubstr("conv&lt;1&gt;"));
  EXPECT_THAT(svg, HasSubstr("x&amp;y"));
  EXPECT_THAT(svg, Not(HasSubstr("a<b")));
}

TEST(SvgBarChart, NonFiniteAndNegativeValuesAreZeroHeightBars) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (bool log_y : {false, true}) {
    BarChart chart{.title = "t", .series_names = {"a", "b", "c"}, .bound_name = "r"};
    chart.groups.push_back({"g", {nan, -1.0, 2.0}, nan});
    chart.groups.push_back({"h", {inf, 0.0, 1.0}, -3.0});
    chart.log_y = log_y;
    std::string svg = RenderBarChart(chart);
    EXPECT_EQ(CheckXml(svg), "");
    EXPECT_THAT(svg, Not(HasSubstr("nan")));
    EXPECT_THAT(svg, Not(HasSubstr("inf")));
    std::vector<double> h = Attr(svg, "<rect class=\"bar\"", "height");
    ASSERT_EQ(h.size(), 6u);
    EXPECT_EQ(h[0], 0);
    EXPECT_EQ(h[1], 0);
    EXPECT_GT(h[2], 0);
    EXPECT_EQ(h[3], 0);
    EXPECT_EQ(h[4], 0);
    EXPECT_GT(h[5], 0);
    EXPECT_GT(h[2], h[5]);
    EXPECT_EQ(Count(svg, "class=\"bound\""), 0);  // NaN and negative bounds are not drawn
    EXPECT_THAT(svg, Not(HasSubstr(">r</text>")));
  }
}

TEST(SvgBarChart, MissingValuesAreNotDrawnAndEmptyChartIsValid) {
  BarChart chart{.title = "t", .series_names = {"a", "b"}};
  chart.groups.push_back({"g", {1.0}, std::nullopt});  // no value for "b"
  EXPECT_EQ(Count(RenderBarChart(chart), "<rect class=\"bar\""), 1);
  BarChart empty{.title = "empty"};
  std::string svg = RenderBarChart(empty);
  EXPECT_EQ(CheckXml(svg), "");
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
}

TEST(SvgLineChart, StepSeriesAndSkippedPoints) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  LineChart chart{.title = "best & worst", .x_label = "trials", .y_label = "ms"};
  chart.series.push_back({"conv<1>", {{0, 4}, {10, 2}, {20, nan}, {30, 1}}, true});
  chart.series.push_back({"dense", {{0, 3}, {30, -1}, {40, 3}}, false});
  std::string svg = RenderLineChart(chart);
  EXPECT_EQ(CheckXml(svg), "");
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
  EXPECT_EQ(Count(svg, "<polyline class=\"series\""), 2);
  EXPECT_EQ(Count(svg, "class=\"legend-name\""), 2);
  EXPECT_THAT(svg, HasSubstr("conv&lt;1&gt;"));
  std::smatch m;
  std::string::const_iterator from = svg.begin();
  std::vector<int> point_counts;
  std::regex points_re("points=\"([^\"]*)\"");
  while (std::regex_search(from, svg.cend(), m, points_re)) {
    point_counts.push_back(Count(m[1].str(), ","));
    from = m.suffix().first;
  }
  // Step: 3 finite points -> 3 + 2 corner points; plain: 2 finite points.
  EXPECT_THAT(point_counts, ::testing::ElementsAre(5, 2));
}

}  // namespace
}  // namespace tunejit
