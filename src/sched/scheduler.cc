#include "sched/scheduler.h"

#include <algorithm>

#include "base/check.h"

namespace dss {

struct Scheduler::Seq {
  RequestId id = 0;
  std::vector<TokenId> tokens;  // prompt + generated
  int32_t n_prompt = 0;
  int32_t max_new_tokens = 0;
  int32_t n_computed = 0;       // tokens whose KV is in the cache
  int32_t n_cached_prompt = 0;  // from the prefix cache at the last admission
  int32_t n_preemptions = 0;
  std::vector<PageId> pages;  // one BlockPool reference each
  std::optional<PrefixHandle> lock;
  std::vector<TokenId> draft;  // speculative decoding: to verify at the next decode step

  int32_t n_generated() const { return static_cast<int32_t>(tokens.size()) - n_prompt; }
  SeqStats stats() const {
    return SeqStats{n_prompt, n_generated(), n_cached_prompt, n_preemptions};
  }
};

namespace {
int32_t pages_for(int32_t n_tokens, int32_t page_size) {
  return (n_tokens + page_size - 1) / page_size;
}
}  // namespace

Scheduler::Scheduler(const SchedulerConfig& cfg, BlockPool& pool, RadixCache& prefix)
    : cfg_(cfg), pool_(pool), prefix_(prefix), running_cap_(cfg.max_running_requests) {
  DSS_CHECK(cfg.page_size >= 1 && cfg.max_running_requests >= 1 && cfg.chunked_prefill_size >= 1);
}

void Scheduler::set_running_cap(int32_t cap) {
  running_cap_ = std::clamp(cap, 1, cfg_.max_running_requests);
}

Scheduler::~Scheduler() {
  for (auto& s : running_) release_seq(*s, false);
}

Status Scheduler::add(SchedRequest req) {
  const auto n_prompt = static_cast<int64_t>(req.prompt.size());
  if (n_prompt == 0) return Status::error("prompt is empty");
  if (req.max_new_tokens < 1) return Status::error("max_tokens must be at least 1");
  if (n_prompt + req.max_new_tokens > cfg_.context_length) {
    return Status::error("this model's maximum context length is ", cfg_.context_length,
                         " tokens; the request has ", n_prompt, " prompt tokens and asks for ",
                         req.max_new_tokens, " new tokens (reduce the prompt or max_tokens)");
  }
  if (pages_for(static_cast<int32_t>(n_prompt + req.max_new_tokens), cfg_.page_size) >
      pool_.n_pages()) {
    return Status::error("the request needs ", n_prompt + req.max_new_tokens,
                         " tokens of KV cache but the pool holds ",
                         static_cast<int64_t>(pool_.n_pages()) * cfg_.page_size);
  }
  auto s = std::make_unique<Seq>();
  s->id = req.id;
  s->n_prompt = static_cast<int32_t>(n_prompt);
  s->tokens = std::move(req.prompt);
  s->max_new_tokens = req.max_new_tokens;
  waiting_.push_back(std::move(s));
  return Status::ok();
}

bool Scheduler::take_pages(int32_t n) {
  if (pool_.n_free() < n) prefix_.evict(n - pool_.n_free());
  return pool_.n_free() >= n;
}

bool Scheduler::ensure_pages(Seq& s, int32_t n_tokens) {
  const int32_t need = pages_for(n_tokens, cfg_.page_size) - static_cast<int32_t>(s.pages.size());
  if (need <= 0) return true;
  if (!take_pages(need)) return false;
  for (int32_t i = 0; i < need; ++i) {
    auto p = pool_.allocate();
    DSS_CHECK(p.has_value(), "pool ran dry after reserving");
    s.pages.push_back(*p);
  }
  return true;
}

void Scheduler::release_seq(Seq& s, bool cache_prefix) {
  if (cache_prefix && cfg_.enable_prefix_cache) {
    // Offer the full pages of computed tokens; the tree takes its own references.
    const int32_t n_full =
        std::min(s.n_computed / cfg_.page_size, static_cast<int32_t>(s.pages.size()));
    if (n_full > 0) {
      prefix_.insert(
          std::span<const TokenId>(s.tokens.data(), static_cast<size_t>(n_full) * cfg_.page_size),
          std::span<const PageId>(s.pages.data(), static_cast<size_t>(n_full)));
    }
  }
  if (s.lock) {
    prefix_.unlock(*s.lock);
    s.lock.reset();
  }
  for (PageId p : s.pages) pool_.release(p);
  s.pages.clear();
  s.n_computed = 0;
  s.draft.clear();
}

void Scheduler::preempt(std::unique_ptr<Seq> s) {
  release_seq(*s, /*cache_prefix=*/true);
  s->n_preemptions++;
  counters_.preemptions++;
  waiting_.push_front(std::move(s));
}

std::unique_ptr<Scheduler::Seq> Scheduler::remove_running(RequestId id) {
  auto it =
      std::find_if(running_.begin(), running_.end(), [&](const auto& s) { return s->id == id; });
  if (it == running_.end()) return nullptr;
  auto s = std::move(*it);
  running_.erase(it);
  return s;
}

bool Scheduler::abort(RequestId id) {
  if (auto s = remove_running(id)) {
    release_seq(*s, /*cache_prefix=*/true);
    return true;
  }
  auto it =
      std::find_if(waiting_.begin(), waiting_.end(), [&](const auto& s) { return s->id == id; });
  if (it == waiting_.end()) return false;
  waiting_.erase(it);
  return true;
}

StepPlan Scheduler::plan() {
  StepPlan plan;
  int32_t budget = cfg_.chunked_prefill_size;
  // 1. Running sequences, in admission order.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Seq& s = *running_[i];
    const int32_t remaining = static_cast<int32_t>(s.tokens.size()) - s.n_computed;
    DSS_CHECK(remaining >= 1, "running sequence with nothing to compute");
    // A decode verifies its draft within the budget and leaves room for the sampled token.
    const int32_t n_draft =
        remaining == 1 ? std::max(0, std::min({static_cast<int32_t>(s.draft.size()), budget - 1,
                                               s.max_new_tokens - s.n_generated() - 1}))
                       : 0;
    const int32_t n = std::min(remaining, budget) + n_draft;
    bool ok = ensure_pages(s, s.n_computed + n);
    while (!ok && running_.size() > i + 1) {  // preempt the newest (not yet planned) sequence
      auto victim = std::move(running_.back());
      running_.pop_back();
      plan.preempted.push_back(victim->id);
      preempt(std::move(victim));
      ok = ensure_pages(s, s.n_computed + n);
    }
    if (!ok) {  // this sequence is the newest: preempt it too
      auto victim = std::move(running_[i]);
      running_.erase(running_.begin() + static_cast<ptrdiff_t>(i));
      plan.preempted.push_back(victim->id);
      preempt(std::move(victim));
      break;
    }
    plan.seqs.push_back(ScheduledSeq{
        s.id, s.n_computed, n, n - n_draft == remaining, s.tokens.data(), s.pages.data(),
        static_cast<int32_t>(s.pages.size()), n_draft > 0 ? s.draft.data() : nullptr, n_draft});
    budget -= n;
    ++i;
  }
  // 2. Admit waiting sequences FCFS.
  while (!waiting_.empty() && budget > 0 && static_cast<int32_t>(running_.size()) < running_cap_ &&
         plan.preempted.empty()) {
    Seq& s = *waiting_.front();
    const auto n_tokens = static_cast<int32_t>(s.tokens.size());
    MatchResult m;
    if (cfg_.enable_prefix_cache) m = prefix_.match(s.tokens);
    // Reuse whole pages only, and always compute at least the last token (for its logits).
    int32_t n_cached = std::min(m.n_tokens, ((n_tokens - 1) / cfg_.page_size) * cfg_.page_size);
    const int32_t n_cached_pages = n_cached / cfg_.page_size;
    const int32_t n = std::min(n_tokens - n_cached, budget);
    const int32_t need = pages_for(n_cached + n, cfg_.page_size) - n_cached_pages;
    if (n_cached_pages > 0) prefix_.lock(m.handle);  // protect the hit from eviction below
    if (!take_pages(need)) {
      if (n_cached_pages > 0) prefix_.unlock(m.handle);
      break;
    }
    std::unique_ptr<Seq> sp = std::move(waiting_.front());
    waiting_.pop_front();
    if (n_cached_pages > 0) {
      sp->lock = m.handle;
      for (int32_t i = 0; i < n_cached_pages; ++i) {
        pool_.retain(m.pages[static_cast<size_t>(i)]);
        sp->pages.push_back(m.pages[static_cast<size_t>(i)]);
      }
    }
    sp->n_computed = n_cached;
    if (cfg_.enable_prefix_cache) {
      MatchResult used = m;
      used.n_tokens = n_cached;
      prefix_.record_match(used, n_tokens);
    }
    if (sp->n_preemptions == 0) sp->n_cached_prompt = std::min(n_cached, sp->n_prompt);
    counters_.prefix_hit_tokens += n_cached;
    DSS_CHECK(ensure_pages(*sp, n_cached + n), "reserved pages vanished");
    plan.seqs.push_back(ScheduledSeq{sp->id, sp->n_computed, n, n == n_tokens - n_cached,
                                     sp->tokens.data(), sp->pages.data(),
                                     static_cast<int32_t>(sp->pages.size())});
    budget -= n;
    running_.push_back(std::move(sp));
  }
  for (const auto& q : plan.seqs) {
    plan.n_tokens += q.n_new;
    plan.n_draft_tokens += q.n_draft;
    if (!q.is_decode()) plan.n_prefill_tokens += q.n_new;
  }
  return plan;
}

