#include "engine/engine.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <optional>
#include <span>
#include <string>

#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/str_cat.h"
#include "core/validate_sampling_params.h"
#include "engine/mtp_drafter.h"
#include "engine/request_grammar.h"
#include "engine/step_channel.h"
#include "engine/step_watchdog.h"
#include "grammar/compiled_grammar.h"
#include "kv/block_pool.h"
#include "kv/kv_cache.h"
#include "kv/radix_cache.h"
#include "model/runtime/model.h"
#include "sample/finish.h"
#include "sample/sampler.h"
#include "sample/sampler_state.h"
#include "sched/batch_builder.h"
#include "sched/batch_cap.h"
#include "sched/ngram_draft.h"
#include "sched/scheduler.h"

namespace dss {

namespace {

// The model's logits for one row are all finite (no NaN, no +-Inf). A row that is not cannot be
// sampled meaningfully: its request fails alone and the batch goes on.
bool all_finite(std::span<const float> row) {
  bool ok = true;
  for (const float v : row) ok &= std::isfinite(v);
  return ok;
}

std::string deadline_message(RequestError kind, double limit_s) {
  return kind == RequestError::kTimeout
             ? str_cat("request timed out after ", limit_s, " s (--request-timeout)")
             : str_cat("request waited in the queue longer than ", limit_s,
                       " s (--max-queue-time); the server is overloaded, retry later");
}

int64_t mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return int64_t{4} << 30;
}

// Pages of the KV pool: --max-total-tokens, else the --kv-cache-memory / --kv-cache-fraction
// (of available_bytes) budget (capped by what every running request at full length can use); an
// error when a request of the whole context could not fit.
Result<int64_t> kv_pool_pages(const EngineOptions& o, const KvLayout& layout,
                              int32_t context_length, int64_t available_bytes) {
  const auto bytes_per_page = static_cast<int64_t>(layout.bytes_per_page());
  int64_t n_pages = 0;
  if (o.max_total_tokens > 0) {
    n_pages = (o.max_total_tokens + o.page_size - 1) / o.page_size;
  } else {
    const int64_t budget =
        o.kv_cache_memory_bytes > 0
            ? o.kv_cache_memory_bytes
            : static_cast<int64_t>(o.kv_cache_fraction * static_cast<double>(available_bytes));
    n_pages = budget / bytes_per_page;
    if (o.kv_cache_memory_bytes ==
        0) {  // no point holding more than every running request at full length
      const int64_t useful = static_cast<int64_t>(o.max_running_requests) *
                             ((context_length + o.page_size - 1) / o.page_size);
      n_pages = std::min(n_pages, useful);
    }
  }
  if (n_pages * o.page_size < context_length) {
    return Status::error(
        "the KV cache holds ", n_pages * o.page_size, " tokens, less than --context-length ",
        context_length,
        " (raise --kv-cache-memory / --max-total-tokens or lower --context-length)");
  }
  if (n_pages > INT32_MAX / o.page_size) return Status::error("KV cache too large");
  return n_pages;
}

// DP attention, every rank idle: the pause before the next lockstep round (a new request wakes
// its rank at once; the others join within this).
constexpr std::chrono::milliseconds kLockstepIdlePause{1};

int32_t max_draft_steps(const SpeculativeOptions& s) {
  return s.algorithm == SpecAlgorithm::kNone ? 0 : s.num_steps;
}

Status check_speculative(const SpeculativeOptions& s) {
  if (s.algorithm == SpecAlgorithm::kNone) return Status::ok();
  if (s.num_steps < 1 || s.num_steps > 16)
    return Status::error("--speculative-num-steps must be in [1, 16], got ", s.num_steps);
  if (s.num_draft_tokens != 0 && s.num_draft_tokens != s.num_steps + 1)
    return Status::error("--speculative-num-draft-tokens must be --speculative-num-steps + 1 (",
                         s.num_steps + 1, ") with --speculative-eagle-topk 1, got ",
                         s.num_draft_tokens);
  if (s.eagle_topk != 1) return Status::error("--speculative-eagle-topk: only 1 is supported");
  if (s.ngram_min < 1 || s.ngram_min > s.ngram_max)
    return Status::error("--speculative-ngram-min-match-window-size must be in [1, max]");
  return Status::ok();
}

}  // namespace

