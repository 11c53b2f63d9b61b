// TuneGrid: the settings `dsserve tune` tries, the cartesian product of its --grid axes.
//
// An axis is "KEY=V1,V2,...". Keys `max-concurrency` and `request-rate` are client settings of
// the benchmark; any other key is a `dsserve serve` flag (`--KEY V`), which needs a server that
// tune starts itself. Settings are ordered with the first axis varying slowest.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace dss::bench {

struct TuneSetting {
  std::vector<std::pair<std::string, std::string>> values;  // (key, value) per axis
  std::string label() const;                                // "max-running-requests=4"
  std::vector<std::string> server_flags() const;            // {"--max-running-requests", "4"}
  std::string server_flags_text() const;                    // "--max-running-requests 4"
};

bool is_client_key(const std::string& key);

// An empty `axes` gives one setting with no values.
Result<std::vector<TuneSetting>> expand_grid(const std::vector<std::string>& axes);

}  // namespace dss::bench
