#include "sched/batch_builder.h"

#include <algorithm>

#include "base/check.h"

namespace dss {

const ForwardBatch& BatchBuilder::build(const StepPlan& plan) {
  tokens_.clear();
  positions_.clear();
  seq_begin_.assign(1, 0);
  kv_len_.clear();
  slots_.clear();
  logit_rows_.clear();
  n_draft_.clear();
  int32_t max_pages = 1;
  for (const ScheduledSeq& q : plan.seqs) max_pages = std::max(max_pages, q.n_pages);
  page_table_.assign(plan.seqs.size() * static_cast<size_t>(max_pages), kNoPage);
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSeq& q = plan.seqs[i];
    DSS_CHECK(q.n_pages * page_size_ >= q.n_computed + q.n_new, "seq ", q.id, " lacks pages");
    std::copy(q.pages, q.pages + q.n_pages,
              page_table_.begin() + static_cast<ptrdiff_t>(i * static_cast<size_t>(max_pages)));
    const int32_t n_known = q.n_computed + q.n_new - q.n_draft;  // tokens before the draft
    for (int32_t j = 0; j < q.n_new; ++j) {
      const int32_t pos = q.n_computed + j;
      tokens_.push_back(pos < n_known ? q.tokens[pos] : q.draft[pos - n_known]);
      positions_.push_back(pos);
      slots_.push_back(q.pages[pos / page_size_] * page_size_ + pos % page_size_);
    }
    const auto end = static_cast<int32_t>(tokens_.size());
    for (int32_t r = end - q.n_logit_rows(); r < end; ++r) logit_rows_.push_back(r);
    seq_begin_.push_back(static_cast<int32_t>(tokens_.size()));
    kv_len_.push_back(q.n_computed + q.n_new);
    n_draft_.push_back(q.n_draft);
  }
  batch_.tokens = tokens_;
  batch_.positions = positions_;
  batch_.seq_token_begin = seq_begin_;
  batch_.seq_kv_len = kv_len_;
  batch_.page_table = page_table_;
  batch_.max_pages = max_pages;
  batch_.kv_write_slots = slots_;
  batch_.logit_rows = logit_rows_;
  batch_.seq_n_draft = n_draft_;
  return batch_;
}

}  // namespace dss