struct Engine::Impl {
  EngineOptions opts;
  std::unique_ptr<Model> model;
  MpiComm* tp_group = nullptr;   // size > 1 only
  MpiComm* dp_group = nullptr;   // DP attention: the ranks stepping in lockstep
  bool last_round_busy = false;  // DP attention: some rank had work last round
  // DP attention: set_round_hook's function (written once, before has_round_hook is set).
  std::function<void()> round_hook;
  std::atomic<bool> has_round_hook{false};
  std::unique_ptr<StepChannel> steps;      // tensor parallel: rank 0 sends, the others receive
  std::unique_ptr<StepWatchdog> watchdog;  // tensor parallel: ends the job if a step stalls
  RankStats own;                           // tensor parallel: this rank's totals
  std::vector<double> rank_totals;         // tensor parallel: [tp size x 4], the exchange's buffer
  // Tensor parallel, every rank: one forward of the group's step, timed, with the watchdog on;
  // every kRankStatsEvery forwards the ranks' totals are gathered (rank 0 keeps them in stats).
  void tp_forward(const ForwardBatch& b);
  // DP attention: one round of the lockstep (every rank's engine thread calls it alike): the
  // ranks agree whether any has work (then each runs its step, or an idle forward) and whether
  // all have stopped (then it returns false and the loop ends).
  bool lockstep_round(bool stopped);
  void dp_forward(const ForwardBatch* b);  // nullptr: Model::idle_forward
  // The forward just run (started at t0_ns) into this rank's totals.
  void count_forward(int64_t t0_ns);
  int32_t context_length = 0;
  int32_t eos = 1;
  std::unique_ptr<KvCache> kv;
  std::unique_ptr<BlockPool> pool;
  std::unique_ptr<RadixCache> radix;
  std::unique_ptr<Scheduler> sched;
  std::unique_ptr<BatchCapController> batch_cap;  // --slo-tpot-ms / --slo-ttft-ms, else null
  std::unique_ptr<Workspace> ws;
  std::unique_ptr<Sampler> sampler;
  BatchBuilder builder{64};
  std::vector<float> logits;
  // Structured output: this step's allowed-token masks, [max_running_requests, n_words], and
  // what each logit row has (row_masks[row]).
  enum class RowMask : uint8_t { kNone, kMasked, kDeadEnd };
  std::vector<uint64_t> masks;
  std::vector<RowMask> row_masks;
  std::vector<TokenId> draft;       // speculative decoding: [num_steps], one sequence's draft
  std::unique_ptr<MtpDrafter> mtp;  // --speculative-algorithm NEXTN

  struct Live {
    SamplingParams params;
    std::unique_ptr<SamplerState> sampler;
    std::unique_ptr<RequestGrammar> grammar;  // structured output, else null
    EventSink sink;
    int32_t n_prompt = 0;
    double t_arrival = 0.0, t_scheduled = 0.0;
  };
  std::unordered_map<RequestId, Live> live;  // engine thread only

  // Inbox (any thread).
  mutable std::mutex mu;
  std::condition_variable cv;
  struct Pending {
    RequestId id;
    GenerateRequest req;
    EventSink sink;
    double t_arrival;
  };
  std::deque<Pending> inbox;
  std::vector<RequestId> cancels;
  std::vector<std::promise<void>> integrity_checks;
  bool stopping = false;
  std::atomic<RequestId> next_id{1};
  EngineStats stats;  // guarded by mu
  std::thread thread;

  void loop();
  void drain(std::deque<Pending>& in, std::vector<RequestId>& cancel_ids);
  void step();
  void fill_masks(const StepPlan& plan);
  struct SampledRows {
    std::vector<StepResult> results;  // per logit row, for Scheduler::commit
    std::vector<TokenEvent> events;   // per sampled token
    // Requests this step fails for their grammar (dead end, or a token the grammar refused).
    std::vector<std::pair<RequestId, std::string>> grammar_errors;
    int32_t n_decoding = 0;  // sequences producing their second or later token this step
    std::vector<double> first_token_arrivals;
  };
  SampledRows sample_rows(const StepPlan& plan);
  StepResult sample_seq(const ScheduledSeq& q, int32_t row, Live& l, SampledRows& out);
  void emit_step_events(const StepOutcome& out, SampledRows& rows, double t_now);
  void propose_drafts(const StepPlan& plan);
  void expire_deadlines();
  void emit_final(RequestId id, FinishReason reason, const SeqStats& st,
                  RequestError error_kind = RequestError::kNone, std::string error = {});
  void abort_all();
  void publish_stats(double step_s);
};