void Scheduler::commit(const StepPlan& plan, std::span<const StepResult> results,
                       StepOutcome& out) {
  size_t r = 0;
  for (const ScheduledSeq& q : plan.seqs) {
    auto it = std::find_if(running_.begin(), running_.end(),
                           [&](const auto& s) { return s->id == q.id; });
    DSS_CHECK(it != running_.end(), "planned sequence ", q.id, " is not running");
    Seq& s = **it;
    DSS_CHECK(s.n_computed == q.n_computed, "sequence changed between plan and commit");
    const bool decode = q.is_decode();
    if (!q.needs_logits) {
      s.n_computed += q.n_new;
      counters_.prefill_tokens += q.n_new;
      continue;
    }
    DSS_CHECK(r < results.size(), "missing step result");
    const StepResult& res = results[r++];
    DSS_CHECK(res.n_accepted >= 0 && res.n_accepted <= q.n_draft, "accepted ", res.n_accepted,
              " of ", q.n_draft, " draft tokens");
    // Verified drafts: the newest token and the accepted ones keep their KV; the rejected
    // positions are dropped (rewritten before any later step reads them).
    s.n_computed += q.n_new - q.n_draft + res.n_accepted;
    (decode ? counters_.decode_tokens : counters_.prefill_tokens) +=
        decode ? 1 + res.n_accepted : q.n_new;
    if (q.n_draft > 0) counters_.spec.count(q.n_draft, res.n_accepted);
    s.draft.clear();
    if (res.finish == FinishReason::kError) {
      auto failed = std::move(*it);
      running_.erase(it);
      out.finished.push_back(StepOutcome::Done{failed->id, FinishReason::kError, failed->stats()});
      release_seq(*failed, /*cache_prefix=*/false);
      continue;
    }
    if (!decode && q.n_new > 1 && cfg_.enable_prefix_cache) {
      // Prefill just completed: publish its full pages now, so requests running concurrently
      // with the same prefix share them (the tree takes its own references).
      const int32_t n_full =
          std::min(s.n_computed / cfg_.page_size, static_cast<int32_t>(s.pages.size()));
      if (n_full > 0) {
        prefix_.insert(
            std::span<const TokenId>(s.tokens.data(), static_cast<size_t>(n_full) * cfg_.page_size),
            std::span<const PageId>(s.pages.data(), static_cast<size_t>(n_full)));
      }
    }
    s.tokens.insert(s.tokens.end(), q.draft, q.draft + res.n_accepted);
    s.tokens.push_back(res.token);
    trim_pages(s);
    FinishReason reason = res.finish;
    if (reason == FinishReason::kNone && s.n_generated() >= s.max_new_tokens)
      reason = FinishReason::kLength;
    if (reason != FinishReason::kNone) {
      auto done = std::move(*it);
      running_.erase(it);
      out.finished.push_back(StepOutcome::Done{done->id, reason, done->stats()});
      release_seq(*done, /*cache_prefix=*/true);
    }
  }
  DSS_CHECK(r == results.size(), "extra step results");
}

