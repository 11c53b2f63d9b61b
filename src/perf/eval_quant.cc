#include "perf/eval_quant.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/clock.h"
#include "base/rng.h"
#include "io/json.h"
#include "model/runtime/model.h"
#include "model/runtime/sequence_runner.h"

namespace dss::perf {

namespace {

// "DIR[,weight-dtype=bf16|fp8|int8][,act-quant=none|fp8][,label=NAME]"
struct ModelSpec {
  LoadOptions load;
  std::string label;
};

Result<ModelSpec> parse_spec(const std::string& s) {
  ModelSpec m;
  std::stringstream ss(s);
  std::string item;
  std::getline(ss, m.load.dir, ',');
  while (std::getline(ss, item, ',')) {
    const size_t eq = item.find('=');
    const std::string k = item.substr(0, eq),
                      v = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (k == "weight-dtype") {
      DSS_ASSIGN_OR_RETURN(m.load.weight_dtype, parse_weight_dtype_flag(v, "weight-dtype"));
    } else if (k == "act-quant") {
      DSS_ASSIGN_OR_RETURN(m.load.act_quant, parse_act_quant(v));
    } else if (k == "label") {
      m.label = v;
    } else {
      return Status::error("model spec '", s, "': unknown option '", k,
                           "' (weight-dtype, act-quant, label)");
    }
  }
  if (m.label.empty()) m.label = s;
  return m;
}

Result<std::vector<std::vector<TokenId>>> load_prompts(const EvalQuantOptions& o, int32_t n_vocab) {
  std::vector<std::vector<TokenId>> prompts;
  if (o.prompts_file.empty()) {
    Rng rng(o.seed);
    for (int32_t p = 0; p < o.n_prompts; ++p) {
      std::vector<TokenId> ids;
      for (int32_t i = 0; i < o.prompt_len; ++i)
        ids.push_back(static_cast<TokenId>(rng.next_u64() % static_cast<uint64_t>(n_vocab)));
      prompts.push_back(std::move(ids));
    }
    return prompts;
  }
  std::ifstream in(o.prompts_file);
  if (!in) return Status::error(o.prompts_file, ": cannot open");
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("prompt_ids") ||
        !j["prompt_ids"].is_array() || j["prompt_ids"].empty())
      return Status::error(o.prompts_file, ":", line_no, ": expected {\"prompt_ids\": [ids...]}");
    std::vector<TokenId> ids;
    for (const Json& v : j["prompt_ids"]) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= n_vocab)
        return Status::error(o.prompts_file, ":", line_no, ": prompt_ids: bad token id ", v.dump());
      ids.push_back(v.get<TokenId>());
    }
    prompts.push_back(std::move(ids));
  }
  if (prompts.empty()) return Status::error(o.prompts_file, ": no prompts");
  return prompts;
}

struct Row {
  std::string label, weights, act_quant;
  size_t weight_bytes = 0;
  int64_t n_positions = 0, n_top1 = 0;
  double sum_kl = 0.0, max_diff = 0.0, decode_tok_s = 0.0;
};

// log-sum-exp of v[0, n) in double.
double lse(const float* v, int32_t n) {
  const float m = *std::max_element(v, v + n);
  double s = 0.0;
  for (int32_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(v[i]) - m);
  return m + std::log(s);
}

void compare(const float* ref, const float* cand, int32_t n, Row& row) {
  const double lr = lse(ref, n), lc = lse(cand, n);
  double kl = 0.0, diff = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    const double a = ref[i] - lr, b = cand[i] - lc;
    kl += std::exp(a) * (a - b);
    diff = std::max(diff, std::fabs(static_cast<double>(ref[i]) - cand[i]));
  }
  row.n_positions++;
  row.n_top1 += std::max_element(ref, ref + n) - ref == std::max_element(cand, cand + n) - cand;
  row.sum_kl += kl;
  row.max_diff = std::max(row.max_diff, diff);
}