Result<std::unique_ptr<Engine>> Engine::create(const EngineOptions& o, MpiComm* tp_group,
                                               MpiComm* dp_group) {
  auto impl = std::make_unique<Impl>();
  if (tp_group != nullptr && tp_group->size() > 1) impl->tp_group = tp_group;
  if (dp_group != nullptr && dp_group->size() > 1) impl->dp_group = dp_group;
  DSS_CHECK(impl->tp_group == nullptr || impl->dp_group == nullptr,
            "DP attention with tensor parallelism inside a group");
  if (impl->dp_group != nullptr && o.speculative.algorithm == SpecAlgorithm::kNextn)
    return Status::error(
        "--speculative-algorithm NEXTN does not run under DP attention yet (NGRAM does)");
  impl->opts = o;
  if (o.page_size < 1) return Status::error("--page-size must be at least 1");
  if (o.max_running_requests < 1) return Status::error("--max-running-requests must be at least 1");
  if (o.chunked_prefill_size < 1) return Status::error("--chunked-prefill-size must be at least 1");
  if (!(o.slo_tpot_ms >= 0.0) || !(o.slo_ttft_ms >= 0.0))
    return Status::error("--slo-tpot-ms and --slo-ttft-ms must be >= 0");
  DSS_RETURN_IF_ERROR(check_speculative(o.speculative));
  DSS_ASSIGN_OR_RETURN(
      impl->model, Model::load(LoadOptions{o.model_dir, o.n_threads, o.weight_dtype, o.act_quant,
                                           o.weight_layout, o.lm_head_dtype, o.matmul_dtype,
                                           o.expert_parallel || impl->dp_group != nullptr,
                                           o.speculative.algorithm == SpecAlgorithm::kNextn,
                                           o.weight_cache_dir, impl->dp_group != nullptr, o.device},
                               impl->dp_group != nullptr ? impl->dp_group : impl->tp_group));
  const ModelConfig& c = impl->model->config();
  impl->eos = c.eos_token_id;
  impl->context_length =
      o.context_length > 0 ? o.context_length : std::min(c.max_position_embeddings, 32768);
  if (impl->context_length > c.max_position_embeddings) {
    return Status::error("--context-length ", impl->context_length,
                         " exceeds the model's max_position_embeddings ",
                         c.max_position_embeddings);
  }
  DType kv_dtype = impl->model->default_kv_dtype();  // "auto": fp8 for V3.2, bf16 for V3
  if (o.kv_cache_dtype != "auto" && !kv_dtype_from_name(o.kv_cache_dtype.c_str(), kv_dtype)) {
    return Status::error("--kv-cache-dtype must be auto, bf16, f32 or fp8, got '", o.kv_cache_dtype,
                         "'");
  }
  const KvLayout layout = impl->model->kv_layout(o.page_size, kv_dtype);
  // --kv-cache-fraction of the memory the pool lives in: MemAvailable, or the device's free
  // memory after the weights.
  const int64_t device_free = impl->model->device_free_bytes();
  DSS_ASSIGN_OR_RETURN(int64_t n_pages,
                       kv_pool_pages(o, layout, impl->context_length,
                                     device_free > 0 ? device_free : mem_available_bytes()));
  if (impl->tp_group != nullptr) {  // rank 0's pool size (its memory), so slots mean the same
    impl->tp_group->broadcast(std::span<int64_t>(&n_pages, 1), 0);
  }
  impl->kv =
      std::make_unique<KvCache>(impl->model->make_kv_cache(layout, static_cast<int32_t>(n_pages)));
  impl->pool = std::make_unique<BlockPool>(static_cast<int32_t>(n_pages));
  impl->radix = std::make_unique<RadixCache>(o.page_size, *impl->pool);
  SchedulerConfig sc{o.page_size, o.max_running_requests, o.chunked_prefill_size,
                     impl->context_length, o.enable_prefix_cache};
  impl->sched = std::make_unique<Scheduler>(sc, *impl->pool, *impl->radix);
  BatchCapConfig bc;
  bc.tpot_target_ms = o.slo_tpot_ms;
  bc.ttft_target_ms = o.slo_ttft_ms;
  bc.max_cap = o.max_running_requests;
  if (bc.enabled()) {
    impl->batch_cap = std::make_unique<BatchCapController>(bc);
    impl->sched->set_running_cap(impl->batch_cap->cap());  // slow start from the first step
  }
  impl->stats.batch_cap = impl->sched->running_cap();
  // A decode verifying a draft needs 1 + K tokens and logit rows.
  const int32_t max_draft = max_draft_steps(o.speculative);
  impl->stats.spec_num_steps = max_draft;
  const int32_t max_rows = o.max_running_requests * (1 + max_draft);
  const int32_t max_tokens = std::max(o.chunked_prefill_size, max_rows);
  WorkspaceLimits limits{max_tokens, impl->context_length, max_rows, impl->model->n_threads(),
                         impl->model->act_quant_fp8()};
  limits.mtp = impl->model->has_mtp();
  impl->ws = std::make_unique<Workspace>(impl->model->workspace(limits));
  if (impl->model->has_mtp()) {
    impl->mtp = std::make_unique<MtpDrafter>(*impl->model, *impl->kv, *impl->ws, o.page_size,
                                             o.speculative.num_steps, o.max_running_requests,
                                             max_tokens, impl->context_length);
  }
  impl->ws->logits_to_rank0_only = true;  // rank 0 samples and sends the next steps' tokens
  impl->sampler = std::make_unique<Sampler>(c.n_vocab);
  impl->builder = BatchBuilder(o.page_size);
  impl->logits.resize(static_cast<size_t>(max_rows) * c.n_vocab);
  impl->masks.resize(static_cast<size_t>(max_rows) *
                     static_cast<size_t>(impl->sampler->n_mask_words()));
  impl->row_masks.reserve(static_cast<size_t>(max_rows));
  impl->draft.resize(static_cast<size_t>(max_draft));
  impl->stats.kv_pages_total = static_cast<int32_t>(n_pages);
  impl->stats.page_size = o.page_size;
  log_info("engine: ", model_arch_name(c.arch), ", context ", impl->context_length, ", KV pool (",
           kv_dtype_name(kv_dtype), ", ", layout.bytes_per_token(), " bytes/token) ", n_pages,
           " pages x ", o.page_size, " tokens (",
           static_cast<double>(n_pages * static_cast<int64_t>(layout.bytes_per_page())) / (1 << 20),
           " MiB)");
  if (max_draft > 0) {
    log_info("engine: speculative decoding, ",
             impl->mtp ? "drafts from the MTP module (NEXTN)" : "prompt-lookup drafts (NGRAM)",
             ", ", max_draft, " draft tokens per decode step");
  }
  if (impl->tp_group != nullptr) {
    const int32_t max_seqs = o.max_running_requests + 1;
    const int32_t max_pages = (impl->context_length + o.page_size - 1) / o.page_size + 1;
    impl->steps = std::make_unique<StepChannel>(
        *impl->tp_group, StepChannel::payload_words(max_tokens, max_seqs, max_pages, max_rows));
    impl->watchdog = std::make_unique<StepWatchdog>(o.dist_timeout_s, impl->tp_group->rank());
    impl->rank_totals.resize(4 * static_cast<size_t>(impl->tp_group->size()));
    if (impl->tp_group->rank() != 0) return std::unique_ptr<Engine>(new Engine(std::move(impl)));
  }
  if (impl->dp_group != nullptr)
    impl->watchdog = std::make_unique<StepWatchdog>(o.dist_timeout_s, impl->dp_group->rank());
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->loop(); });
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() { shutdown(); }

