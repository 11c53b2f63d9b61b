// Offline batch generation (`dsserve generate`; vLLM's LLM.generate): requests read from JSONL
// lines, submitted together to an Engine, their events consumed on the calling thread through
// the server's /v1/completions pipeline (ChoiceStream: detokenizer, stop strings; a matched stop
// string cancels its engine request), results returned in input order. The sampling fields are
// read by the server's reader (parse_sampling_params), so a line accepts exactly what the
// completions endpoint accepts, with the same errors.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/generate.h"
#include "engine/engine.h"
#include "io/json.h"
#include "text/tokenizer.h"

namespace dss {

struct BatchRequest {
  std::vector<TokenId> prompt;
  SamplingParams params;
};

struct BatchResult {
  std::string error;  // non-empty: the request was refused or failed (nothing else is set)
  std::vector<TokenId> output_ids;
  std::string text;           // empty without a tokenizer
  std::string finish_reason;  // "stop" | "length" | "abort"
  int32_t n_cached_prompt = 0;
  double queue_s = 0.0, ttft_s = 0.0, e2e_s = 0.0;  // from the engine's arrival time
};

// Prompt text -> token ids, or an error (no tokenizer: only prompt_ids work).
using PromptEncoder = std::function<Result<std::vector<TokenId>>(const std::string&)>;

// One JSONL line: {"prompt_ids": [...]} or {"prompt": "..."} plus the sampling fields of
// /v1/completions over `defaults`. Errors name the field.
Result<BatchRequest> parse_batch_request(const std::string& line, const SamplingParams& defaults,
                                         const PromptEncoder& encode);

// Runs every request to its end on `engine` (tok may be null: no text, no stop strings).
// Blocks until each has its last event. Thread-safety: one call at a time per engine is not
// required (the engine serves other clients meanwhile); `tok` must outlive the call.
std::vector<BatchResult> run_batch(Engine& engine, const Tokenizer* tok,
                                   const std::vector<BatchRequest>& requests);

// The output line of request `index`: {"index", "prompt_tokens", "cached_tokens", "output_ids",
// ["text",] "finish_reason", "queue_s", "ttft_s", "e2e_s"} or {"index", "error"}.
OrderedJson batch_result_json(size_t index, const BatchRequest& request, const BatchResult& result,
                              bool with_text);

}  // namespace dss
