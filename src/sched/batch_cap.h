// BatchCapController: the dynamic running-batch limit (`--slo-tpot-ms`, `--slo-ttft-ms`).
// Pure policy over plain numbers (rule 8): no clock, no engine; the engine feeds it one
// observation per step and applies `cap()` to the scheduler's admission limit.
//
// Signals (what a client measures, approximated on the engine side):
//   - TPOT: every running request gets one token per decode step, so a request's time per output
//     token is the duration of the steps it decodes in. The controller keeps the durations of the
//     last `window` steps that decoded (prefill chunks in the same step count: the client sees them
//     as TPOT too) and takes their P99 (nearest rank).
//   - TTFT: the engine reports each request's arrival -> first token time when it happens; the
//     controller keeps the last `window` of them and takes their P99.
// Start: with a TPOT target the cap starts at `min_cap` and doubles per raise (slow start) until
// the first lowering; then raises are +1 (additive increase). Without a TPOT target it starts at
// the configured maximum. (A burst admitted at the full cap at start-up would keep its slow steps
// until those requests finish, since lowering never preempts.)
// Decision, every `interval` decode steps, once `interval` samples exist since the last change:
//   - P99 TPOT > target: with base = min(cap, running) (so a cap far above the running batch bites
//     at once), lower the cap to max(min, min(base - 1, floor(base * target / P99))): proportional
//     decrease (step time grows at most linearly with the batch, so this removes the overshoot);
//   - else if there is demand (requests waiting while the batch is at the cap) and P99 TPOT is
//     below `raise_below` x target, or below the target itself while P99 TTFT misses its target:
//     raise the cap (x2 in slow start, else +1), up to the configured maximum. A TTFT target
//     alone never lowers the cap (a smaller batch only delays admission); it lets a cap rise.
//   The window is cleared after a change so the next decision measures the new cap.
// Lowering never preempts: the scheduler stops admitting until the batch shrinks under the cap.
#pragma once

#include <cstdint>
#include <deque>

namespace dss {

struct BatchCapConfig {
  double tpot_target_ms = 0.0;  // --slo-tpot-ms (0: no TPOT target)
  double ttft_target_ms = 0.0;  // --slo-ttft-ms (0: no TTFT target)
  int32_t max_cap = 32;         // --max-running-requests
  int32_t min_cap = 1;
  int32_t window = 16;       // observations per P99 (nearest rank of 16: the maximum)
  int32_t interval = 4;      // decode steps between decisions
  double raise_below = 0.8;  // raise only while P99 TPOT < raise_below * target
  bool enabled() const { return tpot_target_ms > 0.0 || ttft_target_ms > 0.0; }
};

class BatchCapController {
 public:
  explicit BatchCapController(const BatchCapConfig& cfg);

  // One engine step: its duration, how many sequences decoded in it, how many are running and
  // waiting after it. Steps without decodes (pure prefill) do not count as TPOT samples.
  void on_step(double step_ms, int32_t n_decoding, int32_t n_running, int32_t n_waiting);
  // A request's first token arrived `ttft_ms` after its arrival.
  void on_first_token(double ttft_ms);

  int32_t cap() const { return cap_; }
  int64_t n_raises() const { return n_raises_; }
  int64_t n_lowers() const { return n_lowers_; }
  double p99_tpot_ms() const;  // of the current window; 0 when empty
  double p99_ttft_ms() const;

 private:
  void decide(int32_t n_running, int32_t n_waiting);

  BatchCapConfig cfg_;
  int32_t cap_;
  int32_t steps_since_decision_ = 0;
  std::deque<double> tpot_ms_;
  std::deque<double> ttft_ms_;
  int64_t n_raises_ = 0;
  int64_t n_lowers_ = 0;
  bool slow_start_ = false;  // doubling raises until the first lowering
};

// Nearest-rank P99 of `v` (0 when empty). Exposed for tests.
double p99_nearest_rank(const std::deque<double>& v);

}  // namespace dss
