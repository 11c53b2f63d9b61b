// `dsserve eval-quant`: how far candidate weight/activation formats land from a reference model
// on a prompt set, and what they cost: per candidate, over every prompt position, the top-1
// agreement of the next-token distribution, the mean KL(ref || cand) in nats, the max |logit
// difference|, plus weight bytes in memory and batch-1 decode tok/s. Models load one at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace dss::perf {

struct EvalQuantOptions {
  std::string ref;                      // model spec (see parse in eval_quant.cc)
  std::vector<std::string> candidates;  // model specs
  std::string prompts_file;             // JSONL {"prompt_ids": [...]}; empty: seeded random ids
  int32_t n_prompts = 4;
  int32_t prompt_len = 32;
  int32_t decode_tokens = 8;
  uint64_t seed = 1;
  int32_t n_threads = 0;
  bool json = false;
};

// Runs the evaluation and prints a markdown table (or JSON) to stdout.
Status eval_quant(const EvalQuantOptions& o);

}  // namespace dss::perf
