// Slo: the latency targets of `--slo ttft:MS,tpot:MS[,e2el:MS]` (goodput and tune's
// recommendation).
#pragma once

#include <optional>
#include <string>

#include "base/status.h"

namespace dss::bench {

struct Slo {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool empty() const { return !ttft_ms && !tpot_ms && !e2el_ms; }
};

// Parses "ttft:500,tpot:100" (keys ttft, tpot, e2el; values in ms, > 0). "" gives an empty Slo.
Result<Slo> parse_slo(const std::string& text);
// The canonical text form, e.g. "ttft:500,tpot:100".
std::string slo_to_string(const Slo& slo);

}  // namespace dss::bench
