// The results of `dsserve tune`: one TunePoint per setting, the recommendation, the markdown
// table and the SVG plot (self-contained, no scripts or external references).
//
// Recommendation: among settings with no failed request whose P99 TTFT and P99 TPOT meet the
// SLO (each when set), the one with the highest output throughput. When none meets it, the one
// closest to it: the smallest worst ratio max(P99 TTFT / SLO TTFT, P99 TPOT / SLO TPOT).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "apps/bench/slo.h"

namespace dss::bench {

struct TunePoint {
  std::string label;  // "max-running-requests=4"
  std::string flags;  // "--max-running-requests 4" (server flags of the setting)
  int64_t completed = 0, failed = 0;
  double request_throughput = 0, output_throughput = 0;  // req/s, tok/s
  double p50_ttft_ms = 0, p99_ttft_ms = 0, p50_tpot_ms = 0, p99_tpot_ms = 0;
  std::optional<double> goodput;        // req/s (with an SLO)
  std::optional<double> busy_fraction;  // engine busy seconds / wall seconds (dsserve only)
};

struct Recommendation {
  size_t index = 0;
  bool meets_slo = false;
};

bool meets_slo(const TunePoint& p, const Slo& slo);
// nullopt when `points` is empty.
std::optional<Recommendation> recommend(const std::vector<TunePoint>& points, const Slo& slo);

// Markdown table, one row per point, the recommended row marked with '*'.
std::string tune_table(const std::vector<TunePoint>& points,
                       const std::optional<Recommendation>& rec);

// SVG: output throughput against P99 TTFT (left panel) and P99 TPOT (right panel), the SLO as a
// dashed vertical line in each, the recommended point ringed.
std::string tune_svg(const std::vector<TunePoint>& points, const Slo& slo,
                     const std::optional<Recommendation>& rec, const std::string& title);

}  // namespace dss::bench
