// Replay driver for the fuzz targets in builds without libFuzzer (GCC): runs
// LLVMFuzzerTestOneInput on each seed, then on N deterministic mutations of the seeds
// (byte flips, truncations, splices). Arguments: [--mutations=N] [--control-prefix] FILE...; a
// *.jsonl file contributes the "text" (or hex-decoded "hex") field of every line as one seed.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "io/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string from_hex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  }
  return out;
}

void run(const std::string& s) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

}  // namespace

int main(int argc, char** argv) {
  long n_mutations = 2000;
  bool control_prefix = false;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--mutations=", 0) == 0) {
      n_mutations = std::stol(arg.substr(12));
      continue;
    }
    if (arg == "--control-prefix") {
      control_prefix = true;
      continue;
    }
    std::ifstream in(arg, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "replay: cannot open %s\n", arg.c_str());
      return 2;
    }
    if (arg.size() > 6 && arg.substr(arg.size() - 6) == ".jsonl") {
      for (std::string line; std::getline(in, line);) {
        dss::Json j = dss::Json::parse(line, nullptr, false);
        if (j.is_discarded()) continue;
        std::string body = j.contains("text")  ? j["text"].get<std::string>()
                           : j.contains("hex") ? from_hex(j["hex"].get<std::string>())
                                               : std::string();
        if (!control_prefix) {
          seeds.push_back(body);
          continue;
        }
        // 3 leading control bytes (see fuzz_output_parser.cc): every format and option set.
        for (char c0 = 0; c0 < 16; ++c0) seeds.push_back(std::string{c0, 7, 3} + body);
      }
    } else {
      seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  for (const std::string& s : seeds) run(s);
  std::mt19937_64 rng(42);
  for (long k = 0; k < n_mutations && !seeds.empty(); ++k) {
    std::string s = seeds[rng() % seeds.size()];
    switch (rng() % 4) {
      case 0:
        if (!s.empty()) s[rng() % s.size()] = static_cast<char>(rng());
        break;
      case 1:
        s.resize(s.empty() ? 0 : rng() % s.size());
        break;
      case 2: {
        const std::string& o = seeds[rng() % seeds.size()];
        s = s.substr(0, s.empty() ? 0 : rng() % s.size()) +
            o.substr(o.empty() ? 0 : rng() % o.size());
        break;
      }
      default:
        s.insert(s.empty() ? 0 : rng() % s.size(), 1, static_cast<char>(rng()));
    }
    run(s);
  }
  std::printf("replayed %zu seeds and %ld mutations\n", seeds.size(), n_mutations);
  return 0;
}
