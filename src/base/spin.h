// Spin-wait helpers for the compute threads (ThreadPool's hand-off, run_two_stage's waits).
#pragma once

#include <thread>

namespace dss {

// A spin-wait hint to the core (its sibling thread, power); a no-op where there is none.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() is true; after kSpinsBeforeYield spins it also yields each round, so a
// waiter whose peer was descheduled (more threads than cores, a busy VM host) gives the core back.
inline constexpr int kSpinsBeforeYield = 2000;
template <typename Done>
void spin_until(Done done) {
  for (int spins = 0; !done(); ++spins) {
    if (spins > kSpinsBeforeYield) std::this_thread::yield();
    cpu_relax();
  }
}

}  // namespace dss
