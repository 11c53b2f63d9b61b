// Reads one unlabelled sample from Prometheus text exposition (e.g. a /metrics scrape).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dss::bench {

// The value of the first line "NAME VALUE" (no labels); nullopt when absent or malformed.
std::optional<double> prom_sample(std::string_view text, std::string_view name);

}  // namespace dss::bench
