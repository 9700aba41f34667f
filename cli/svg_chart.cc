// SVG rendering for cli/svg_chart.h. Every coordinate goes through Axis::Map, which clamps,
// so a bad value can never put "nan" or "inf" into the document.
#include "cli/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tunejit {
namespace {

// Colors a colour-blind reader can tell apart (Okabe-Ito), cycled per series.
constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                    "#56B4E9", "#D55E00", "#F0E442", "#000000"};
constexpr const char* kBoundColor = "#D55E00";
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

std::string Escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Num(double v) { return absl::StrFormat("%.2f", std::isfinite(v) ? v : 0.0); }

// A tick label: short, without trailing zeros ("0.25", "1e+03").
std::string TickText(double v) { return absl::StrFormat("%.3g", v); }

// Maps data values to pixels along one axis (pixel_lo for lo, pixel_hi for hi).
struct Axis {
  double lo = 0, hi = 1;
  double pixel_lo = 0, pixel_hi = 1;
  bool log = false;

  double Map(double v) const {
    double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi;
    double x = log ? std::log10(std::max(v, lo)) : v;
    if (!std::isfinite(x)) x = a;
    double t = b > a ? (x - a) / (b - a) : 0.0;
    t = std::clamp(t, 0.0, 1.0);
    return pixel_lo + t * (pixel_hi - pixel_lo);
  }

  std::vector<double> Ticks() const {
    std::vector<double> ticks;
    if (log) {
      for (double d = lo; d <= hi * 1.0001; d *= 10) ticks.push_back(d);
      return ticks;
    }
    double raw = (hi - lo) / 5, mag = std::pow(10, std::floor(std::log10(raw)));
    double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
    if (!(step > 0)) return {lo};
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-6; v += step)
      ticks.push_back(v);
    return ticks;
  }
};

// The value range of `values` (finite; positive only for a log axis) as an axis range: linear
// axes start at 0 (bars are compared by height), log axes span whole decades.
Axis MakeValueAxis(const std::vector<double>& values, bool log, bool from_zero) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values) {
    if (!std::isfinite(v) || (log && v <= 0)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  Axis axis;
  axis.log = log;
  if (!std::isfinite(lo)) {  // nothing drawable
    axis.lo = log ? 0.1 : 0;
    axis.hi = 1;
    return axis;
  }
  if (log) {
    // Strictly below the smallest value, so no bar sits at zero height on the axis.
    axis.lo = std::pow(10, std::floor(std::log10(lo) - 1e-9));
    axis.hi = std::pow(10, std::ceil(std::log10(hi)));
    if (axis.hi <= axis.lo) axis.hi = axis.lo * 10;
  } else {
    axis.lo = from_zero ? std::min(0.0, lo) : lo;
    axis.hi = hi > axis.lo ? hi * 1.05 : axis.lo + 1;
  }
  return axis;
}

std::string Header(int width, int height, const std::string& title) {
  return absl::StrCat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", "<svg xmlns=\"http://www.w3.org/2000/svg\" ",
      "width=\"", width, "\" height=\"", height, "\" viewBox=\"0 0 ", width, " ", height,
      "\" font-family=\"sans-serif\" font-size=\"12\">\n", "<rect width=\"100%\" height=\"100%\" ",
      "fill=\"white\"/>\n", "<text class=\"title\" x=\"", width / 2,
      "\" y=\"22\" text-anchor=\"middle\" font-size=\"16\">", Escape(title), "</text>\n");
}

// Y axis line, grid lines, tick labels and the rotated axis label.
std::string YAxis(const Axis& y, double x_left, double x_right, const std::string& label) {
  std::string out =
      absl::StrCat("<g class=\"y-axis\">\n<line x1=\"", Num(x_left), "\" y1=\"", Num(y.pixel_lo),
                   "\" x2=\"", Num(x_left), "\" y2=\"", Num(y.pixel_hi), "\" stroke=\"black\"/>\n");
  for (double t : y.Ticks()) {
    double py = y.Map(t);
    absl::StrAppend(&out, "<line x1=\"", Num(x_left), "\" y1=\"", Num(py), "\" x2=\"", Num(x_right),
                    "\" y2=\"", Num(py), "\" stroke=\"#dddddd\"/>\n");
    absl::StrAppend(&out, "<text x=\"", Num(x_left - 6), "\" y=\"", Num(py + 4),
                    "\" text-anchor=\"end\">", Escape(TickText(t)), "</text>\n");
  }
  double mid = (y.pixel_lo + y.pixel_hi) / 2;
  absl::StrAppend(&out, "<text x=\"16\" y=\"", Num(mid), "\" transform=\"rotate(-90 16 ", Num(mid),
                  ")\" text-anchor=\"middle\">", Escape(label), "</text>\n</g>\n");
  return out;
}

