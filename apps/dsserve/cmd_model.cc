// Model subcommands: logits, inspect, init-model.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/dsserve/commands.h"
#include "apps/dsserve/engine_flags.h"
#include "apps/dsserve/init_model.h"
#include "apps/dsserve/parallel_flags.h"
#include "base/clock.h"
#include "base/process_memory.h"
#include "io/json.h"
#include "model/runtime/logits_probe.h"
#include "model/runtime/model.h"
#include "model/runtime/model_summary.h"
#include "model/runtime/sequence_runner.h"

namespace dss::app {

namespace {

Result<std::vector<TokenId>> parse_ids(const std::string& s) {
  std::vector<TokenId> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (end == item.c_str() || *end != '\0' || v < 0 || v > INT32_MAX) {
      return Status::error("--ids: '", item, "' is not a token id");
    }
    ids.push_back(static_cast<TokenId>(v));
  }
  if (ids.empty()) return Status::error("--ids: no token ids given");
  return ids;
}

struct LogitsArgs {
  std::string model;
  std::string ids;
  int32_t decode = 0;
  std::string attn = "auto";
  int32_t chunk = 512;
  WeightDType weight_dtype = WeightDType::kAsStored;
  WeightStorage weight_layout = WeightStorage::kTiled;
  WeightDType lm_head_dtype = WeightDType::kAsStored;
  MatmulDType matmul_dtype = MatmulDType::kAuto;
  ActQuant act_quant = ActQuant::kNone;
  Device device = Device::kCpu;
  int32_t n_threads = 0;
  ParallelArgs parallel;
  SpeculativeOptions speculative;
};

int run_logits(const LogitsArgs& a) {
  auto ids = parse_ids(a.ids);
  if (!ids) {
    std::fprintf(stderr, "dsserve logits: %s\n", ids.message().c_str());
    return 2;
  }
  Result<ParallelRun> par = start_parallel(a.parallel);
  if (!par) {
    std::fprintf(stderr, "dsserve logits: %s\n", par.message().c_str());
    return 2;
  }
  const double t0 = now_seconds();
  auto model =
      Model::load(LoadOptions{a.model, a.n_threads, a.weight_dtype, a.act_quant, a.weight_layout,
                              a.lm_head_dtype, a.matmul_dtype, a.parallel.ep_size > 1,
                              a.speculative.algorithm == SpecAlgorithm::kNextn, "",
                              par->dp_attention, a.device},
                  par->model_group());
  if (!model) {
    std::fprintf(stderr, "dsserve logits: %s\n", model.message().c_str());
    return 1;
  }
  const double t_load = now_seconds() - t0;
  int64_t weight_bytes = 0;  // the weights this rank holds (its shard), as loaded
  for (const auto& [dtype, n] : (*model)->weights().bytes_by_dtype) weight_bytes += n;
  const int64_t rss_bytes = resident_bytes();
  if (par->rank() != 0) {
    std::fprintf(stderr, "dsserve logits: rank %d: weights %lld bytes, resident %lld bytes\n",
                 par->rank(), static_cast<long long>(weight_bytes),
                 static_cast<long long>(rss_bytes));
  }
  const ModelConfig& c = (*model)->config();
  for (TokenId id : *ids) {
    if (id >= c.n_vocab) {
      std::fprintf(stderr, "dsserve logits: --ids: token id %d >= vocab_size %d\n", id, c.n_vocab);
      return 2;
    }
  }
  AttnPath path = AttnPath::kAuto;
  if (a.attn == "naive") path = AttnPath::kNaive;
  if (a.attn == "absorbed") path = AttnPath::kAbsorbed;
  const int32_t max_len = static_cast<int32_t>(ids->size()) + std::max(a.decode, 0);
  if (max_len > c.max_position_embeddings) {
    std::fprintf(stderr, "dsserve logits: %d tokens exceed max_position_embeddings %d\n", max_len,
                 c.max_position_embeddings);
    return 2;
  }
  const LogitsProbe p = probe_logits(**model, *ids, a.decode, a.chunk, path);
  OrderedJson out;
  out["argmax"] = p.argmax;
  out["argmax_logit"] = p.argmax_logit;
  out["last_logits"] = p.last_logits;
  out["greedy"] = p.greedy;
  out["timing"] = {{"load_s", t_load}, {"prefill_s", p.prefill_s}, {"total_s", p.total_s}};
  out["memory"] = {{"weight_bytes", weight_bytes}, {"rss_after_load_bytes", rss_bytes}};
  if ((*model)->has_mtp() && ids->size() >= 2) out["mtp_logits"] = probe_mtp_logits(**model, *ids);
  if (par->rank() == 0) std::cout << out.dump() << "\n";  // one result, from rank 0
  return 0;
}

void add_logits(CLI::App& app) {
  auto* a = &command_options<LogitsArgs>();
  auto* cmd = app.add_subcommand(
      "logits", "Run a prompt of token ids through the model and print logits as JSON");
  cmd->add_option("--model", a->model, "Checkpoint directory")->required();
  cmd->add_option("--ids", a->ids, "Comma-separated prompt token ids, e.g. 0,15,27")->required();
  cmd->add_option("--decode", a->decode,
                  "Greedy tokens to produce (first from the prefill, then decode steps)");
  cmd->add_option("--attn", a->attn,
                  "MLA form: auto (naive prefill, absorbed decode) | naive | absorbed")
      ->check(CLI::IsMember({"auto", "naive", "absorbed"}));
  cmd->add_option("--chunk", a->chunk, "Prefill chunk size in tokens")->check(CLI::PositiveNumber);
  add_weight_flags(cmd, a->weight_dtype, a->weight_layout, a->lm_head_dtype, a->matmul_dtype);
  add_act_quant_flag(cmd, a->act_quant);
  add_device_flag(cmd, a->device);
  add_parallel_flags(cmd, a->parallel);
  cmd->add_option("--threads", a->n_threads, "Compute threads (0: all hardware threads)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option_function<std::string>(
         "--speculative-algorithm",
         [a](const std::string& s) {
           a->speculative.algorithm = s == "none" ? SpecAlgorithm::kNone : SpecAlgorithm::kNextn;
         },
         "nextn: also load the MTP module and print its logits at every position but the last "
         "(mtp_logits, the draft for the token after next)")
      ->check(CLI::IsMember({"none", "nextn"}, CLI::ignore_case));
  cmd->callback([a] { exit_code = run_logits(*a); });
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) {
    b /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f %s", b, units[u]);
  return buf;
}

int run_inspect(const std::string& dir, bool json) {
  auto model = Model::load(LoadOptions{dir});
  if (!model) {
    std::fprintf(stderr, "dsserve inspect: %s\n", model.message().c_str());
    return 1;
  }
  const OrderedJson j = model_summary(**model);
  if (json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const ModelConfig& c = (*model)->config();
  std::printf("architecture      %s\n", model_arch_name(c.arch).c_str());
  std::printf("layers            %d (%d dense, %d MoE)\n", c.n_layers, c.n_dense_layers,
              c.n_layers - c.n_dense_layers);
  std::printf("hidden / heads    %d / %d\n", c.d_model, c.n_heads);
  std::printf("vocab             %d\n", c.n_vocab);
  std::printf(
      "MLA               q_lora %d, kv_lora %d, nope %d, rope %d, v %d, softmax scale %.6f\n",
      c.q_lora_rank, c.kv_lora_rank, c.d_nope, c.d_rope, c.d_v, c.softmax_scale());
  std::printf("MoE               %d routed + %d shared, %d per token, %d groups (top %d)\n",
              c.n_experts, c.n_shared_experts, c.n_experts_per_tok, c.n_expert_groups,
              c.n_groups_per_tok);
  std::printf("quantization      %s\n", j["quantization"].get<std::string>().c_str());
  for (const auto& [dt, e] : j["tensors_by_dtype"].items()) {
    std::printf("tensors %-9s %lld elements, %s\n", dt.c_str(),
                static_cast<long long>(e["elements"].get<int64_t>()),
                human_bytes(e["bytes"].get<double>()).c_str());
  }
  std::printf("total             %s in %zu file(s)\n",
              human_bytes(j["total_bytes"].get<double>()).c_str(), j["files"].get<size_t>());
  const auto& kv = j["kv_cache_bytes_per_token"];
  std::printf(
      "KV cache / token  %d values x %d layers = %s (fp8), %s (bf16), %s (f32); default %s\n",
      c.d_kv_cache(), c.n_layers, human_bytes(kv["fp8"].get<double>()).c_str(),
      human_bytes(kv["bf16"].get<double>()).c_str(), human_bytes(kv["f32"].get<double>()).c_str(),
      kv["default"].get<std::string>().c_str());
  return 0;
}

void add_inspect(CLI::App& app) {
  struct InspectArgs {
    std::string dir;
    bool json = false;
  };
  auto* a = &command_options<InspectArgs>();
  auto* cmd = app.add_subcommand(
      "inspect", "Summarise a checkpoint: architecture, parameters by dtype, KV cost");
  cmd->add_option("--model", a->dir, "Checkpoint directory")->required();
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->callback([a] { exit_code = run_inspect(a->dir, a->json); });
}

void add_init_model(CLI::App& app) {
  auto* o = &command_options<InitModelOptions>();
  auto* cmd = app.add_subcommand(
      "init-model", "Write a random-weight checkpoint in the official DeepSeek format");
  cmd->add_option("--preset", o->preset,
                  "tiny | ds-mini | tiny-v32 | ds-mini-v32 | v3-layers (DeepSeek-V3 671B's layer "
                  "shapes, 3 layers: 1 dense + 2 MoE, ~27 GB in FP8)")
      ->required()
      ->check(CLI::IsMember({"tiny", "ds-mini", "tiny-v32", "ds-mini-v32", "v3-layers"}));
  cmd->add_option("--num-layers", o->n_layers,
                  "Override num_hidden_layers (the dense ones first, as the preset has them)")
      ->check(CLI::PositiveNumber);
  cmd->add_option(
         "--mtp-layers", o->mtp_layers,
         "Multi-token-prediction modules (0 or 1): tensors model.layers.{num_hidden_layers}"
         ".* as DeepSeek ships them")
      ->capture_default_str();
  cmd->add_option("--out", o->out, "Output directory")->required();
  cmd->add_option("--dtype", o->dtype, "fp8 (e4m3 + 128x128 block scales) | bf16")
      ->check(CLI::IsMember({"fp8", "bf16"}));
  cmd->add_option("--seed", o->seed, "Random seed (same seed, same bytes)");
  cmd->add_option(
      "--vocab-size", o->vocab_size,
      "Override vocab_size (the tokenizer files are added only for the real vocabulary)");
  cmd->add_option("--tokenizer-dir", o->tokenizer_dir,
                  "Where to copy tokenizer.json/tokenizer_config.json from");
  cmd->callback([o] { report_failure("init-model", init_model(*o)); });
}

}  // namespace

void register_model_commands(CLI::App& app) {
  add_logits(app);
  add_inspect(app);
  add_init_model(app);
}

}  // namespace dss::app