const ModelConfig& Engine::model_config() const { return impl_->model->config(); }
int32_t Engine::context_length() const { return impl_->context_length; }

Status Engine::validate(const GenerateRequest& req) const {
  const ModelConfig& c = impl_->model->config();
  if (req.prompt.empty()) return Status::error("prompt: must contain at least one token");
  for (TokenId t : req.prompt) {
    if (t < 0 || t >= c.n_vocab)
      return Status::error("prompt: token id ", t, " is out of range [0, ", c.n_vocab, ")");
  }
  DSS_RETURN_IF_ERROR(validate_sampling_params(req.params, c.n_vocab));
  if (req.grammar) {
    const grammar::TokenVocab& v = req.grammar->vocab();
    if (v.n_vocab() != c.n_vocab || v.eos_id() != c.eos_token_id)
      return Status::error("grammar: compiled for ", v.n_vocab(), " token ids with EOS ",
                           v.eos_id(), "; the model has ", c.n_vocab, " with EOS ", c.eos_token_id);
  }
  const auto n = static_cast<int64_t>(req.prompt.size());
  if (n + req.params.max_tokens > impl_->context_length) {
    return Status::error(n >= impl_->context_length ? "prompt" : "max_tokens",
                         ": this model's maximum context length is ", impl_->context_length,
                         " tokens; the request has ", n, " prompt tokens and asks for ",
                         req.params.max_tokens, " new tokens (reduce the prompt or max_tokens)");
  }
  return Status::ok();
}

Result<RequestId> Engine::submit(GenerateRequest req, EventSink sink) {
  DSS_RETURN_IF_ERROR(validate(req));
  const RequestId id = impl_->next_id.fetch_add(1);
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    if (impl_->stopping) return Status::error("engine is shutting down");
    impl_->inbox.push_back(Impl::Pending{id, std::move(req), std::move(sink), now_seconds()});
  }
  impl_->cv.notify_one();
  return id;
}

void Engine::cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->cancels.push_back(id);
  }
  impl_->cv.notify_one();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->stats;
}

void Engine::check_integrity() {
  std::future<void> done;
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    if (impl_->stopping || !impl_->thread.joinable()) return;
    impl_->integrity_checks.emplace_back();
    done = impl_->integrity_checks.back().get_future();
  }
  impl_->cv.notify_one();
  done.wait();
}

void Engine::request_stop() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_one();
}

void Engine::join() {
  if (impl_->thread.joinable()) impl_->thread.join();
}

void Engine::shutdown() {
  request_stop();
  join();
}

void Engine::set_round_hook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  DSS_CHECK(!impl_->has_round_hook.load(), "set_round_hook twice");
  impl_->round_hook = std::move(hook);
  impl_->has_round_hook.store(true, std::memory_order_release);
  impl_->cv.notify_all();  // an idle engine thread starts calling it
}

bool Engine::lockstep() const { return impl_->dp_group != nullptr; }

bool Engine::calls_collectives() const {
  return impl_->dp_group != nullptr || impl_->tp_group != nullptr;
}

void Engine::set_on_stall(std::function<void(const std::string&)> on_stall) {
  if (impl_->watchdog) impl_->watchdog->set_on_stall(std::move(on_stall));
}

void Engine::expect_shutdown() {
  if (impl_->watchdog) impl_->watchdog->expect_shutdown();
}

void Engine::follow() {
  Impl& m = *impl_;
  DSS_CHECK(m.tp_group != nullptr && m.tp_group->rank() != 0, "Engine::follow on rank 0");
  while (std::optional<ForwardBatch> b = m.steps->receive()) m.tp_forward(*b);
}

