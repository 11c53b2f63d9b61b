#include "perf/model_runs.h"

#include <algorithm>
#include <memory>
#include <span>

#include "base/check.h"
#include "base/clock.h"
#include "base/phase_timer.h"
#include "kv/kv_cache.h"
#include "perf/batch_driver.h"
#include "perf/progress.h"
#include "perf/read_bandwidth.h"

namespace dss::perf {

namespace {

// Before repetition rep's timed forward calls (rep -1: the warm-up): the phase totals start at
// the first measured one, and each measured repetition starts at another variant, so that its
// first call (after a bandwidth sample's cold caches) does not always fall on the same one, as it
// would with an even number of calls per repetition.
void start_repetition_phases(int32_t rep) {
  if (rep == 0) phase_reset();
  if (rep >= 0) restart_phase_variants(rep);
}

}  // namespace

DType kv_dtype_of(const Model& m, const BenchModelOptions& a) {
  DType t = m.default_kv_dtype();
  if (a.kv_cache_dtype != "auto") DSS_CHECK(kv_dtype_from_name(a.kv_cache_dtype.c_str(), t));
  return t;
}

std::vector<TokenId> random_ids(Rng& rng, size_t n, int32_t n_vocab) {
  std::vector<TokenId> ids(n);
  for (TokenId& t : ids) t = static_cast<TokenId>(rng.next_u64() % static_cast<uint64_t>(n_vocab));
  return ids;
}

std::vector<double> bench_prefill(const Model& m, const BenchModelOptions& a, int32_t n, Rng& rng) {
  BatchDriver d(m, 1, n, n, a.page_size, kv_dtype_of(m, a));
  const std::vector<TokenId> ids = random_ids(rng, static_cast<size_t>(n), m.config().n_vocab);
  std::vector<double> tok_s;
  for (int32_t rep = -1; rep < a.repetitions; ++rep) {  // rep -1: warm-up
    d.truncate(0);
    start_repetition_phases(rep);
    const double t0 = now_seconds();
    d.step(ids, n);
    const double s = now_seconds() - t0;
    if (rep >= 0) tok_s.push_back(n / s);
  }
  return tok_s;
}

std::vector<double> bench_decode(const Model& m, const BenchModelOptions& a, int32_t b, Rng& rng,
                                 std::vector<double>* bw_gbps, double* routed_reads_per_step,
                                 double* collective_bytes_per_step) {
  const int32_t T = a.decode_tokens;
  BatchDriver d(m, b, T, 1, a.page_size, kv_dtype_of(m, a));
  const std::vector<TokenId> ids =
      random_ids(rng, static_cast<size_t>(b) * T, m.config().n_vocab);  // [T, b]
  std::vector<double> tok_s;
  int64_t reads = 0, steps = 0, coll = 0;
  if (bw_gbps != nullptr) bw_gbps->clear();
  for (int32_t rep = -1; rep < a.repetitions; ++rep) {
    d.truncate(0);
    const int32_t n_steps = rep < 0 ? std::min(T, 4) : T;  // warm-up: a few steps
    if (rep >= 0 && bw_gbps != nullptr)
      bw_gbps->push_back(measure_read_gbps(a.bandwidth_mib, m.n_threads()));
    const int64_t reads0 = d.routed_expert_reads(), coll0 = d.collective_bytes();
    start_repetition_phases(rep);
    const double t0 = now_seconds();
    for (int32_t i = 0; i < n_steps; ++i)
      d.step(std::span<const TokenId>(ids).subspan(static_cast<size_t>(i) * b, b), 1);
    const double s = now_seconds() - t0;
    if (rep >= 0) {
      tok_s.push_back(static_cast<double>(b) * T / s);
      reads += d.routed_expert_reads() - reads0;
      coll += d.collective_bytes() - coll0;
      steps += n_steps;
    }
  }
  *routed_reads_per_step = steps > 0 ? static_cast<double>(reads) / static_cast<double>(steps) : 0;
  if (collective_bytes_per_step != nullptr)
    *collective_bytes_per_step =
        steps > 0 ? static_cast<double>(coll) / static_cast<double>(steps) : 0;
  if (bw_gbps != nullptr) bw_gbps->push_back(measure_read_gbps(a.bandwidth_mib, m.n_threads()));
  return tok_s;
}

std::vector<ContextResult> bench_contexts(const Model& m, const BenchModelOptions& a, Rng& rng) {
  const int32_t steps = a.context_steps;
  struct Run {
    int32_t c;
    std::unique_ptr<BatchDriver> d;
    std::vector<TokenId> ids;
  };
  std::vector<Run> runs;
  std::vector<ContextResult> results(a.decode_context.size());
  for (size_t k = 0; k < a.decode_context.size(); ++k) {
    const int32_t c = a.decode_context[k];
    progress("bench-model: filling context %d (%s)\n", c, a.context_fill.c_str());
    Run r{c,
          std::make_unique<BatchDriver>(m, 1, c + steps, std::min(a.context_chunk, c), a.page_size,
                                        kv_dtype_of(m, a)),
          random_ids(rng, static_cast<size_t>(c) + steps, m.config().n_vocab)};
    const double t0 = now_seconds();
    if (a.context_fill == "synthetic") {
      r.d->fill_synthetic(c, a.seed);
    } else {
      for (int32_t i = 0; i < c; i += a.context_chunk) {
        const int32_t n = std::min(a.context_chunk, c - i);
        r.d->step(std::span<const TokenId>(r.ids).subspan(static_cast<size_t>(i), n), n);
      }
    }
    results[k].prefill_s = now_seconds() - t0;
    runs.push_back(std::move(r));
  }
  for (int32_t rep = -1; rep < a.repetitions; ++rep) {  // rep -1: one warm-up step each
    for (size_t k = 0; k < runs.size(); ++k) {
      Run& r = runs[k];
      r.d->truncate(r.c);
      const int32_t n_steps = rep < 0 ? 1 : steps;
      const double t1 = now_seconds();
      for (int32_t i = 0; i < n_steps; ++i)
        r.d->step(std::span<const TokenId>(r.ids).subspan(static_cast<size_t>(r.c + i), 1), 1);
      if (rep >= 0) results[k].tpot_ms.push_back((now_seconds() - t1) * 1e3 / steps);
    }
  }
  return results;
}

}  // namespace dss::perf
