#include "apps/bench/tune.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "apps/bench/http_client.h"
#include "apps/bench/prom_text.h"
#include "apps/bench/server_process.h"
#include "apps/bench/tune_grid.h"
#include "apps/bench/tune_report.h"
#include "base/clock.h"
#include "base/str_cat.h"

namespace dss::bench {

namespace {

std::optional<double> busy_seconds(const std::string& base_url) {
  auto url = parse_base_url(base_url);
  if (!url) return std::nullopt;
  auto r = http_call(*url, "/metrics", "", 10);
  if (!r || r->status != 200) return std::nullopt;
  return prom_sample(r->body, "dsserve:engine_busy_seconds_total");
}

// The engine adds a step's time to the counter after the step's tokens went out, so right after
// the last response of a phase the counter may still miss that step. Re-read until two reads 20 ms
// apart agree (at most ~1 s), so each phase's steps land on its own side of the boundary.
std::optional<double> settled_busy_seconds(const std::string& base_url) {
  std::optional<double> v = busy_seconds(base_url);
  for (int k = 0; v && k < 50; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::optional<double> w = busy_seconds(base_url);
    if (!w || *w == *v) break;
    v = w;
  }
  return v;
}

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return f ? Status::ok() : Status::error("cannot write ", path);
}

Status apply_client_value(const std::string& key, const std::string& v, BenchOptions& b) {
  char* end = nullptr;
  const double x = v == "inf" ? INFINITY : std::strtod(v.c_str(), &end);
  if (v != "inf" && (end == v.c_str() || *end != 0 || !(x >= 0)))
    return Status::error("--grid ", key, ": '", v, "' is not a number");
  if (key == "max-concurrency") b.max_concurrency = static_cast<int32_t>(x);
  if (key == "request-rate") b.request_rate = x;
  return Status::ok();
}

// Starts the setting's server (unless a running one is used), benchmarks it, stops it; writes
// `bench-<i>.json` and returns the point.
Result<TunePoint> run_setting(const TuneOptions& o, const TuneSetting& s, size_t i) {
  BenchOptions b = o.bench;
  for (const auto& [k, v] : s.values)
    if (is_client_key(k)) DSS_RETURN_IF_ERROR(apply_client_value(k, v, b));
  ServerProcess server;
  if (!o.use_running_server) {
    std::vector<std::string> args = {"--model", o.model_dir};
    args.insert(args.end(), o.serve_args.begin(), o.serve_args.end());
    for (const std::string& f : s.server_flags()) args.push_back(f);
    const std::string log = o.out_dir + "/server-" + std::to_string(i) + ".log";
    DSS_RETURN_IF_ERROR(server.start(o.exe, args, log, o.start_timeout_s));
    b.base_url = server.base_url();
  }
  std::optional<double> busy0, busy1;
  double t0 = 0, t1 = 0;
  b.on_main_start = [&] {
    busy0 = settled_busy_seconds(b.base_url);
    t0 = now_seconds();
  };
  b.on_main_end = [&] {
    t1 = now_seconds();
    busy1 = settled_busy_seconds(b.base_url);
  };
  b.label = s.label();
  DSS_ASSIGN_OR_RETURN(BenchOutcome out, run_benchmark(b));
  if (!o.use_running_server) server.stop();
  const BenchMetrics& m = out.metrics;
  TunePoint p;
  p.label = s.label();
  p.flags = s.server_flags_text();
  p.completed = m.completed;
  p.failed = m.failed;
  p.request_throughput = m.request_throughput;
  p.output_throughput = m.output_throughput;
  p.p50_ttft_ms = m.ttft.median;
  p.p99_ttft_ms = out.json["p99_ttft_ms"].get<double>();
  p.p50_tpot_ms = m.tpot.median;
  p.p99_tpot_ms = out.json["p99_tpot_ms"].get<double>();
  if (!b.slo.empty()) p.goodput = m.request_goodput;
  if (busy0 && busy1 && t1 > t0) p.busy_fraction = (*busy1 - *busy0) / (t1 - t0);
  out.json["tune_setting"] = s.label();
  DSS_RETURN_IF_ERROR(
      write_file(o.out_dir + "/bench-" + std::to_string(i) + ".json", out.json.dump(2) + "\n"));
  return p;
}

OrderedJson point_json(const TunePoint& p) {
  OrderedJson j;
  j["setting"] = p.label;
  j["server_flags"] = p.flags;
  j["completed"] = p.completed;
  j["failed"] = p.failed;
  j["request_throughput"] = p.request_throughput;
  j["output_throughput"] = p.output_throughput;
  j["median_ttft_ms"] = p.p50_ttft_ms;
  j["p99_ttft_ms"] = p.p99_ttft_ms;
  j["median_tpot_ms"] = p.p50_tpot_ms;
  j["p99_tpot_ms"] = p.p99_tpot_ms;
  j["request_goodput"] = p.goodput ? OrderedJson(*p.goodput) : OrderedJson(nullptr);
  j["engine_busy_fraction"] =
      p.busy_fraction ? OrderedJson(*p.busy_fraction) : OrderedJson(nullptr);
  return j;
}

// "recommended (...): SETTING" plus the serve command line when tune launched the servers.
std::string advice_text(const TuneOptions& o, const std::vector<TunePoint>& points,
                        const std::optional<Recommendation>& rec) {
  if (!rec) return "";
  const TunePoint& r = points[rec->index];
  std::string a = str_cat(rec->meets_slo ? "recommended (highest throughput meeting the SLO "
                                         : "no setting met the SLO; closest to it (SLO ",
                          slo_to_string(o.bench.slo), "): ", r.label, "\n");
  if (o.use_running_server) return a;
  a += "  dsserve serve --model " + o.model_dir;
  for (const std::string& x : o.serve_args) a += " " + x;
  if (!r.flags.empty()) a += " " + r.flags;
  return a + "\n";
}

Status write_outputs(const TuneOptions& o, const std::vector<TunePoint>& points,
                     const std::optional<Recommendation>& rec, const std::string& table,
                     const std::string& advice) {
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  const Slo& slo = o.bench.slo;
  const std::string title =
      str_cat("dsserve tune: ", o.bench.scenario, ", SLO P99 ", slo_to_string(slo));
  DSS_RETURN_IF_ERROR(write_file(o.out_dir + "/tune.svg", tune_svg(points, slo, rec, title)));
  DSS_RETURN_IF_ERROR(write_file(
      o.out_dir + "/tune.md",
      str_cat("# dsserve tune\n\n", date, "\n\n```\n", o.command_line, "\n```\n\n", table, "\n",
              advice.empty() ? "" : "```\n" + advice + "```\n", "\n![plot](tune.svg)\n")));
  OrderedJson doc;
  doc["date"] = date;
  doc["command"] = o.command_line;
  doc["slo"] = slo_to_string(slo);
  doc["points"] = OrderedJson::array();
  for (const TunePoint& p : points) doc["points"].push_back(point_json(p));
  doc["recommended"] = rec ? OrderedJson(points[rec->index].label) : OrderedJson(nullptr);
  doc["recommended_meets_slo"] = rec && rec->meets_slo;
  return write_file(o.out_dir + "/tune.json", doc.dump(2) + "\n");
}

}  // namespace

