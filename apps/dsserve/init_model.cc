#include "apps/dsserve/init_model.h"

#include <algorithm>
#include <cstdio>

#include "apps/dsserve/default_tokenizer_dir.h"
#include "base/clock.h"
#include "base/log.h"
#include "io/json.h"
#include "model/deepseek/checkpoint_tokenizer.h"
#include "model/deepseek/random_checkpoint.h"

namespace dss::app {

namespace {
void print_progress(int64_t done, int64_t total) {
  std::fprintf(stderr, "\rinit-model: %lld/%lld layers", static_cast<long long>(done),
               static_cast<long long>(total));
  if (done == total) std::fprintf(stderr, "\n");
}
}  // namespace

Status init_model(const InitModelOptions& o) {
  DSS_ASSIGN_OR_RETURN(Json cfg, preset_config(o.preset));
  if (o.vocab_size > 0) cfg["vocab_size"] = o.vocab_size;
  if (o.n_layers > 0) {
    cfg["num_hidden_layers"] = o.n_layers;
    cfg["first_k_dense_replace"] = std::min(o.n_layers, cfg["first_k_dense_replace"].get<int>());
  }
  if (o.mtp_layers < 0 || o.mtp_layers > 1)
    return Status::error("--mtp-layers ", o.mtp_layers, ": 0 or 1 (DeepSeek ships one)");
  cfg["num_nextn_predict_layers"] = o.mtp_layers;
  RandomCheckpointOptions ro;
  ro.out_dir = o.out;
  ro.seed = o.seed;
  ro.fp8 = o.dtype == "fp8";
  if (!o.quiet) ro.progress = print_progress;
  const double t0 = now_seconds();
  DSS_RETURN_IF_ERROR(write_random_checkpoint(cfg, ro));
  if (cfg["vocab_size"].get<int>() == 129280) {
    const std::string src = o.tokenizer_dir.empty() ? default_tokenizer_dir() : o.tokenizer_dir;
    if (src.empty()) {
      return Status::error(
          "no tokenizer directory: $DSS_TOKENIZER_DIR is unset and no "
          "third_party/tokenizer/deepseek-v3 lies above the executable; run scripts/setup or "
          "pass --tokenizer-dir");
    }
    DSS_RETURN_IF_ERROR(
        write_checkpoint_tokenizer(src, o.out, cfg.value("model_type", "") == "deepseek_v32"));
  }
  if (!o.quiet)
    log_info("init-model: wrote ", o.out, " (", o.preset, ", ", o.dtype, ", seed ", o.seed, ") in ",
             now_seconds() - t0, " s");
  return Status::ok();
}

}  // namespace dss::app
