// File: cli/svg_chart.h
// Small, dependency-free SVG charts for reports people look at rather than read: grouped bars
// (`tunejit run --plot`: per-layer time, tunejit beside cuDNN, with a per-bar roofline mark) and
// step/line series (`tunejit tune`: best time against trials, per task). Pure string output; the
// caller writes the file. Text is XML-escaped; non-finite or negative values are drawn as 0 (bars)
// or skipped (points), never as NaN coordinates.
//
//   BarChart chart{.title = "VGG-16 batch 128, int8", .y_label = "ms",
//                  .series_names = {"tunejit", "cuDNN fp32"}};
//   chart.groups.push_back({"features.0", {1.2, 2.4}, 0.8});
//   std::string svg = RenderBarChart(chart);
#ifndef TUNEJIT_CLI_SVG_CHART_H_
#define TUNEJIT_CLI_SVG_CHART_H_

#include <optional>
#include <string>
#include <vector>

namespace tunejit {

struct BarGroup {
  std::string label;            // x-axis label (rotated when long)
  std::vector<double> values;   // one per series; missing values are not drawn
  std::optional<double> bound;  // a horizontal tick over the group, e.g. the roofline time
};

struct BarChart {
  std::string title;
  std::string y_label;
  std::vector<std::string> series_names;  // legend
  std::string bound_name;                 // legend entry of the tick, e.g. "roofline"
  std::vector<BarGroup> groups;
  bool log_y = false;
  int width = 1100, height = 520;
};

struct LineSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
  bool step = true;                               // staircase (best-so-far curves)
};

struct LineChart {
  std::string title;
  std::string x_label, y_label;
  std::vector<LineSeries> series;
  bool log_y = false;
  int width = 900, height = 520;
};

std::string RenderBarChart(const BarChart& chart);
std::string RenderLineChart(const LineChart& chart);

}  // namespace tunejit

#endif  // TUNEJIT_CLI_SVG_CHART_H_