void Engine::Impl::loop() {
  bool stopped = false;  // DP attention: aborted all, stepping on until every rank has stopped
  for (;;) {
    std::deque<Pending> in;
    std::vector<RequestId> cancel_ids;
    std::vector<std::promise<void>> checks;
    bool stop = false;
    // Tensor parallel with a hook: the front's or a replica's mailbox, between steps (DP
    // attention calls it at the start of each lockstep round instead).
    const bool hook = dp_group == nullptr && has_round_hook.load(std::memory_order_acquire);
    if (hook) round_hook();
    {
      std::unique_lock<std::mutex> lk(mu);
      auto ready = [&] {
        return (stopping && !stopped) || !inbox.empty() || !cancels.empty() ||
               !integrity_checks.empty() || !sched->idle() ||
               (!hook && has_round_hook.load(std::memory_order_relaxed));  // a hook came: poll
      };
      if (dp_group == nullptr && !hook) {
        cv.wait(lk, ready);
      } else if (hook || !last_round_busy) {  // idle: after work arrives or a pause
        cv.wait_for(lk, kLockstepIdlePause, ready);
      }
      in.swap(inbox);
      cancel_ids.swap(cancels);
      checks.swap(integrity_checks);
      stop = stopping;
    }
    if (!in.empty() || !cancel_ids.empty()) {
      drain(in, cancel_ids);
      publish_stats(0.0);
    }
    if (!checks.empty()) {
      sched->check_integrity();
      for (auto& p : checks) p.set_value();
    }
    if (stop && !stopped) {
      abort_all();
      stopped = true;
      if (dp_group == nullptr) {
        if (steps) steps->send_stop();  // the other ranks' follow() returns
        return;
      }
    }
    if (dp_group != nullptr) {
      if (!lockstep_round(stopped)) return;
      continue;
    }
    expire_deadlines();
    if (!sched->idle()) step();
  }
}

bool Engine::Impl::lockstep_round(bool stopped) {
  if (has_round_hook.load(std::memory_order_acquire)) round_hook();
  std::array<int32_t, 2> v = {sched->idle() ? 0 : 1, stopped ? 1 : 0};
  watchdog->step_begin();  // a rank gone or hung stalls the others here or in the forward
  dp_group->allreduce_sum(std::span<int32_t>(v));
  last_round_busy = v[0] > 0;
  if (last_round_busy) {
    expire_deadlines();
    if (sched->idle()) {
      dp_forward(nullptr);
    } else {
      step();
    }
  }
  watchdog->step_end();
  return v[1] < dp_group->size();
}

void Engine::Impl::dp_forward(const ForwardBatch* b) {
  const int64_t t0 = steady_ns();
  if (b != nullptr) {
    model->forward(*b, *kv, *ws, logits.data());
  } else {
    model->idle_forward(*ws);
  }
  count_forward(t0);
  std::lock_guard<std::mutex> lk(mu);  // no collective needed: every forward
  stats.ranks = {own};                 // the front lists every rank's (engine/dp_front.h)
}

void Engine::Impl::count_forward(int64_t t0_ns) {
  own.forwards += 1;
  own.forward_seconds += static_cast<double>(steady_ns() - t0_ns) * 1e-9;
  own.collective_seconds = static_cast<double>(ws->collective_ns) * 1e-9;
  own.collective_bytes = ws->collective_bytes;
}

void Engine::Impl::drain(std::deque<Pending>& in, std::vector<RequestId>& cancel_ids) {
  for (Pending& p : in) {
    const int32_t n_prompt = static_cast<int32_t>(p.req.prompt.size());
    Live l;
    l.params = p.req.params;
    l.sampler = std::make_unique<SamplerState>(p.req.params, p.req.prompt, opts.seed, p.id);
    if (p.req.grammar) {
      std::vector<GrammarGate> gates = {
          {p.req.reasoning_end_token, std::move(p.req.reasoning_end_text), false},
          {p.req.grammar_trigger_token, std::move(p.req.grammar_trigger_text), true}};
      l.grammar = std::make_unique<RequestGrammar>(std::move(p.req.grammar), std::move(gates));
    }
    l.sink = std::move(p.sink);
    l.n_prompt = n_prompt;
    l.t_arrival = p.t_arrival;
    Status s = sched->add(SchedRequest{p.id, std::move(p.req.prompt), p.req.params.max_tokens});
    if (!s) {
      TokenEvent e;
      e.id = p.id;
      e.error = s.message();
      e.error_kind = RequestError::kRejected;
      e.n_prompt = n_prompt;
      e.t_arrival = p.t_arrival;
      e.t_event = now_seconds();
      l.sink(std::move(e));
      continue;
    }
    live.emplace(p.id, std::move(l));
  }
  for (RequestId id : cancel_ids) {
    auto st = sched->stats(id);
    if (sched->abort(id) && st) emit_final(id, FinishReason::kAbort, *st);
  }
}

