#include "engine/mtp_drafter.h"

#include <algorithm>

#include "base/check.h"
#include "base/clock.h"

namespace dss {

MtpDrafter::MtpDrafter(const Model& model, KvCache& kv, Workspace& ws, int32_t page_size,
                       int32_t num_steps, int32_t max_seqs, int32_t max_tokens,
                       int32_t context_length)
    : model_(model),
      kv_(kv),
      ws_(ws),
      page_size_(page_size),
      num_steps_(num_steps),
      context_length_(context_length),
      d_model_(static_cast<int32_t>(model.config().d_model)),
      n_vocab_(model.config().n_vocab),
      max_pages_((context_length + page_size - 1) / page_size + 1) {
  DSS_CHECK(model.has_mtp() && !ws.mtp_in.empty(), "MtpDrafter needs the MTP module");
  const auto T = static_cast<size_t>(max_tokens), S = static_cast<size_t>(max_seqs);
  tokens_.reserve(T);
  positions_.reserve(T);
  slots_.reserve(T);
  seq_begin_.reserve(S + 1);
  kv_len_.reserve(S);
  logit_rows_.reserve(S);
  page_table_.resize(S * static_cast<size_t>(max_pages_));
  hidden_in_.resize(T * static_cast<size_t>(d_model_));
  block_out_.resize(T * static_cast<size_t>(d_model_));
  logits_.resize(S * static_cast<size_t>(n_vocab_));
  drafting_.reserve(S);
  drafts_.resize(S * static_cast<size_t>(num_steps));
}

void MtpDrafter::clear() {
  tokens_.clear();
  positions_.clear();
  slots_.clear();
  seq_begin_.assign(1, 0);
  kv_len_.clear();
  logit_rows_.clear();
}

// A sequence of the forward being built, attending to its module rows [0, kv_len).
void MtpDrafter::add_seq(std::span<const PageId> pages, int32_t kv_len) {
  const size_t row = kv_len_.size();
  DSS_CHECK(static_cast<int64_t>(pages.size()) * page_size_ >= kv_len &&
            static_cast<int32_t>(pages.size()) <= max_pages_);
  auto dst = page_table_.begin() + static_cast<ptrdiff_t>(row * static_cast<size_t>(max_pages_));
  std::fill_n(std::copy(pages.begin(), pages.end(), dst), max_pages_ - pages.size(), kNoPage);
  kv_len_.push_back(kv_len);
}

// Token `token` (the sequence's token pos + 1) at position pos with the hidden state at pos.
void MtpDrafter::add_token(TokenId token, int32_t pos, std::span<const PageId> pages,
                           const float* hidden) {
  std::copy_n(hidden, d_model_, hidden_in_.data() + tokens_.size() * static_cast<size_t>(d_model_));
  tokens_.push_back(token);
  positions_.push_back(pos);
  slots_.push_back(pages[static_cast<size_t>(pos / page_size_)] * page_size_ + pos % page_size_);
}

ForwardBatch MtpDrafter::batch() {
  ForwardBatch b;
  b.tokens = tokens_;
  b.positions = positions_;
  b.seq_token_begin = seq_begin_;
  b.seq_kv_len = kv_len_;
  b.page_table = std::span<const PageId>(page_table_).first(kv_len_.size() * max_pages_);
  b.max_pages = max_pages_;
  b.kv_write_slots = slots_;
  b.logit_rows = logit_rows_;
  return b;
}

void MtpDrafter::forward() {
  if (tokens_.empty()) return;
  const double t0 = now_seconds();
  model_.mtp_forward(batch(), hidden_in_, kv_, ws_, logits_.data(), block_out_);
  ++forwards_;
  seconds_ += now_seconds() - t0;
}

TokenId MtpDrafter::argmax_row(int32_t j) const {
  const float* row = logits_.data() + static_cast<size_t>(j) * n_vocab_;
  return static_cast<TokenId>(std::max_element(row, row + n_vocab_) - row);
}

std::span<TokenId> MtpDrafter::draft_row(size_t j) {
  return std::span<TokenId>(drafts_).subspan(j * static_cast<size_t>(num_steps_),
                                             static_cast<size_t>(num_steps_));
}

// The module's rows of every position the step computed and kept, and a logit row at the newest
// position of every sequence that drafts.
void MtpDrafter::catch_up(const StepPlan& plan, const ForwardBatch& step, const Scheduler& sched,
                          const std::function<bool(RequestId)>& wants_draft) {
  clear();
  drafting_.clear();
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSeq& q = plan.seqs[i];
    const std::optional<SeqView> v = sched.view(q.id);
    if (!v) continue;  // finished or failed this step
    const int32_t p1 = v->n_computed;
    DSS_CHECK(p1 > q.n_computed && p1 <= q.n_computed + q.n_new);
    add_seq(v->pages, p1);
    for (int32_t p = q.n_computed; p < p1; ++p) {
      const int32_t row = step.seq_token_begin[i] + (p - q.n_computed);
      add_token(v->tokens[static_cast<size_t>(p + 1)], p, v->pages,
                ws_.hidden.data() + static_cast<size_t>(row) * d_model_);
    }
    seq_begin_.push_back(static_cast<int32_t>(tokens_.size()));
    const bool decodes_next = p1 + 1 == static_cast<int32_t>(v->tokens.size());
    if (decodes_next && p1 < context_length_ && wants_draft(q.id)) {
      logit_rows_.push_back(static_cast<int32_t>(tokens_.size()) - 1);
      drafting_.push_back({q.id, static_cast<int32_t>(tokens_.size()) - 1, p1 - 1, 0});
    }
  }
  forward();
}

