// Tokenizer throughput in MB/s (10^6 bytes of UTF-8 input per second, single thread).
// Corpus: every valid-UTF-8 "text" of tests/data/text/tokenizer_cases.jsonl joined by "\n" —
// the same bytes `scripts/gen_tokenizer_data --bench` feeds Hugging Face `tokenizers`, so the
// two numbers compare directly. Tokenizer: $DSS_TOKENIZER_DIR or third_party/tokenizer/deepseek-v3.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "io/json.h"
#include "text/tokenizer.h"

namespace dss {
namespace {

const Tokenizer& tokenizer() {
  static const Tokenizer* tok = [] {
    const char* env = std::getenv("DSS_TOKENIZER_DIR");
    std::string dir = env ? env : DSS_SOURCE_DIR "/third_party/tokenizer/deepseek-v3";
    Result<Tokenizer> t = Tokenizer::load_dir(dir);
    if (!t) {
      std::fprintf(stderr, "tokenizer_bench: %s (run scripts/setup)\n", t.message().c_str());
      std::exit(2);
    }
    return new Tokenizer(std::move(t).value());
  }();
  return *tok;
}

// All valid-UTF-8 strings of the test corpus, or (short_only) all but the "long" category
// (24 synthetic 2-10 kB strings: runs of one letter class or of whitespace, the BPE worst case).
std::vector<std::string> read_lines(bool short_only) {
  std::vector<std::string> out;
  std::ifstream in(DSS_SOURCE_DIR "/tests/data/text/tokenizer_cases.jsonl");
  for (std::string l; std::getline(in, l);) {
    Json j = Json::parse(l, nullptr, false);
    if (j.is_discarded() || !j.contains("text")) continue;
    if (short_only && j.value("cat", "") == "long") continue;
    out.push_back(j["text"].get<std::string>());
  }
  return out;
}

const std::vector<std::string>& lines() {
  static const std::vector<std::string> v = read_lines(false);
  return v;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "\n" : "") + v[i];
  return s;
}

const std::string& corpus() {
  static const std::string c = join(lines());
  return c;
}

void set_rate(benchmark::State& state, size_t bytes_per_iter) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes_per_iter));
  state.counters["MB/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * bytes_per_iter) / 1e6, benchmark::Counter::kIsRate);
}

void BM_EncodeCorpus(benchmark::State& state) {
  const Tokenizer& tok = tokenizer();
  std::vector<TokenId> ids;
  for (auto _ : state) {
    ids.clear();
    tok.encode_into(corpus(), {}, ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.counters["tokens"] = static_cast<double>(ids.size());
  set_rate(state, corpus().size());
}
BENCHMARK(BM_EncodeCorpus)->Unit(benchmark::kMillisecond);

void BM_EncodeCorpusWithoutLong(benchmark::State& state) {
  const Tokenizer& tok = tokenizer();
  static const std::string c = join(read_lines(true));
  std::vector<TokenId> ids;
  for (auto _ : state) {
    ids.clear();
    tok.encode_into(c, {}, ids);
    benchmark::DoNotOptimize(ids.data());
  }
  set_rate(state, c.size());
}
BENCHMARK(BM_EncodeCorpusWithoutLong)->Unit(benchmark::kMillisecond);

void BM_EncodePerLine(benchmark::State& state) {
  const Tokenizer& tok = tokenizer();
  std::vector<TokenId> ids;
  size_t bytes = 0;
  for (const std::string& l : lines()) bytes += l.size();
  for (auto _ : state) {
    for (const std::string& l : lines()) {
      ids.clear();
      tok.encode_into(l, {}, ids);
      benchmark::DoNotOptimize(ids.data());
    }
  }
  set_rate(state, bytes);
}
BENCHMARK(BM_EncodePerLine)->Unit(benchmark::kMillisecond);

void BM_Decode(benchmark::State& state) {
  const Tokenizer& tok = tokenizer();
  std::vector<TokenId> ids = tok.encode(corpus());
  for (auto _ : state) benchmark::DoNotOptimize(tok.decode(ids));
  set_rate(state, corpus().size());
}
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dss

BENCHMARK_MAIN();
