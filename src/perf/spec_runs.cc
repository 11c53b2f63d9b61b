#include "perf/spec_runs.h"

#include <cmath>

#include "base/check.h"
#include "base/clock.h"
#include "base/percentile.h"
#include "perf/batch_driver.h"
#include "perf/model_runs.h"
#include "perf/progress.h"

namespace dss::perf {

double expected_tokens_per_cycle(double alpha, int32_t k) {
  double sum = 0.0, p = 1.0;
  for (int32_t i = 0; i <= k; ++i, p *= alpha) sum += p;
  return sum;
}

namespace {

constexpr int32_t kStepsPerRep = 8;

// Batch b: the sequences prefilled to spec_context tokens, then per repetition kStepsPerRep of
// each step kind, the cache cut back to the context after each (so every step sees the same
// length). Returns the medians.
SpecStepTimes bench_batch(const Model& m, const BenchModelOptions& a, int32_t b, Rng& rng) {
  const int32_t k = a.spec_steps, ctx = a.spec_context, V = m.config().n_vocab;
  const int32_t chunk = std::min(ctx, 256);
  BatchDriver d(m, b, ctx + k + 1, std::max(chunk, k + 1), a.page_size, kv_dtype_of(m, a));
  for (int32_t done = 0; done < ctx;) {
    const int32_t n = std::min(chunk, ctx - done);
    d.step(random_ids(rng, static_cast<size_t>(b) * n, V), n);
    done += n;
  }
  std::vector<double> plain, verify, catchup, draft;
  double plain_reads = 0, verify_reads = 0;  // routed expert reads of the timed steps
  auto timed = [](std::vector<double>& out, auto&& fn) {
    const double t0 = now_seconds();
    fn();
    out.push_back((now_seconds() - t0) * 1e3);
  };
  for (int32_t rep = 0; rep <= a.repetitions; ++rep) {  // rep 0: warm-up, dropped below
    for (int32_t i = 0; i < kStepsPerRep; ++i) {
      const auto one = random_ids(rng, static_cast<size_t>(b), V);
      const auto kk = random_ids(rng, static_cast<size_t>(b) * (k + 1), V);
      const int64_t r0 = d.routed_expert_reads();
      timed(plain, [&] { d.step(one, 1); });
      const int64_t r1 = d.routed_expert_reads();
      timed(draft, [&] { d.mtp_step(one, 1); });
      d.truncate(ctx);
      timed(verify, [&] { d.step(kk, k + 1, /*verify=*/true); });
      if (rep > 0) {
        plain_reads += static_cast<double>(r1 - r0);
        verify_reads += static_cast<double>(d.routed_expert_reads() - r1);
      }
      timed(catchup, [&] { d.mtp_step(kk, k + 1); });
      d.truncate(ctx);
    }
    if (rep == 0) {
      for (auto* v : {&plain, &verify, &catchup, &draft}) v->clear();
    }
  }
  const double n = static_cast<double>(plain.size());
  return {b,
          percentile(plain, 50),
          percentile(verify, 50),
          percentile(catchup, 50),
          percentile(draft, 50),
          plain_reads / n,
          verify_reads / n};
}

}  // namespace

std::vector<SpecStepTimes> bench_spec_steps(const Model& m, const BenchModelOptions& a, Rng& rng) {
  DSS_CHECK(m.has_mtp(), "bench_spec_steps without the MTP module");
  std::vector<SpecStepTimes> out;
  for (int32_t b : a.spec_batch) {
    progress("bench-model: speculative steps, batch %d, K %d, context %d\n", b, a.spec_steps,
             a.spec_context);
    out.push_back(bench_batch(m, a, b, rng));
  }
  return out;
}

}  // namespace dss::perf