// One chained step: each drafting sequence's next position, its last draft as the token and its
// block output as the hidden state. A sequence that cannot go further (the context, or no page
// for the position) keeps the draft it has.
void MtpDrafter::chain_step(Scheduler& sched) {
  clear();
  size_t kept = 0;
  for (size_t j = 0; j < drafting_.size(); ++j) {
    const Drafting s = drafting_[j];
    const int32_t pos = s.pos + 1;
    if (pos + 1 >= context_length_ || !sched.reserve(s.id, pos + 1)) {
      sched.set_draft(s.id, draft_row(j).first(static_cast<size_t>(s.n)));
      continue;
    }
    const SeqView v = *sched.view(s.id);
    add_seq(v.pages, pos + 1);
    add_token(draft_row(j)[static_cast<size_t>(s.n - 1)], pos, v.pages,
              block_out_.data() + static_cast<size_t>(s.row) * d_model_);
    seq_begin_.push_back(static_cast<int32_t>(tokens_.size()));
    logit_rows_.push_back(static_cast<int32_t>(tokens_.size()) - 1);
    if (kept != j) std::ranges::copy(draft_row(j), draft_row(kept).begin());
    drafting_[kept++] = Drafting{s.id, static_cast<int32_t>(tokens_.size()) - 1, pos, s.n};
  }
  drafting_.resize(kept);
  forward();
}

void MtpDrafter::run(const StepPlan& plan, const ForwardBatch& step, Scheduler& sched,
                     const std::function<bool(RequestId)>& wants_draft) {
  catch_up(plan, step, sched, wants_draft);
  for (int32_t k = 0; k < num_steps_ && !drafting_.empty(); ++k) {
    for (size_t j = 0; j < drafting_.size(); ++j) {  // the argmax at each newest row
      Drafting& s = drafting_[j];
      draft_row(j)[static_cast<size_t>(s.n++)] = argmax_row(static_cast<int32_t>(j));
    }
    if (k + 1 < num_steps_) chain_step(sched);
  }
  for (size_t j = 0; j < drafting_.size(); ++j)
    sched.set_draft(drafting_[j].id, draft_row(j).first(static_cast<size_t>(drafting_[j].n)));
}

}  // namespace dss