// Ends requests past --request-timeout or --max-queue-time (between steps): their pages are
// released and each gets a final event with the error.
void Engine::Impl::expire_deadlines() {
  if (opts.request_timeout_s <= 0.0 && opts.max_queue_time_s <= 0.0) return;
  const double now = now_seconds();
  std::vector<std::pair<RequestId, RequestError>> expired;
  for (const auto& [id, l] : live) {
    const double age = now - l.t_arrival;
    if (opts.max_queue_time_s > 0.0 && l.t_scheduled == 0.0 && age > opts.max_queue_time_s) {
      expired.emplace_back(id, RequestError::kQueueTimeout);  // the more specific of the two
    } else if (opts.request_timeout_s > 0.0 && age > opts.request_timeout_s) {
      expired.emplace_back(id, RequestError::kTimeout);
    }
  }
  if (expired.empty()) return;
  std::sort(expired.begin(), expired.end());
  for (const auto& [id, kind] : expired) {
    const std::optional<SeqStats> st = sched->stats(id);
    sched->abort(id);
    const double limit =
        kind == RequestError::kTimeout ? opts.request_timeout_s : opts.max_queue_time_s;
    emit_final(id, FinishReason::kError, st.value_or(SeqStats{}), kind,
               deadline_message(kind, limit));
  }
  publish_stats(0.0);
}

void Engine::Impl::emit_final(RequestId id, FinishReason reason, const SeqStats& st,
                              RequestError error_kind, std::string error) {
  auto it = live.find(id);
  if (it == live.end()) return;
  TokenEvent e;
  e.id = id;
  e.finish = reason;
  e.error = std::move(error);
  e.error_kind = error_kind;
  e.n_prompt = it->second.n_prompt;
  e.n_cached_prompt = st.n_cached_prompt;
  e.n_generated = st.n_generated;
  e.t_arrival = it->second.t_arrival;
  e.t_scheduled = it->second.t_scheduled;
  e.t_event = now_seconds();
  EventSink sink = std::move(it->second.sink);
  live.erase(it);
  {
    std::lock_guard<std::mutex> lk(mu);
    stats.requests_finished++;
  }
  sink(std::move(e));
}

// The stages of one engine step in the order they run: plan, batch, forward (and the other ranks'
// copy of it), masks, sampling, commit, events, batch cap.
void Engine::Impl::step() {
  const double t0 = now_seconds();
  StepPlan plan = sched->plan();
  if (plan.empty()) {
    // Only possible when the head of the queue cannot get pages although nothing runs: every page
    // is then in the prefix cache and unlocked, so evict it all and retry next loop.
    radix->evict(pool->n_pages());
    publish_stats(0.0);
    if (dp_group != nullptr) dp_forward(nullptr);  // the other ranks' exchanges need this one
    return;
  }
  for (const ScheduledSeq& q : plan.seqs) {
    auto it = live.find(q.id);
    if (it != live.end() && it->second.t_scheduled == 0.0) it->second.t_scheduled = t0;
  }
  const ForwardBatch& batch = builder.build(plan);
  if (steps) {
    steps->send(batch);  // the other ranks of the group run the same forward
    tp_forward(batch);
  } else if (dp_group != nullptr) {
    dp_forward(&batch);
  } else {
    model->forward(batch, *kv, *ws, logits.data());
  }
  fill_masks(plan);
  SampledRows rows = sample_rows(plan);
  StepOutcome out;
  sched->commit(plan, rows.results, out);
  const double t_now = now_seconds();
  emit_step_events(out, rows, t_now);
  propose_drafts(plan);
  if (opts.debug_integrity) sched->check_integrity();
  const double t_end = now_seconds();
  if (batch_cap) {
    for (double ta : rows.first_token_arrivals) batch_cap->on_first_token((t_now - ta) * 1e3);
    batch_cap->on_step((t_end - t0) * 1e3, rows.n_decoding, sched->n_running(), sched->n_waiting());
    sched->set_running_cap(batch_cap->cap());
  }
  publish_stats(t_end - t0);
}

// The tokens of every sequence that asked for logits this step: masks applied, sampled, the
// grammar advanced, the finish decided (StepResult for the scheduler, TokenEvents for the sink).
// A sequence verifying a draft samples its rows in order while each sample equals the draft's
// next token (docs/speculative.md: with one deterministic draft per position this is Leviathan
// et al.'s rejection sampling, so the output distribution and, per seed, the tokens are those
// of decoding one token per step).
Engine::Impl::SampledRows Engine::Impl::sample_rows(const StepPlan& plan) {
  SampledRows out;
  int32_t row = 0;
  for (const ScheduledSeq& q : plan.seqs) {
    if (!q.needs_logits) continue;
    Live& l = live.at(q.id);
    if (l.sampler->n_generated() > 0) {
      ++out.n_decoding;
    } else {
      out.first_token_arrivals.push_back(l.t_arrival);
    }
    out.results.push_back(sample_seq(q, row, l, out));
    row += q.n_logit_rows();
  }
  return out;
}

