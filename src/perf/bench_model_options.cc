#include "perf/bench_model_options.h"

#include "base/phase_timer.h"

namespace dss::perf {

Status validate(const BenchModelOptions& a) {
  auto positive = [](const std::vector<int32_t>& v, const char* flag) -> Status {
    for (int32_t x : v)
      if (x < 1) return Status::error(flag, ": ", x, " is not a positive length");
    return Status::ok();
  };
  DSS_RETURN_IF_ERROR(positive(a.prefill, "--prefill"));
  // The prefill runs measure the peaks that the decode batches' bounds need.
  if (a.prefill.empty()) return Status::error("--prefill: at least one length");
  DSS_RETURN_IF_ERROR(positive(a.decode_batch, "--decode-batch"));
  DSS_RETURN_IF_ERROR(positive(a.decode_context, "--decode-context"));
  if (a.decode_tokens < 1) return Status::error("--decode-tokens must be >= 1");
  if (a.context_steps < 1) return Status::error("--context-steps must be >= 1");
  if (a.context_chunk < 1) return Status::error("--context-chunk must be >= 1");
  if (a.repetitions < 1) return Status::error("--repetitions must be >= 1");
  if (a.bandwidth_mib < 1) return Status::error("--bandwidth-mib must be >= 1");
  DSS_RETURN_IF_ERROR(positive(a.spec_batch, "--spec-batch"));
  if (a.spec_steps < 1) return Status::error("--speculative-num-steps must be >= 1");
  if (a.spec_context < 1) return Status::error("--spec-context must be >= 1");
  if (a.ab_variants < 1 || a.ab_variants > kMaxPhaseVariants)
    return Status::error("--ab-variants must be 1..", kMaxPhaseVariants);
  return Status::ok();
}

}  // namespace dss::perf
