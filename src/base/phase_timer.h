// Wall-clock time per phase of the forward pass, for speed work: off until
// set_phase_timers(true) (`dsserve bench-model --phase-times`); while off, a scope costs one
// relaxed atomic load and a branch (inline).
//
// Phases are timed on the thread that calls Model::forward (the thread pool's caller): a phase is
// the wall time of its dispatches, every thread's share included, so the blocks of one forward
// add up to at most its time (the embedding, norms and residual adds are in no phase) and a
// block's sub-phases to at most the block's. Totals are process-wide since the last phase_reset();
// a reader takes them after the forward calls they cover have returned (relaxed atomics: no
// ordering beyond that).
//
//   DSS_PHASE_SCOPE(kMoe);              // the rest of this block is Phase::kMoe
//   DSS_PHASES(split, kMlaProjIn);      // a sequence of phases in one block: kMlaProjIn until
//   DSS_PHASE_NEXT(split, kMlaQb);      // here, then kMlaQb until the block ends
//
// Variants, for comparing two ways of doing something through a noisy machine's swings (the dev
// VM's read bandwidth changes by 2x within seconds, so whole benchmark runs of two builds differ
// by ~20%): with set_phase_variants(n), n > 1 (`bench-model --ab-variants n`), forward calls take
// variants 0, 1, .., n - 1 in turn (a PhaseVariantScope at the top of Model::forward moves to the
// next one as the forward returns), the code under comparison reads phase_variant() to choose its
// way (a local, uncommitted edit), and the totals are kept per variant, so consecutive decode
// steps run different variants and the swings fall on all of them alike.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace dss {

enum class Phase : int32_t {
  kForward,       // Model::forward, whole
  kMla,           // attention block per layer (its norm excluded)
  kMlaProjIn,     //   q_a + kv_a and q_a's norm
  kMlaQb,         //   q_b
  kMlaRopeCache,  //   kv norm, rotary embedding, indexer keys, cache writes
  kMlaAttention,  //   naive or absorbed attention (absorbed: W_UK, attention, W_UV); V3.2: with
                  //   the indexer's selection (scores, top-k)
  kMlaOut,        //   o
  kMoe,           // MoE block per layer
  kMoeRoute,      //   router product, routing, bucketing
  kMoeExperts,    //   row gather and the experts' two-stage dispatch (W8A8: the experts, summed)
  kMoeSum,        //   weighted sum
  kDenseFfn,      // dense FFN block
  kLmHead,        // the logit rows' final products
  kCollective,    // tensor parallel: the sums and the logit gather over the group
  kCount
};
inline constexpr int32_t kNumPhases = static_cast<int32_t>(Phase::kCount);

// "forward", "mla", "mla.q_a+kv_a", ...: a dotted name per phase (sub-phases after their block).
const char* phase_name(Phase p);

struct PhaseTotals {
  std::array<double, kNumPhases> seconds{};
  std::array<int64_t, kNumPhases> calls{};
};

inline constexpr int32_t kMaxPhaseVariants = 4;

namespace phase_timer_detail {
inline std::atomic<bool> g_on{false};
inline std::atomic<int32_t> g_variants{1};  // 1..kMaxPhaseVariants
inline std::atomic<int32_t> g_variant{0};   // the current forward's
}  // namespace phase_timer_detail

inline void set_phase_timers(bool on) {  // off at start
  phase_timer_detail::g_on.store(on, std::memory_order_relaxed);
}
inline bool phase_timers_on() { return phase_timer_detail::g_on.load(std::memory_order_relaxed); }
void phase_add(Phase p, int64_t ns);  // any thread; to the current variant
// Totals since the last phase_reset(): variant v's (0 <= v < phase_variants()), or every
// variant's together (v = -1).
PhaseTotals phase_totals(int32_t v = -1);
void phase_reset();

// n variants (1 <= n <= kMaxPhaseVariants; CHECKed), starting at variant 0 (not during a
// forward call). 1, the default, is no comparison.
void set_phase_variants(int32_t n);
// The next forward call takes variant i mod phase_variants() (not during a forward call):
// benchmarks start each repetition at another variant, so that a repetition's first call, which
// may run in different conditions (cold caches), does not always fall on the same one.
void restart_phase_variants(int64_t i);
inline int32_t phase_variants() {
  return phase_timer_detail::g_variants.load(std::memory_order_relaxed);
}
// The variant the current forward call runs (0 when there are no variants).
inline int32_t phase_variant() {
  return phase_timer_detail::g_variant.load(std::memory_order_relaxed);
}
// Moves to the next variant when destroyed (the end of a forward call), where there are several.
// Declared before the forward's DSS_PHASE_SCOPE(kForward), so the forward's own time goes to the
// variant it ran.
class PhaseVariantScope {
 public:
  PhaseVariantScope() = default;
  PhaseVariantScope(const PhaseVariantScope&) = delete;
  PhaseVariantScope& operator=(const PhaseVariantScope&) = delete;
  ~PhaseVariantScope() {
    const int32_t n = phase_variants();
    if (n > 1) {
      phase_timer_detail::g_variant.store((phase_variant() + 1) % n, std::memory_order_relaxed);
    }
  }
};

// Adds the time from construction (or the last next()) to the current phase, where the timers
// were on at construction.
class PhaseSplit {
 public:
  explicit PhaseSplit(Phase p) : p_(p), on_(phase_timers_on()) {
    if (on_) t0_ = Clock::now();
  }
  PhaseSplit(const PhaseSplit&) = delete;
  PhaseSplit& operator=(const PhaseSplit&) = delete;
  ~PhaseSplit() { close(); }
  void next(Phase p) {
    close();
    p_ = p;
  }

 private:
  using Clock = std::chrono::steady_clock;
  void close() {
    if (!on_) return;
    const Clock::time_point t = Clock::now();
    phase_add(p_, std::chrono::duration_cast<std::chrono::nanoseconds>(t - t0_).count());
    t0_ = t;
  }
  Phase p_;
  bool on_;
  Clock::time_point t0_{};
};

#define DSS_PHASE_CAT2_(a, b) a##b
#define DSS_PHASE_CAT_(a, b) DSS_PHASE_CAT2_(a, b)
#define DSS_PHASE_SCOPE(p) \
  const ::dss::PhaseSplit DSS_PHASE_CAT_(dss_phase_scope_, __LINE__)(::dss::Phase::p)
#define DSS_PHASES(var, p) ::dss::PhaseSplit var(::dss::Phase::p)
#define DSS_PHASE_NEXT(var, p) var.next(::dss::Phase::p)

}  // namespace dss