// Samples sequence q's rows from logit row `row` on (one, or 1 + n_draft when verifying).
StepResult Engine::Impl::sample_seq(const ScheduledSeq& q, int32_t row, Live& l, SampledRows& out) {
  const int32_t V = model->config().n_vocab;
  const auto n_words = static_cast<size_t>(sampler->n_mask_words());
  for (int32_t j = 0; j <= q.n_draft; ++j, ++row) {
    const std::span<const float> row_logits(logits.data() + static_cast<size_t>(row) * V,
                                            static_cast<size_t>(V));
    const RowMask masked = row_masks[static_cast<size_t>(row)];
    const std::span<const uint64_t> allowed =
        masked == RowMask::kMasked
            ? std::span<const uint64_t>(masks).subspan(static_cast<size_t>(row) * n_words, n_words)
            : std::span<const uint64_t>();
    if (!all_finite(row_logits)) {  // keep what was accepted before this row, if anything
      if (j == 0) return StepResult{0, FinishReason::kError};
      return StepResult{q.draft[j - 1], FinishReason::kNone, j - 1};
    }
    if (masked == RowMask::kDeadEnd) {
      out.grammar_errors.emplace_back(q.id, "the output grammar allows no next token (dead end)");
      return StepResult{0, FinishReason::kError};
    }
    const SampleResult r = sampler->sample(row_logits, l.params, eos, *l.sampler, allowed);
    FinishReason fin = finish_after_token(l.params, eos, r.token, l.sampler->n_generated());
    if (l.grammar) {
      if (Status s = l.grammar->accept(r.token); !s) {
        out.grammar_errors.emplace_back(
            q.id, str_cat("the output grammar refused a token: ", s.message()));
        return StepResult{0, FinishReason::kError};
      }
      // Complete (EOS accepted, even under ignore_eos, or nothing but EOS could follow).
      if (l.grammar->done()) fin = FinishReason::kStop;
    }
    if (fin == FinishReason::kNone && l.n_prompt + l.sampler->n_generated() >= context_length)
      fin = FinishReason::kLength;
    TokenEvent e;
    e.id = q.id;
    e.has_token = true;
    e.token = r.token;
    e.logprob = r.logprob;
    for (const auto& t : r.top) e.top_logprobs.push_back(TopLogprob{t.token, t.logprob});
    e.t_arrival = l.t_arrival;
    e.t_scheduled = l.t_scheduled;
    out.events.push_back(std::move(e));
    if (fin != FinishReason::kNone || j == q.n_draft || r.token != q.draft[j])
      return StepResult{r.token, fin, j};
  }
  DSS_CHECK(false, "unreachable");
  return {};
}

// The step's token events (a finishing request's last token carries its finish reason and
// usage), then the final events of the requests the step failed.
void Engine::Impl::emit_step_events(const StepOutcome& out, SampledRows& rows, double t_now) {
  // Token events first; a finishing request's last token carries its finish reason and usage.
  for (size_t i = 0; i < rows.events.size(); ++i) {
    TokenEvent& e = rows.events[i];
    const bool last_of_request = i + 1 == rows.events.size() || rows.events[i + 1].id != e.id;
    auto done = std::find_if(out.finished.begin(), out.finished.end(),
                             [&](const auto& d) { return d.id == e.id; });
    e.t_event = t_now;
    if (done == out.finished.end() || !last_of_request) {
      live.at(e.id).sink(std::move(e));
      continue;
    }
    Live l = std::move(live.at(e.id));
    live.erase(e.id);
    e.finish = done->reason;
    e.n_prompt = l.n_prompt;
    e.n_cached_prompt = done->stats.n_cached_prompt;
    e.n_generated = done->stats.n_generated;
    {
      std::lock_guard<std::mutex> lk(mu);
      stats.requests_finished++;
    }
    l.sink(std::move(e));
  }
  for (const StepOutcome::Done& d : out.finished) {
    if (d.reason != FinishReason::kError) continue;
    auto g = std::find_if(rows.grammar_errors.begin(), rows.grammar_errors.end(),
                          [&](const auto& e) { return e.first == d.id; });
    if (g != rows.grammar_errors.end()) {
      log_warn("request ", d.id, ": ", g->second, "; the request fails, the batch goes on");
      emit_final(d.id, FinishReason::kError, d.stats, RequestError::kGrammarDeadEnd,
                 std::move(g->second));
      continue;
    }
    log_warn("request ", d.id, ": non-finite logits; the request fails, the batch goes on");
    emit_final(d.id, FinishReason::kError, d.stats, RequestError::kNonFiniteLogits,
               "the model produced non-finite logits (NaN or Inf) for this request");
  }
}