Status run_tune(const TuneOptions& o) {
  DSS_ASSIGN_OR_RETURN(std::vector<TuneSetting> settings, expand_grid(o.grid));
  if (o.use_running_server)
    for (const TuneSetting& s : settings)
      if (!s.server_flags().empty())
        return Status::error(
            "--grid ", s.label(),
            ": server flags need a server tune starts (use --model, not --base-url)");
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) return Status::error("--out-dir ", o.out_dir, ": ", ec.message());

  std::vector<TunePoint> points;
  for (size_t i = 0; i < settings.size(); ++i) {
    std::fprintf(stderr, "tune: [%zu/%zu] %s\n", i + 1, settings.size(),
                 settings[i].label().c_str());
    DSS_ASSIGN_OR_RETURN(TunePoint p, run_setting(o, settings[i], i));
    std::fprintf(stderr, "tune:   %.2f output tok/s, P99 TTFT %.0f ms, P99 TPOT %.0f ms\n",
                 p.output_throughput, p.p99_ttft_ms, p.p99_tpot_ms);
    points.push_back(std::move(p));
  }
  const auto rec = recommend(points, o.bench.slo);
  const std::string table = tune_table(points, rec);
  const std::string advice = advice_text(o, points, rec);
  std::printf("%s\n%s", table.c_str(), advice.c_str());
  std::fflush(stdout);
  return write_outputs(o, points, rec, table, advice);
}

}  // namespace dss::bench
