// run_tune: `dsserve tune`. For each grid setting: start `dsserve serve` with the setting's
// flags (or use --base-url's running server for client-only grids), run the benchmark, scrape
// `dsserve:engine_busy_seconds_total` around the measured run (busy fraction = its delta / wall
// time), stop the server. Then print the table and the recommended flags, and write into
// `out_dir`: tune.md (command, table, recommendation), tune.svg, tune.json, bench-<i>.json.
#pragma once

#include <string>
#include <vector>

#include "apps/bench/benchmark.h"
#include "base/status.h"

namespace dss::bench {

struct TuneOptions {
  BenchOptions bench;  // workload; base_url used only with use_running_server
  bool use_running_server = false;
  std::string exe;                      // the dsserve binary to launch
  std::string model_dir;                // --model of the launched servers
  std::vector<std::string> serve_args;  // extra `serve` flags for every setting
  std::vector<std::string> grid;        // "KEY=V1,V2" axes
  std::string out_dir = "tune-out";
  std::string command_line;  // recorded in tune.md
  double start_timeout_s = 600;
};

Status run_tune(const TuneOptions& o);

}  // namespace dss::bench