// Drafts for the next step of every sequence that sampled this step and goes on decoding
// (constrained requests excepted: their masks depend on the grammar state after each token).
void Engine::Impl::propose_drafts(const StepPlan& plan) {
  const SpeculativeOptions& so = opts.speculative;
  if (so.algorithm == SpecAlgorithm::kNone) return;
  if (mtp) {
    mtp->run(plan, builder.batch(), *sched, [this](RequestId id) {
      auto it = live.find(id);
      return it != live.end() && !it->second.grammar;
    });
    return;
  }
  for (const ScheduledSeq& q : plan.seqs) {
    if (!q.needs_logits) continue;
    auto it = live.find(q.id);
    if (it == live.end() || it->second.grammar) continue;
    const std::optional<SeqView> v = sched->view(q.id);
    if (!v || v->n_computed + 1 != static_cast<int32_t>(v->tokens.size())) continue;
    const int32_t n = ngram_draft(v->tokens, so.ngram_min, so.ngram_max, draft);
    if (n > 0)
      sched->set_draft(q.id, std::span<const TokenId>(draft).first(static_cast<size_t>(n)));
  }
}

// The mask of every constrained logit row of the step, on the engine thread, before any row is
// sampled (the rows' matchers are independent). A cached grammar state costs a copy of the mask;
// a new one a walk of the vocabulary trie (docs/grammar.md).
void Engine::Impl::fill_masks(const StepPlan& plan) {
  const auto n_words = static_cast<size_t>(sampler->n_mask_words());
  const double t0 = now_seconds();
  int32_t n_masks = 0;
  row_masks.clear();
  for (const ScheduledSeq& q : plan.seqs) {
    if (!q.needs_logits) continue;
    Live& l = live.at(q.id);
    RowMask m = RowMask::kNone;
    if (l.grammar) {  // constrained requests get no draft: one row
      DSS_CHECK(q.n_draft == 0, "a draft for a constrained request");
      const auto words = std::span(masks).subspan(row_masks.size() * n_words, n_words);
      m = l.grammar->fill_mask(words) ? RowMask::kMasked : RowMask::kDeadEnd;
      ++n_masks;
    }
    row_masks.insert(row_masks.end(), static_cast<size_t>(q.n_logit_rows()), m);
  }
  if (n_masks == 0) return;
  const double dt = now_seconds() - t0;
  std::lock_guard<std::mutex> lk(mu);
  stats.grammar_masks += n_masks;
  stats.grammar_mask_seconds += dt;
}

void Engine::Impl::tp_forward(const ForwardBatch& b) {
  watchdog->step_begin();
  const int64_t t0 = steady_ns();
  model->forward(b, *kv, *ws, logits.data());
  count_forward(t0);
  if (own.forwards % kRankStatsEvery == 0) {  // the same forward on every rank
    const std::array<double, 4> mine = {static_cast<double>(own.forwards), own.forward_seconds,
                                        own.collective_seconds,
                                        static_cast<double>(own.collective_bytes)};
    std::vector<double>& all = rank_totals;
    tp_group->allgather(std::span<const double>(mine), std::span<double>(all));
    if (tp_group->rank() == 0) {
      std::vector<RankStats> ranks(static_cast<size_t>(tp_group->size()));
      for (size_t r = 0; r < ranks.size(); ++r) {
        const double* v = all.data() + r * mine.size();
        ranks[r] = {static_cast<int64_t>(v[0]), v[1], v[2], static_cast<int64_t>(v[3])};
      }
      std::lock_guard<std::mutex> lk(mu);
      stats.ranks = std::move(ranks);
    }
  }
  watchdog->step_end();
}

void Engine::Impl::publish_stats(double step_s) {
  const SchedulerCounters& c = sched->counters();
  const RadixSizeInfo ri = radix->size_info();
  std::lock_guard<std::mutex> lk(mu);
  stats.n_running = sched->n_running();
  stats.n_waiting = sched->n_waiting();
  stats.kv_pages_used = pool->n_used();
  stats.kv_pages_cached = ri.n_cached_pages;
  stats.prefix_hit_tokens = radix->n_hit_tokens();
  stats.prefix_query_tokens = radix->n_hit_tokens() + radix->n_miss_tokens();
  stats.prompt_tokens_computed = c.prefill_tokens;
  stats.generation_tokens = c.decode_tokens;
  stats.preemptions = c.preemptions;
  stats.spec = c.spec;
  if (mtp) stats.spec_draft_seconds = mtp->seconds();
  stats.batch_cap = sched->running_cap();
  if (batch_cap) {
    stats.batch_cap_raises = batch_cap->n_raises();
    stats.batch_cap_lowers = batch_cap->n_lowers();
    stats.batch_cap_p99_tpot_ms = batch_cap->p99_tpot_ms();
  }
  if (step_s > 0.0) {
    stats.steps++;
    stats.busy_seconds += step_s;
    stats.last_step_ms = step_s * 1e3;
  }
}

void Engine::Impl::abort_all() {
  std::vector<RequestId> ids;
  for (const auto& [id, l] : live) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (RequestId id : ids) {
    auto st = sched->stats(id);
    sched->abort(id);
    emit_final(id, FinishReason::kAbort, st.value_or(SeqStats{}));
  }
  publish_stats(0.0);
}

}  // namespace dss
