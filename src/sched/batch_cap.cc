#include "sched/batch_cap.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"

namespace dss {

double p99_nearest_rank(const std::deque<double>& v) {
  if (v.empty()) return 0.0;
  std::vector<double> s(v.begin(), v.end());
  std::sort(s.begin(), s.end());
  // Nearest rank: the smallest value with at least 99% of the samples at or below it.
  const auto rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(s.size())));
  return s[std::max<size_t>(rank, 1) - 1];
}

BatchCapController::BatchCapController(const BatchCapConfig& cfg) : cfg_(cfg) {
  DSS_CHECK(cfg_.min_cap >= 1 && cfg_.max_cap >= cfg_.min_cap && cfg_.window >= 1 &&
            cfg_.interval >= 1);
  // With a TPOT target: slow start from the minimum (a burst at start-up would otherwise be
  // admitted at the full cap and keep its slow steps until those requests finish: lowering never
  // preempts).
  slow_start_ = cfg_.tpot_target_ms > 0.0;
  cap_ = slow_start_ ? cfg_.min_cap : cfg_.max_cap;
}

double BatchCapController::p99_tpot_ms() const { return p99_nearest_rank(tpot_ms_); }
double BatchCapController::p99_ttft_ms() const { return p99_nearest_rank(ttft_ms_); }

void BatchCapController::on_first_token(double ttft_ms) {
  ttft_ms_.push_back(ttft_ms);
  while (static_cast<int32_t>(ttft_ms_.size()) > cfg_.window) ttft_ms_.pop_front();
}

void BatchCapController::on_step(double step_ms, int32_t n_decoding, int32_t n_running,
                                 int32_t n_waiting) {
  if (!cfg_.enabled() || n_decoding <= 0) return;
  tpot_ms_.push_back(step_ms);
  while (static_cast<int32_t>(tpot_ms_.size()) > cfg_.window) tpot_ms_.pop_front();
  if (++steps_since_decision_ < cfg_.interval) return;
  if (static_cast<int32_t>(tpot_ms_.size()) < cfg_.interval) return;  // since the last change
  steps_since_decision_ = 0;
  decide(n_running, n_waiting);
}

void BatchCapController::decide(int32_t n_running, int32_t n_waiting) {
  const double tpot = p99_tpot_ms();
  const bool tpot_target = cfg_.tpot_target_ms > 0.0;
  const bool ttft_target = cfg_.ttft_target_ms > 0.0;
  const int32_t old = cap_;
  if (tpot_target && tpot > cfg_.tpot_target_ms) {
    // Step time grows at most linearly with the batch, so scaling the batch by target / P99
    // removes at least the overshoot; the additive increase below then finds the edge from under.
    const int32_t base = std::min(cap_, std::max(n_running, cfg_.min_cap));
    const auto scaled = static_cast<int32_t>(std::floor(base * cfg_.tpot_target_ms / tpot));
    cap_ = std::max(cfg_.min_cap, std::min(base - 1, scaled));
    slow_start_ = false;
  } else {
    const bool demand = n_waiting > 0 && n_running >= cap_;
    const bool ttft_wants = ttft_target && !ttft_ms_.empty() && p99_ttft_ms() > cfg_.ttft_target_ms;
    // A missed TTFT target may spend TPOT headroom up to the TPOT target itself.
    const bool tpot_room = !tpot_target || tpot < cfg_.raise_below * cfg_.tpot_target_ms ||
                           (ttft_wants && tpot < cfg_.tpot_target_ms);
    if (demand && tpot_room && (ttft_wants || tpot_target))
      cap_ = std::min(cfg_.max_cap, slow_start_ ? 2 * cap_ : cap_ + 1);
  }
  if (cap_ < old) ++n_lowers_;
  if (cap_ > old) ++n_raises_;
  if (cap_ != old) tpot_ms_.clear();
}

}  // namespace dss
