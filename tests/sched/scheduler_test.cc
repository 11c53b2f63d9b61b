// Scheduler policy as step timelines (design.md rule 8): a fake model returns token 1 for every
// sampled row; no threads, no clock, no Highway. Notation: "A" = one decode token of A,
// "C:6" = six prompt tokens of C computed in that step.
#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "base/rng.h"
#include "base/str_cat.h"
#include "sched/batch_builder.h"

namespace dss {
namespace {

struct Arrival {
  int step;
  std::string name;
  int prompt_len;
  int max_new;
  int prompt_seed = 0;  // prompts with equal seeds share tokens (prefix tests)
};

class Timeline {
 public:
  Timeline(int n_pages, int page_size, int budget, int max_running = 64)
      : pool_(n_pages),
        radix_(page_size, pool_),
        sched_(SchedulerConfig{page_size, max_running, budget, 100000, true}, pool_, radix_),
        builder_(page_size),
        page_size_(page_size) {}

  Timeline& arrive(const Arrival& a) {
    arrivals_.push_back(a);
    return *this;
  }
  Timeline& abort_at(int step, const std::string& name) {
    aborts_[step].push_back(name);
    return *this;
  }
  // Speculative decoding: after every step each decoding sequence gets a draft of k tokens (of
  // value 1, the fake model's token); of a draft the model accepts the first `accept` tokens
  // (accept < 0: a pseudo-random number of them).
  Timeline& speculate(int k, int accept) {
    draft_len_ = k;
    accept_ = accept;
    return *this;
  }
  // The step's sampled row of `name` fails (StepResult kError, e.g. non-finite logits).
  Timeline& fail_at(int step, const std::string& name) {
    fails_[step].insert(name);
    return *this;
  }

  // Runs until idle (or max_steps); returns the scheduled set per step.
  std::vector<std::vector<std::string>> run(int max_steps = 1000) {
    std::vector<std::vector<std::string>> steps;
    for (int step = 0; step < max_steps; ++step) {
      for (const auto& a : arrivals_) {
        if (a.step != step) continue;
        const RequestId id = next_id_++;
        ids_[a.name] = id;
        names_[id] = a.name;
        std::vector<TokenId> prompt(static_cast<size_t>(a.prompt_len));
        Rng rng(static_cast<uint64_t>(a.prompt_seed ? a.prompt_seed : 1000 + id));
        for (auto& t : prompt) t = static_cast<TokenId>(rng.next_u64() % 1000);
        EXPECT_TRUE(sched_.add(SchedRequest{id, prompt, a.max_new}).is_ok());
      }
      for (const auto& name : aborts_[step]) sched_.abort(ids_.at(name));
      if (sched_.idle() && step > last_arrival()) break;
      StepPlan plan = sched_.plan();
      std::vector<std::string> row;
      std::vector<StepResult> results;
      for (const auto& q : plan.seqs) {
        const bool decode = q.is_decode() && !prefilling_.count(q.id);
        // (str_cat: GCC 12 -Wrestrict false positive on operator+)
        row.push_back(decode
                          ? (q.n_draft > 0 ? str_cat(names_[q.id], "+", q.n_draft) : names_[q.id])
                          : str_cat(names_[q.id], ":", q.n_new));
        if (q.needs_logits) {
          const bool fail = fails_[step].count(names_[q.id]) > 0;
          const int accepted = accept_ >= 0 ? std::min(q.n_draft, accept_)
                                            : static_cast<int>(rng_.next_u64() % (q.n_draft + 1));
          results.push_back(
              StepResult{1, fail ? FinishReason::kError : FinishReason::kNone, accepted});
          prefilling_.erase(q.id);
        } else {
          prefilling_.insert(q.id);
        }
      }
      for (RequestId p : plan.preempted) preempted_.insert(names_[p]);
      builder_.build(plan);  // exercises the batch arrays on every step
      StepOutcome out;
      sched_.commit(plan, results, out);
      for (const auto& d : out.finished) finished_[names_[d.id]] = d;
      for (const auto& q : plan.seqs) {
        const std::optional<SeqView> v = sched_.view(q.id);
        if (draft_len_ == 0 || !v || v->n_computed + 1 != static_cast<int>(v->tokens.size()))
          continue;
        sched_.set_draft(q.id, std::vector<TokenId>(static_cast<size_t>(draft_len_), 1));
      }
      sched_.check_integrity();
      steps.push_back(row);
    }
    return steps;
  }