// Releases the pages past the ones the sequence's tokens need (a rejected draft's, or a
// drafter's reservation).
void Scheduler::trim_pages(Seq& s) {
  const auto keep =
      static_cast<size_t>(pages_for(static_cast<int32_t>(s.tokens.size()), cfg_.page_size));
  while (s.pages.size() > keep) {
    pool_.release(s.pages.back());
    s.pages.pop_back();
  }
}

void Scheduler::set_draft(RequestId id, std::span<const TokenId> draft) {
  for (const auto& s : running_) {
    if (s->id != id) continue;
    s->draft.assign(draft.begin(), draft.end());
    return;
  }
  DSS_CHECK(false, "set_draft: request ", id, " is not running");
}

bool Scheduler::reserve(RequestId id, int32_t n_tokens) {
  for (const auto& s : running_) {
    if (s->id == id) return ensure_pages(*s, n_tokens);
  }
  DSS_CHECK(false, "reserve: request ", id, " is not running");
  return false;
}

std::optional<SeqView> Scheduler::view(RequestId id) const {
  for (const auto& s : running_) {
    if (s->id == id) return SeqView{s->tokens, s->n_computed, s->pages};
  }
  return std::nullopt;
}

std::optional<SeqStats> Scheduler::stats(RequestId id) const {
  for (const auto& s : running_) {
    if (s->id == id) return s->stats();
  }
  for (const auto& s : waiting_) {
    if (s->id == id) return s->stats();
  }
  return std::nullopt;
}

int32_t Scheduler::n_seq_pages() const {
  int32_t n = 0;
  for (const auto& s : running_) n += static_cast<int32_t>(s->pages.size());
  return n;
}

void Scheduler::check_integrity() const {
  pool_.check_integrity();
  prefix_.check_integrity();
  for (const auto& s : waiting_)
    DSS_CHECK(s->pages.empty() && !s->lock && s->n_computed == 0, "waiting seq holds pages");
  std::vector<int32_t> held(static_cast<size_t>(pool_.n_pages()), 0);
  for (const auto& s : running_) {
    DSS_CHECK(static_cast<int32_t>(s->pages.size()) >= pages_for(s->n_computed, cfg_.page_size),
              "seq ", s->id, " computed tokens without pages");
    for (PageId p : s->pages) held[static_cast<size_t>(p)]++;
  }
  for (PageId p = 0; p < pool_.n_pages(); ++p) {
    DSS_CHECK(pool_.refcount(p) >= held[static_cast<size_t>(p)], "page ", p, " refcount ",
              pool_.refcount(p), " < holders ", held[static_cast<size_t>(p)]);
  }
}

}  // namespace dss
