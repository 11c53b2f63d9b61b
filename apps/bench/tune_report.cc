#include "apps/bench/tune_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/str_cat.h"

namespace dss::bench {

namespace {

std::string fmt(double v, int prec = 2) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*f", prec, v);
  return b;
}

double worst_ratio(const TunePoint& p, const Slo& slo) {
  double r = 0;
  if (slo.ttft_ms) r = std::max(r, p.p99_ttft_ms / *slo.ttft_ms);
  if (slo.tpot_ms) r = std::max(r, p.p99_tpot_ms / *slo.tpot_ms);
  if (p.failed > 0 || p.completed == 0) r = std::max(r, 1e9);
  return r;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

// A "nice" upper axis bound >= v (1, 2, 2.5, 5 x 10^k).
double nice_ceil(double v) {
  if (!(v > 0)) return 1;
  const double e = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * e >= v) return m * e;
  return 10 * e;
}

// Geometry of the SVG (px).
constexpr double kSvgW = 960, kSvgH = 440, kPanelW = 400, kPanelH = 300, kTop = 70, kLeft0 = 70,
                 kGap = 80;

struct Panel {
  const char* name;      // x axis title
  double TunePoint::*x;  // x value of a point
  std::optional<double> slo;
};

// One panel at `left`: frame, ticks, SLO line, the points (green when they meet the SLO), the
// recommended one ringed. y = output tok/s on [0, y_max].
std::string svg_panel(const std::vector<TunePoint>& points, const Slo& slo,
                      const std::optional<Recommendation>& rec, const Panel& pn, double left,
                      double y_max) {
  double x_max = pn.slo.value_or(0);
  for (const TunePoint& p : points) x_max = std::max(x_max, p.*pn.x);
  x_max = nice_ceil(x_max * 1.1);
  auto px = [&](double v) { return left + v / x_max * kPanelW; };
  auto py = [&](double v) { return kTop + kPanelH - v / y_max * kPanelH; };
  std::string s = str_cat("<rect x=\"", left, "\" y=\"", kTop, "\" width=\"", kPanelW,
                          "\" height=\"", kPanelH, "\" fill=\"none\" stroke=\"#444\"/>\n");
  for (int t = 0; t <= 5; ++t) {  // ticks and grid
    const double xv = x_max * t / 5, yv = y_max * t / 5;
    s += str_cat("<line x1=\"", px(xv), "\" y1=\"", kTop, "\" x2=\"", px(xv), "\" y2=\"",
                 kTop + kPanelH, "\" stroke=\"#eee\"/>\n<text x=\"", px(xv), "\" y=\"",
                 kTop + kPanelH + 16, "\" text-anchor=\"middle\">", fmt(xv, xv < 10 ? 1 : 0),
                 "</text>\n<line x1=\"", left, "\" y1=\"", py(yv), "\" x2=\"", left + kPanelW,
                 "\" y2=\"", py(yv), "\" stroke=\"#eee\"/>\n<text x=\"", left - 6, "\" y=\"",
                 py(yv) + 4, "\" text-anchor=\"end\">", fmt(yv, yv < 10 ? 1 : 0), "</text>\n");
  }
  s += str_cat("<text x=\"", left + kPanelW / 2, "\" y=\"", kTop + kPanelH + 36,
               "\" text-anchor=\"middle\">", pn.name, "</text>\n<text x=\"", left - 48, "\" y=\"",
               kTop + kPanelH / 2, "\" text-anchor=\"middle\" transform=\"rotate(-90 ", left - 48,
               " ", kTop + kPanelH / 2, ")\">output tok/s</text>\n");
  if (pn.slo)
    s += str_cat("<line x1=\"", px(*pn.slo), "\" y1=\"", kTop, "\" x2=\"", px(*pn.slo), "\" y2=\"",
                 kTop + kPanelH, "\" stroke=\"#d33\" stroke-dasharray=\"6 4\"/>\n", "<text x=\"",
                 px(*pn.slo) + 4, "\" y=\"", kTop + 14, "\" fill=\"#d33\">SLO ", fmt(*pn.slo, 0),
                 " ms</text>\n");
  std::string path;
  for (size_t i = 0; i < points.size(); ++i)
    path += str_cat(i == 0 ? "M" : " L", px(points[i].*pn.x), " ", py(points[i].output_throughput));
  if (!path.empty())
    s += str_cat("<path d=\"", path, "\" fill=\"none\" stroke=\"#88a\" stroke-width=\"1\"/>\n");
  for (size_t i = 0; i < points.size(); ++i) {
    const TunePoint& p = points[i];
    const double cx = px(p.*pn.x), cy = py(p.output_throughput);
    s += str_cat("<circle cx=\"", cx, "\" cy=\"", cy, "\" r=\"4\" fill=\"",
                 meets_slo(p, slo) ? "#2a7" : "#999", "\"/>\n<text x=\"", cx + 6, "\" y=\"", cy - 6,
                 "\" font-size=\"10\">", xml_escape(p.label), "</text>\n");
    if (rec && rec->index == i)
      s += str_cat("<circle cx=\"", cx, "\" cy=\"", cy,
                   "\" r=\"9\" fill=\"none\" stroke=\"#d33\" stroke-width=\"2\"/>\n");
  }
  return s;
}

}  // namespace

