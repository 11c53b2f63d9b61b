// Turns a StepPlan into the ForwardBatch arrays the model reads (plain data, reused across steps:
// after warm-up no allocation). The batch's spans point into this builder; valid until the next
// build.
#pragma once

#include <vector>

#include "core/forward_batch.h"
#include "sched/step_plan.h"

namespace dss {

class BatchBuilder {
 public:
  explicit BatchBuilder(int32_t page_size) : page_size_(page_size) {}
  const ForwardBatch& build(const StepPlan& plan);
  const ForwardBatch& batch() const { return batch_; }

 private:
  int32_t page_size_;
  std::vector<TokenId> tokens_;
  std::vector<int32_t> positions_, seq_begin_, kv_len_, slots_, logit_rows_, n_draft_;
  std::vector<PageId> page_table_;
  ForwardBatch batch_;
};

}  // namespace dss