// One legend row per entry, top right; `bound` entries are drawn as a tick, others as a swatch.
struct LegendEntry {
  std::string name, color;
  bool tick = false;
};

std::string Legend(const std::vector<LegendEntry>& entries, double x_right, double y_top) {
  std::string out = "<g class=\"legend\">\n";
  double y = y_top;
  for (const LegendEntry& e : entries) {
    double x = x_right - 150;
    if (e.tick) {
      absl::StrAppend(&out, "<line x1=\"", Num(x), "\" y1=\"", Num(y + 5), "\" x2=\"", Num(x + 12),
                      "\" y2=\"", Num(y + 5), "\" stroke=\"", e.color, "\" stroke-width=\"3\"/>\n");
    } else {
      absl::StrAppend(&out, "<rect x=\"", Num(x), "\" y=\"", Num(y), "\" width=\"12\" ",
                      "height=\"10\" fill=\"", e.color, "\"/>\n");
    }
    absl::StrAppend(&out, "<text class=\"legend-name\" x=\"", Num(x + 18), "\" y=\"", Num(y + 10),
                    "\">", Escape(e.name), "</text>\n");
    y += 16;
  }
  return out + "</g>\n";
}

}  // namespace

namespace {

bool DrawableBound(const std::optional<double>& bound) {
  return bound && std::isfinite(*bound) && *bound >= 0;
}

// One group: its bars from x0 over `width`, its bound tick and its x label.
std::string GroupSvg(const BarGroup& g, const Axis& y, double x0, double width, double bar_w,
                     bool rotate) {
  std::string out;
  const double bottom = y.pixel_lo;
  for (size_t s = 0; s < g.values.size(); ++s) {
    double v = g.values[s];
    // Non-finite or negative: a zero-height bar, so the group keeps its layout.
    double py = std::isfinite(v) && v > 0 ? y.Map(v) : bottom;
    absl::StrAppend(&out, "<rect class=\"bar\" x=\"", Num(x0 + s * bar_w), "\" y=\"", Num(py),
                    "\" width=\"", Num(bar_w), "\" height=\"", Num(bottom - py), "\" fill=\"",
                    kPalette[s % kPaletteSize], "\"><title>", Escape(g.label), ": ",
                    Escape(TickText(std::isfinite(v) ? v : 0)), "</title></rect>\n");
  }
  if (DrawableBound(g.bound)) {
    double py = y.Map(*g.bound);
    absl::StrAppend(&out, "<line class=\"bound\" x1=\"", Num(x0), "\" y1=\"", Num(py), "\" x2=\"",
                    Num(x0 + width), "\" y2=\"", Num(py), "\" stroke=\"", kBoundColor,
                    "\" stroke-width=\"2\"/>\n");
  }
  double lx = x0 + width / 2, ly = bottom + 14;
  absl::StrAppend(&out, "<text class=\"x-label\" x=\"", Num(lx), "\" y=\"", Num(ly), "\"",
                  rotate ? absl::StrCat(" transform=\"rotate(-45 ", Num(lx), " ", Num(ly),
                                        ")\" text-anchor=\"end\"")
                         : std::string(" text-anchor=\"middle\""),
                  ">", Escape(g.label), "</text>\n");
  return out;
}

}  // namespace