bool meets_slo(const TunePoint& p, const Slo& slo) {
  if (p.failed > 0 || p.completed == 0) return false;
  if (slo.ttft_ms && p.p99_ttft_ms > *slo.ttft_ms) return false;
  if (slo.tpot_ms && p.p99_tpot_ms > *slo.tpot_ms) return false;
  return true;
}

std::optional<Recommendation> recommend(const std::vector<TunePoint>& points, const Slo& slo) {
  if (points.empty()) return std::nullopt;
  std::optional<Recommendation> best;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!meets_slo(points[i], slo)) continue;
    if (!best || points[i].output_throughput > points[best->index].output_throughput)
      best = Recommendation{i, true};
  }
  if (best) return best;
  Recommendation r{0, false};
  for (size_t i = 1; i < points.size(); ++i)
    if (worst_ratio(points[i], slo) < worst_ratio(points[r.index], slo)) r.index = i;
  return r;
}

std::string tune_table(const std::vector<TunePoint>& points,
                       const std::optional<Recommendation>& rec) {
  std::string s =
      "| | setting | completed | failed | req/s | output tok/s | P50 TTFT ms | P99 TTFT ms | "
      "P50 TPOT ms | P99 TPOT ms | goodput req/s | engine busy |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < points.size(); ++i) {
    const TunePoint& p = points[i];
    s += str_cat("| ", rec && rec->index == i ? "*" : "", " | ", p.label, " | ", p.completed, " | ",
                 p.failed, " | ", fmt(p.request_throughput, 3), " | ", fmt(p.output_throughput),
                 " | ", fmt(p.p50_ttft_ms, 1), " | ", fmt(p.p99_ttft_ms, 1), " | ",
                 fmt(p.p50_tpot_ms, 1), " | ", fmt(p.p99_tpot_ms, 1), " | ",
                 p.goodput ? fmt(*p.goodput, 3) : "-", " | ",
                 p.busy_fraction ? fmt(*p.busy_fraction * 100, 0) + "%" : "-", " |\n");
  }
  return s;
}

std::string tune_svg(const std::vector<TunePoint>& points, const Slo& slo,
                     const std::optional<Recommendation>& rec, const std::string& title) {
  double y_max = 0;
  for (const TunePoint& p : points) y_max = std::max(y_max, p.output_throughput);
  y_max = nice_ceil(y_max * 1.1);
  std::string s = str_cat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"",
      kSvgW, "\" height=\"", kSvgH, "\" viewBox=\"0 0 ", kSvgW, " ", kSvgH,
      "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"",
      kSvgW / 2,
      "\" y=\"24\" text-anchor=\"middle\" "
      "font-size=\"15\">",
      xml_escape(title), "</text>\n");
  const Panel panels[] = {{"P99 TTFT (ms)", &TunePoint::p99_ttft_ms, slo.ttft_ms},
                          {"P99 TPOT (ms)", &TunePoint::p99_tpot_ms, slo.tpot_ms}};
  for (int k = 0; k < 2; ++k)
    s += svg_panel(points, slo, rec, panels[k], kLeft0 + k * (kPanelW + kGap), y_max);
  s += str_cat("<text x=\"", kLeft0, "\" y=\"", kSvgH - 14,
               "\" font-size=\"11\">green: meets the SLO (P99 TTFT and P99 TPOT, no failures); "
               "red ring: recommended",
               rec && !rec->meets_slo ? " (closest; none met the SLO)" : "", "</text>\n</svg>\n");
  return s;
}

}  // namespace dss::bench
