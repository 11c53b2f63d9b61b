// Grammar engine speed on the real DeepSeek vocabulary (129,280 mask bits), single thread.
// Per schema: compile time (parse + lower + automaton start; masks are built lazily), then
// seeded random walks (a model stand-in that picks any allowed token) timing every
// fill_next_token_bitmask: "cold" is the first walk on a freshly compiled grammar (its caches
// fill as it goes), "warm" the following walks. Also the one-off vocabulary trie build.
// Usage: grammar_bench [walks per schema (default 20)] [SCHEMA_DIR]: with a directory, every
// *.json in it too (tests/data/grammar/schemas: the structured-output corpus), and a summary over
// all schemas: compile p50 / p99 / max, masks of every walk (cold and warm) and warm ones alone.
// Tokenizer: $DSS_TOKENIZER_DIR or third_party/tokenizer/deepseek-v3.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/percentile.h"
#include "base/rng.h"
#include "grammar/grammar_compiler.h"
#include "grammar/matcher.h"
#include "text/tokenizer.h"

namespace dss::grammar {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// "model name (family F model M)" of the first CPU in /proc/cpuinfo: VMs often show only a
// generic name, and the family/model numbers tell the core generation (25: Zen 3/4, 26: Zen 5).
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string name = "unknown", family = "?", model = "?";
  for (std::string line; std::getline(in, line) && !line.empty();) {
    const size_t colon = line.find(':');
    const std::string value =
        colon == std::string::npos || colon + 2 > line.size() ? "" : line.substr(colon + 2);
    if (line.rfind("model name", 0) == 0) name = value;
    if (line.rfind("cpu family", 0) == 0) family = value;
    if (line.rfind("model\t", 0) == 0) model = value;
  }
  return name + " (family " + family + " model " + model + ")";
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

struct Schema {
  std::string name;
  std::string text;
};

std::vector<Schema> schemas(const char* dir) {
  std::string big_enum = R"({"type":"string","enum":[)";
  for (int i = 0; i < 1000; ++i) {
    if (i) big_enum += ',';
    big_enum += "\"value_";
    big_enum += std::to_string(i);
    big_enum += '"';
  }
  big_enum += "]}";
  std::vector<Schema> out = {
      {"simple_object",
       R"({"type":"object","properties":{"name":{"type":"string","maxLength":20},"age":{"type":"integer","minimum":0,"maximum":150},"email":{"type":"string","format":"email"}},"required":["name","age"]})"},
      {"nested_arrays",
       R"({"type":"object","properties":{"id":{"type":"integer"},"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-[0-9]{4}$"},"qty":{"type":"integer","minimum":1,"maximum":99},"tags":{"type":"array","items":{"type":"string","maxLength":12},"maxItems":5}},"required":["sku","qty"]},"maxItems":10},"note":{"type":"string"}},"required":["id","items"]})"},
      {"tool_call",
       R"({"type":"object","properties":{"name":{"type":"string","enum":["get_weather","search_web","send_email","create_event"]},"arguments":{"anyOf":[{"type":"object","properties":{"location":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"]}},"required":["location"]},{"type":"object","properties":{"query":{"type":"string"},"max_results":{"type":"integer","minimum":1,"maximum":50}},"required":["query"]},{"type":"object","properties":{"to":{"type":"string","format":"email"},"subject":{"type":"string","maxLength":80},"body":{"type":"string"}},"required":["to","subject","body"]},{"type":"object","properties":{"title":{"type":"string"},"start":{"type":"string","format":"date-time"},"attendees":{"type":"array","items":{"type":"string","format":"email"},"maxItems":8}},"required":["title","start"]}]}},"required":["name","arguments"]})"},
      {"large_enum_1000", big_enum},
      {"json_object", ""},
  };
  if (dir != nullptr) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f);
      std::stringstream text;
      text << in.rdbuf();
      out.push_back({f.stem().string(), text.str()});
    }
  }
  return out;
}

struct Stats {
  std::vector<double> us;
  void print(const char* label) const {
    double sum = 0, mx = 0;
    for (double x : us) sum += x, mx = std::max(mx, x);
    std::printf("    %-5s masks %6zu  mean %8.1f us  p50 %8.1f  p99 %8.1f  max %9.1f\n", label,
                us.size(), us.empty() ? 0 : sum / us.size(), percentile(us, 50), percentile(us, 99),
                mx);
  }
};