  Scheduler& sched() { return sched_; }
  BlockPool& pool() { return pool_; }
  RadixCache& radix() { return radix_; }
  const std::set<std::string>& preempted() const { return preempted_; }
  const std::map<std::string, StepOutcome::Done>& finished() const { return finished_; }

 private:
  int last_arrival() const {
    int m = 0;
    for (const auto& a : arrivals_) m = std::max(m, a.step);
    return m;
  }
  BlockPool pool_;
  RadixCache radix_;
  Scheduler sched_;
  BatchBuilder builder_;
  int page_size_;
  RequestId next_id_ = 1;
  std::vector<Arrival> arrivals_;
  std::map<int, std::vector<std::string>> aborts_;
  std::map<int, std::set<std::string>> fails_;
  std::map<std::string, RequestId> ids_;
  std::map<RequestId, std::string> names_;
  std::set<RequestId> prefilling_;
  int draft_len_ = 0, accept_ = 0;
  Rng rng_{7};
  std::set<std::string> preempted_;
  std::map<std::string, StepOutcome::Done> finished_;
};

using Steps = std::vector<std::vector<std::string>>;

// Budget 8 tokens per step. A and B (prompt 4) prefill together at step 0 and decode from step 1;
// C (prompt 20) arrives at step 2 and is chunked into the 6 tokens left beside the two decodes.
TEST(SchedulerTimeline, LongPromptIsChunkedAroundRunningDecodes) {
  Timeline t(64, 2, 8);
  t.arrive({0, "A", 4, 16}).arrive({0, "B", 4, 16}).arrive({2, "C", 20, 4});
  const Steps s = t.run();
  EXPECT_EQ(s[0], (std::vector<std::string>{"A:4", "B:4"}));
  EXPECT_EQ(s[1], (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(s[2], (std::vector<std::string>{"A", "B", "C:6"}));
  EXPECT_EQ(s[3], (std::vector<std::string>{"A", "B", "C:6"}));
  EXPECT_EQ(s[4], (std::vector<std::string>{"A", "B", "C:6"}));
  EXPECT_EQ(s[5], (std::vector<std::string>{"A", "B", "C:2"}));
  EXPECT_EQ(s[6], (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_TRUE(t.preempted().empty());
  EXPECT_EQ(t.finished().at("A").reason, FinishReason::kLength);
  EXPECT_EQ(t.finished().at("A").stats.n_generated, 16);
  EXPECT_EQ(t.finished().at("C").stats.n_generated, 4);
}

// max_running_requests 2: C waits until A finishes (A: 3 new tokens -> done after step 2).
TEST(SchedulerTimeline, MaxRunningRequestsQueuesTheRest) {
  Timeline t(64, 4, 100, /*max_running=*/2);
  t.arrive({0, "A", 4, 3}).arrive({0, "B", 4, 10}).arrive({0, "C", 4, 2});
  const Steps s = t.run();
  EXPECT_EQ(s[0], (std::vector<std::string>{"A:4", "B:4"}));
  EXPECT_EQ(s[1], (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(s[2], (std::vector<std::string>{"A", "B"}));  // A's third token finishes it
  EXPECT_EQ(s[3], (std::vector<std::string>{"B", "C:4"}));
  EXPECT_EQ(t.finished().size(), 3u);
}

// Pool of 6 pages of 2 tokens: A and B (prompt 4 each, 2 pages) grow; when the pool is empty the
// newest (B) is preempted, A continues, B is recomputed later from its tokens and still produces
// all of its tokens.
TEST(SchedulerTimeline, PreemptsNewestWhenPagesRunOutAndRecomputesIt) {
  Timeline t(6, 2, 64);
  t.arrive({0, "A", 4, 6}).arrive({0, "B", 4, 6});
  const Steps s = t.run();
  EXPECT_EQ(t.preempted(), (std::set<std::string>{"B"}));
  EXPECT_EQ(t.finished().at("A").stats.n_generated, 6);
  EXPECT_EQ(t.finished().at("B").stats.n_generated, 6);
  EXPECT_EQ(t.finished().at("B").stats.n_preemptions, 1);
  // After the preemption step, a step schedules B as a multi-token recompute ("B:n", n > 1).
  bool recomputed = false;
  for (const auto& row : s) {
    for (const auto& e : row) recomputed |= e.rfind("B:", 0) == 0 && e != "B:4";
  }
  EXPECT_TRUE(recomputed);
  t.radix().evict(1 << 30);
  EXPECT_EQ(t.pool().n_free(), t.pool().n_pages());
}

// B shares A's first 8 prompt tokens (2 full pages of 4); arriving after A finished, it computes
// only its remaining tokens. A fully cached prompt still computes its last token.
TEST(SchedulerTimeline, PrefixHitPrefillsOnlyNewTokens) {
  Timeline t(64, 4, 100);
  t.arrive({0, "A", 10, 2, /*prompt_seed=*/7}).arrive({5, "B", 10, 2, /*prompt_seed=*/7});
  const Steps s = t.run();
  EXPECT_EQ(s[0], (std::vector<std::string>{"A:10"}));
  // A's computed tokens at finish: 10 prompt + 1 generated = 11 -> 2 full pages (8 tokens) cached.
  EXPECT_EQ(s[5], (std::vector<std::string>{"B:2"}));
  EXPECT_EQ(t.finished().at("B").stats.n_cached_prompt, 8);
  EXPECT_EQ(t.radix().n_hit_tokens(), 8);
}

// The prompt's full pages are published when its prefill completes, so B (same prompt, arriving
// while A still decodes) reuses A's 2 full pages at once.
TEST(SchedulerTimeline, ConcurrentRequestsSharePrefixAfterPrefill) {
  Timeline t(64, 4, 100);
  t.arrive({0, "A", 10, 6, /*prompt_seed=*/9}).arrive({2, "B", 10, 2, /*prompt_seed=*/9});
  const Steps s = t.run();
  EXPECT_EQ(s[0], (std::vector<std::string>{"A:10"}));
  EXPECT_EQ(s[2], (std::vector<std::string>{"A", "B:2"}));
  EXPECT_EQ(t.finished().at("B").stats.n_cached_prompt, 8);
}

// A fails at its prefill's sampled row (step 0) and B at a decode (step 3): each ends with
// kError at once, its pages go back to the pool, and neither prompt is offered to the prefix
// cache (C, A's prompt again, hits nothing), while D beside them is unaffected.
TEST(SchedulerTimeline, FailedRowEndsTheSequenceWithoutCachingItsPages) {
  Timeline t(64, 4, 100);
  t.arrive({0, "A", 10, 8, /*prompt_seed=*/5})
      .arrive({0, "B", 9, 8})
      .arrive({0, "D", 6, 6})
      .arrive({4, "C", 10, 2, /*prompt_seed=*/5})
      .fail_at(0, "A")
      .fail_at(3, "B");
  const Steps s = t.run();
  EXPECT_EQ(s[0], (std::vector<std::string>{"A:10", "B:9", "D:6"}));
  EXPECT_EQ(s[1], (std::vector<std::string>{"B", "D"}));
  EXPECT_EQ(s[4], (std::vector<std::string>{"D", "C:10"}));
  EXPECT_EQ(t.finished().at("A").reason, FinishReason::kError);
  EXPECT_EQ(t.finished().at("A").stats.n_generated, 0);
  EXPECT_EQ(t.finished().at("B").reason, FinishReason::kError);
  EXPECT_EQ(t.finished().at("B").stats.n_generated, 3);
  EXPECT_EQ(t.finished().at("C").stats.n_cached_prompt, 0);
  EXPECT_EQ(t.finished().at("D").reason, FinishReason::kLength);
  EXPECT_EQ(t.finished().at("D").stats.n_generated, 6);
  t.sched().check_integrity();
  t.radix().evict(1 << 30);
  EXPECT_EQ(t.pool().n_free(), t.pool().n_pages());
}

TEST(SchedulerTimeline, AbortMidPrefillAndMidDecodeFreesPages) {
  Timeline t(64, 4, 8);
  t.arrive({0, "A", 40, 8}).arrive({0, "B", 4, 50}).abort_at(2, "A").abort_at(9, "B");
  t.run();
  EXPECT_TRUE(t.sched().idle());
  t.sched().check_integrity();
  t.radix().evict(1 << 30);
  EXPECT_EQ(t.pool().n_free(), t.pool().n_pages());
}

// Drafts of 3: A and B verify 1 + 3 tokens per decode step within the budget of 8, and each
// step appends the accepted drafts plus the sampled token (here 2 + 1): 9 new tokens are the
// prefill's first token and then 3 decode steps of 3, 3 and 2 tokens (the last draft is capped to
// 1 so that the sampled token still fits in max_tokens).
TEST(SchedulerTimeline, SpeculativeDecodeVerifiesDraftsAndAppendsTheAccepted) {
  Timeline t(64, 2, 8);
  t.speculate(3, 2).arrive({0, "A", 4, 9}).arrive({0, "B", 4, 9});
  const Steps s = t.run();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0], (std::vector<std::string>{"A:4", "B:4"}));
  EXPECT_EQ(s[1], (std::vector<std::string>{"A+3", "B+3"}));
  EXPECT_EQ(s[2], (std::vector<std::string>{"A+3", "B+3"}));
  EXPECT_EQ(s[3], (std::vector<std::string>{"A+1", "B+1"}));
  EXPECT_EQ(t.finished().at("A").stats.n_generated, 9);
  const SchedulerCounters& c = t.sched().counters();
  EXPECT_EQ(c.spec.drafts, 6);
  EXPECT_EQ(c.spec.draft_tokens, 2 * (3 + 3 + 1));
  EXPECT_EQ(c.spec.accepted_tokens, 2 * (2 + 2 + 1));
  EXPECT_EQ(c.decode_tokens, 2 * 8);  // every token after the first came from a decode step
  ASSERT_EQ(c.spec.accepted_per_pos.size(), 3u);
  EXPECT_EQ(c.spec.accepted_per_pos[0], 6);
  EXPECT_EQ(c.spec.accepted_per_pos[1], 4);
  EXPECT_EQ(c.spec.accepted_per_pos[2], 0);
  t.radix().evict(1 << 30);
  EXPECT_EQ(t.pool().n_free(), t.pool().n_pages());
}

// A rejected draft's pages go back to the pool at commit: with page size 2, a decode at length 5
// verifying 4 drafts reserves positions 4..8 (pages 2..4); none accepted keeps the pages of its
// 6 tokens (0..2).
TEST(Scheduler, RejectedDraftReleasesItsPages) {
  BlockPool pool(16);
  RadixCache radix(2, pool);
  Scheduler s(SchedulerConfig{2, 4, 64, 100, false}, pool, radix);
  ASSERT_TRUE(s.add(SchedRequest{1, {5, 6, 7, 8}, 10}).is_ok());
  StepPlan p = s.plan();
  StepOutcome out;
  s.commit(p, std::vector<StepResult>{StepResult{9}}, out);
  EXPECT_EQ(pool.n_used(), 2);  // 4 tokens computed (the 5th has its page from the next plan)
  s.set_draft(1, std::vector<TokenId>{1, 2, 3, 4});
  p = s.plan();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].n_new, 5);
  EXPECT_EQ(p.seqs[0].n_draft, 4);
  EXPECT_EQ(p.n_draft_tokens, 4);
  BatchBuilder b(2);
  const ForwardBatch& fb = b.build(p);
  EXPECT_EQ(std::vector<TokenId>(fb.tokens.begin(), fb.tokens.end()),
            (std::vector<TokenId>{9, 1, 2, 3, 4}));
  EXPECT_EQ(std::vector<int32_t>(fb.logit_rows.begin(), fb.logit_rows.end()),
            (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(pool.n_used(), 5);  // positions 0..8
  s.commit(p, std::vector<StepResult>{StepResult{7, FinishReason::kNone, 0}}, out);
  EXPECT_EQ(pool.n_used(), 3);  // 6 tokens, 5 computed
  const std::optional<SeqView> v = s.view(1);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(std::vector<TokenId>(v->tokens.begin(), v->tokens.end()),
            (std::vector<TokenId>{5, 6, 7, 8, 9, 7}));
  EXPECT_EQ(v->n_computed, 5);
  EXPECT_TRUE(s.reserve(1, 10));  // a drafter's rows ahead of the sequence
  EXPECT_EQ(pool.n_used(), 5);
  s.check_integrity();
  s.abort(1);
  EXPECT_EQ(pool.n_free(), pool.n_pages());
}

TEST(Scheduler, RejectsRequestsOverTheContextLength) {
  BlockPool pool(100);
  RadixCache radix(4, pool);
  Scheduler s(SchedulerConfig{4, 8, 64, /*context_length=*/32, true}, pool, radix);
  const Status st = s.add(SchedRequest{1, std::vector<TokenId>(30, 5), 3});
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("maximum context length is 32"), std::string::npos) << st.message();
  EXPECT_FALSE(s.add(SchedRequest{2, {}, 3}).is_ok());
  EXPECT_TRUE(s.add(SchedRequest{3, std::vector<TokenId>(29, 5), 3}).is_ok());
  EXPECT_FALSE(s.add(SchedRequest{4, std::vector<TokenId>(200, 5), 3}).is_ok());
}

// Random arrivals, lengths, aborts and a deliberately small pool: integrity after every step,
// every request either finishes with all its tokens or was aborted, and all pages come back.
TEST(SchedulerStress, RandomWorkloadKeepsPageAccounting) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng(seed);
    const int page = 1 + static_cast<int>(rng.next_u64() % 8);
    Timeline t(48, page, 4 + static_cast<int>(rng.next_u64() % 60),
               1 + static_cast<int>(rng.next_u64() % 8));
    if (seed % 2 == 0) t.speculate(1 + static_cast<int>(rng.next_u64() % 4), -1);
    std::map<std::string, int> max_new;
    std::set<std::string> aborted;
    for (int i = 0; i < 30; ++i) {
      const std::string name = str_cat("R", i);
      const int len = 1 + static_cast<int>(rng.next_u64() % 60);
      const int n = 1 + static_cast<int>(rng.next_u64() % 20);
      if (48 * page < len + n) continue;  // could never fit: add() rejects it (tested above)
      const int arrival = static_cast<int>(rng.next_u64() % 40);
      t.arrive({arrival, name, len, n, static_cast<int>(rng.next_u64() % 3)});
      max_new[name] = n;
      if (rng.next_u64() % 5 == 0) {
        t.abort_at(arrival + static_cast<int>(rng.next_u64() % 30), name);
        aborted.insert(name);
      }
    }
    t.run(5000);
    ASSERT_TRUE(t.sched().idle()) << "seed " << seed;
    for (const auto& [name, n] : max_new) {
      auto it = t.finished().find(name);
      if (it == t.finished().end()) {
        EXPECT_TRUE(aborted.count(name)) << name << " vanished, seed " << seed;
      } else {
        EXPECT_EQ(it->second.stats.n_generated, n) << name << " seed " << seed;
      }
    }
    t.radix().evict(1 << 30);
    EXPECT_EQ(t.pool().n_free(), t.pool().n_pages()) << "seed " << seed;
  }
}

}  // namespace
}  // namespace dss