std::string RenderBarChart(const BarChart& chart) {
  const double left = 70, right = chart.width - 170, top = 40, bottom = chart.height - 120;
  std::vector<double> all;
  bool any_bound = false;
  for (const BarGroup& g : chart.groups) {
    all.insert(all.end(), g.values.begin(), g.values.end());
    if (DrawableBound(g.bound)) all.push_back(*g.bound);
    any_bound |= DrawableBound(g.bound);
  }
  Axis y = MakeValueAxis(all, chart.log_y, /*from_zero=*/true);
  y.pixel_lo = bottom;
  y.pixel_hi = top;
  std::string out = Header(chart.width, chart.height, chart.title);
  out += YAxis(y, left, right, chart.y_label);

  const double group_w = (right - left) / std::max<size_t>(1, chart.groups.size());
  const double bar_w = group_w * 0.8 / std::max<size_t>(1, chart.series_names.size());
  out += "<g class=\"bars\">\n";
  for (size_t i = 0; i < chart.groups.size(); ++i) {
    out += GroupSvg(chart.groups[i], y, left + i * group_w + group_w * 0.1, group_w * 0.8, bar_w,
                    /*rotate=*/chart.groups.size() > 8);
  }
  absl::StrAppend(&out, "<line x1=\"", Num(left), "\" y1=\"", Num(bottom), "\" x2=\"", Num(right),
                  "\" y2=\"", Num(bottom), "\" stroke=\"black\"/>\n</g>\n");
  std::vector<LegendEntry> legend;
  for (size_t s = 0; s < chart.series_names.size(); ++s)
    legend.push_back({chart.series_names[s], kPalette[s % kPaletteSize]});
  if (any_bound && !chart.bound_name.empty())
    legend.push_back({chart.bound_name, kBoundColor, true});
  out += Legend(legend, chart.width, top);
  return out + "</svg>\n";
}

std::string RenderLineChart(const LineChart& chart) {
  const double left = 70, right = chart.width - 170, top = 40, bottom = chart.height - 50;
  std::vector<double> xs, ys;
  for (const LineSeries& s : chart.series) {
    for (const auto& [x, v] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(v) || v < 0) continue;
      xs.push_back(x);
      ys.push_back(v);
    }
  }
  Axis x = MakeValueAxis(xs, false, /*from_zero=*/false);
  x.pixel_lo = left;
  x.pixel_hi = right;
  Axis y = MakeValueAxis(ys, chart.log_y, /*from_zero=*/true);
  y.pixel_lo = bottom;
  y.pixel_hi = top;
  std::string out = Header(chart.width, chart.height, chart.title);
  out += YAxis(y, left, right, chart.y_label);
  out += "<g class=\"x-axis\">\n";
  for (double t : x.Ticks()) {
    absl::StrAppend(&out, "<text x=\"", Num(x.Map(t)), "\" y=\"", Num(bottom + 16),
                    "\" text-anchor=\"middle\">", Escape(TickText(t)), "</text>\n");
  }
  absl::StrAppend(&out, "<line x1=\"", Num(left), "\" y1=\"", Num(bottom), "\" x2=\"", Num(right),
                  "\" y2=\"", Num(bottom), "\" stroke=\"black\"/>\n<text x=\"",
                  Num((left + right) / 2), "\" y=\"", Num(bottom + 36),
                  "\" text-anchor=\"middle\">", Escape(chart.x_label), "</text>\n</g>\n");
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const LineSeries& s = chart.series[i];
    const char* color = kPalette[i % kPaletteSize];
    legend.push_back({s.name, color});
    std::string points;
    double prev_py = 0;
    bool first = true;
    for (const auto& [px, v] : s.points) {
      // Skipped, not clamped: a point at a made-up position would be a lie on a trend line.
      if (!std::isfinite(px) || !std::isfinite(v) || v < 0 || (chart.log_y && v <= 0)) continue;
      double sx = x.Map(px), sy = y.Map(v);
      if (s.step && !first) absl::StrAppend(&points, Num(sx), ",", Num(prev_py), " ");
      absl::StrAppend(&points, Num(sx), ",", Num(sy), " ");
      prev_py = sy;
      first = false;
    }
    absl::StrAppend(&out, "<polyline class=\"series\" fill=\"none\" stroke=\"", color,
                    "\" stroke-width=\"2\" points=\"", points, "\"><title>", Escape(s.name),
                    "</title></polyline>\n");
  }
  out += Legend(legend, chart.width, top);
  return out + "</svg>\n";
}

}  // namespace tunejit