// One walk; appends each mask time (us) to `out`. Picks uniformly among allowed tokens, EOS with
// probability 1/2 when allowed, closing tokens (" } ]) preferred after 48 tokens.
void walk(const std::shared_ptr<CompiledGrammar>& g, uint64_t seed, std::vector<double>& out) {
  const TokenVocab& v = g->vocab();
  GrammarMatcher m(g);
  Rng rng(seed);
  std::vector<uint64_t> mask(v.n_words());
  std::vector<TokenId> ids, pool;
  for (int step = 0; step < 400; ++step) {
    const auto t0 = Clock::now();
    m.fill_next_token_bitmask(mask);
    out.push_back(us_since(t0));
    ids.clear();
    for (size_t w = 0; w < mask.size(); ++w) {
      for (uint64_t b = mask[w]; b; b &= b - 1)
        ids.push_back(static_cast<TokenId>(w * 64 + __builtin_ctzll(b)));
    }
    if (ids.empty()) return;
    if (mask_test(mask, v.eos_id()) && (rng.uniform() < 0.5f || ids.size() == 1)) return;
    pool.clear();
    if (step >= 48) {
      for (TokenId id : ids) {
        std::string_view b = v.bytes(id);
        if (!b.empty() && (b[0] == '"' || b[0] == '}' || b[0] == ']')) pool.push_back(id);
      }
    }
    if (pool.empty()) {
      for (TokenId id : ids) {
        if (id != v.eos_id()) pool.push_back(id);
      }
    }
    if (pool.empty() || !m.accept_token(pool[rng.next_u64() % pool.size()]).is_ok()) return;
  }
}

int run(int walks, const char* schema_dir) {
  const char* env = std::getenv("DSS_TOKENIZER_DIR");
  const std::string dir = env ? env : DSS_SOURCE_DIR "/third_party/tokenizer/deepseek-v3";
  Result<Tokenizer> tok = Tokenizer::load_dir(dir);
  if (!tok) {
    std::fprintf(stderr, "grammar_bench: %s (run scripts/setup)\n", tok.message().c_str());
    return 2;
  }
  std::printf("grammar_bench: CPU %s, 1 thread, %d walks per schema, load average %s\n",
              cpu_model().c_str(), walks, load_average().c_str());
  auto t0 = Clock::now();
  auto vocab = TokenVocab::from_tokenizer(*tok, 129280);
  std::printf("vocabulary: %d ids, %d trie nodes, built in %.1f ms\n", vocab->n_vocab(),
              vocab->n_nodes(), us_since(t0) / 1000);
  Stats all_warm, all_masks, compiles_ms;
  for (const Schema& s : schemas(schema_dir)) {
    GrammarCompiler compiler(vocab);
    t0 = Clock::now();
    auto g = s.text.empty() ? compiler.json_object() : compiler.json_schema(s.text);
    const double compile_us = us_since(t0);
    if (!g) {
      std::fprintf(stderr, "%s: %s\n", s.name.c_str(), g.message().c_str());
      return 1;
    }
    compiles_ms.us.push_back(compile_us / 1000);
    Stats cold, warm;
    walk(*g, 1, cold.us);
    for (int i = 1; i < walks; ++i) walk(*g, 1 + i, warm.us);
    all_warm.us.insert(all_warm.us.end(), warm.us.begin(), warm.us.end());
    all_masks.us.insert(all_masks.us.end(), cold.us.begin(), cold.us.end());
    all_masks.us.insert(all_masks.us.end(), warm.us.begin(), warm.us.end());
    const GrammarStats st = (*g)->stats();
    std::printf(
        "%s: compile %.2f ms (%d rules, %d elements); after the walks: %d states, %zu stack "
        "masks, %zu state masks, %.1f MB cached\n",
        s.name.c_str(), compile_us / 1000, st.n_rules, st.n_elems, st.n_states, st.n_stack_masks,
        st.n_state_masks, st.cache_bytes / 1e6);
    cold.print("cold");
    warm.print("warm");
  }
  std::printf("summary over %zu schemas:\n", compiles_ms.us.size());
  std::printf("    compile ms  p50 %.2f  p99 %.2f  max %.2f\n", percentile(compiles_ms.us, 50),
              percentile(compiles_ms.us, 99),
              *std::max_element(compiles_ms.us.begin(), compiles_ms.us.end()));
  all_masks.print("all");
  all_warm.print("warm");
  return 0;
}

}  // namespace
}  // namespace dss::grammar

int main(int argc, char** argv) {
  return dss::grammar::run(argc > 1 ? std::atoi(argv[1]) : 20, argc > 2 ? argv[2] : nullptr);
}