// Runs one model over the prompts: compares with (or, when `ref` is empty, records into) `ref`.
Result<Row> run_model(const ModelSpec& spec, int32_t n_threads,
                      const std::vector<std::vector<TokenId>>& prompts, int32_t decode_tokens,
                      std::vector<float>& ref) {
  LoadOptions lo = spec.load;
  lo.n_threads = n_threads;
  DSS_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(lo));
  const int32_t V = model->config().n_vocab;
  Row row;
  row.label = spec.label;
  row.act_quant = to_string(lo.act_quant);
  for (const auto& [dt, b] : model->weights().bytes_by_dtype) row.weight_bytes += b;
  for (const auto& [dt, b] : model->weights().bytes_by_dtype) {  // dtypes holding >= 5%
    if (b * 20 >= row.weight_bytes) row.weights += (row.weights.empty() ? "" : "+") + dt;
  }
  int32_t max_len = 0;
  for (const auto& p : prompts) max_len = std::max(max_len, static_cast<int32_t>(p.size()));
  SequenceRunner runner(*model, max_len + decode_tokens, 64, 512, DType::kBF16);
  const bool record = ref.empty();
  size_t at = 0;
  double decode_s = 0.0;
  int64_t n_decoded = 0;
  for (const auto& p : prompts) {
    runner.reset();
    std::vector<float> last(static_cast<size_t>(V));
    runner.prefill(p, /*all_logits=*/true, [&](int32_t first, int32_t rows, const float* lg) {
      for (int32_t r = 0; r < rows; ++r) {
        const float* row_lg = lg + static_cast<size_t>(r) * V;
        if (record) {
          ref.insert(ref.end(), row_lg, row_lg + V);
        } else {
          compare(ref.data() + at, row_lg, V, row);
          at += static_cast<size_t>(V);
        }
        if (first + r == static_cast<int32_t>(p.size()) - 1)
          std::copy(row_lg, row_lg + V, last.begin());
      }
    });
    TokenId next = static_cast<TokenId>(std::max_element(last.begin(), last.end()) - last.begin());
    const double t0 = now_seconds();
    for (int32_t s = 0; s < decode_tokens; ++s) {
      const float* lg = runner.decode(next);
      next = static_cast<TokenId>(std::max_element(lg, lg + V) - lg);
    }
    decode_s += now_seconds() - t0;
    n_decoded += decode_tokens;
  }
  if (record) {  // the reference against itself
    row.n_positions = static_cast<int64_t>(ref.size() / static_cast<size_t>(V));
    row.n_top1 = row.n_positions;
  }
  row.decode_tok_s = decode_s > 0 ? static_cast<double>(n_decoded) / decode_s : 0.0;
  return row;
}

}  // namespace

Status eval_quant(const EvalQuantOptions& o) {
  DSS_ASSIGN_OR_RETURN(ModelSpec ref_spec, parse_spec(o.ref));
  std::vector<ModelSpec> cands;
  for (const auto& c : o.candidates) {
    DSS_ASSIGN_OR_RETURN(ModelSpec s, parse_spec(c));
    cands.push_back(std::move(s));
  }
  DSS_ASSIGN_OR_RETURN(ModelConfig cfg, ModelConfig::load(ref_spec.load.dir));
  DSS_ASSIGN_OR_RETURN(auto prompts, load_prompts(o, cfg.n_vocab));
  std::vector<float> ref_logits;
  std::vector<Row> rows;
  DSS_ASSIGN_OR_RETURN(Row r0,
                       run_model(ref_spec, o.n_threads, prompts, o.decode_tokens, ref_logits));
  rows.push_back(r0);
  for (const auto& c : cands) {
    DSS_ASSIGN_OR_RETURN(ModelConfig cc, ModelConfig::load(c.load.dir));
    if (cc.n_vocab != cfg.n_vocab)
      return Status::error(c.load.dir, ": vocab_size ", cc.n_vocab,
                           " differs from the reference's ", cfg.n_vocab);
    DSS_ASSIGN_OR_RETURN(Row r, run_model(c, o.n_threads, prompts, o.decode_tokens, ref_logits));
    rows.push_back(r);
  }
  int64_t n_tokens = 0;
  for (const auto& p : prompts) n_tokens += static_cast<int64_t>(p.size());
  if (o.json) {
    OrderedJson j;
    j["reference"] = rows[0].label;
    j["prompts"] = prompts.size();
    j["positions"] = n_tokens;
    j["decode_tokens_per_prompt"] = o.decode_tokens;
    for (const Row& r : rows) {
      OrderedJson e;
      e["label"] = r.label;
      e["weights"] = r.weights;
      e["act_quant"] = r.act_quant;
      e["weight_bytes"] = r.weight_bytes;
      e["top1_agreement"] = static_cast<double>(r.n_top1) / static_cast<double>(r.n_positions);
      e["mean_kl_nats"] = r.sum_kl / static_cast<double>(r.n_positions);
      e["max_abs_logit_diff"] = r.max_diff;
      e["decode_tok_s"] = r.decode_tok_s;
      j["models"].push_back(e);
    }
    std::cout << j.dump(2) << "\n";
    return Status::ok();
  }
  std::printf(
      "reference: %s; %zu prompts, %lld positions compared, %d decode tokens per prompt\n\n",
      rows[0].label.c_str(), prompts.size(), static_cast<long long>(n_tokens), o.decode_tokens);
  std::printf(
      "| model | weights | act quant | weight MiB | top-1 agreement | mean KL (nats) | max abs "
      "logit diff | decode tok/s |\n");
  std::printf("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
  for (const Row& r : rows) {
    std::printf("| %s | %s | %s | %.1f | %.4f (%lld/%lld) | %.3g | %.3g | %.2f |\n",
                r.label.c_str(), r.weights.c_str(), r.act_quant.c_str(),
                static_cast<double>(r.weight_bytes) / (1 << 20),
                static_cast<double>(r.n_top1) / static_cast<double>(r.n_positions),
                static_cast<long long>(r.n_top1), static_cast<long long>(r.n_positions),
                r.sum_kl / static_cast<double>(r.n_positions), r.max_diff, r.decode_tok_s);
  }
  return Status::ok();
}

}  // namespace dss::perf
