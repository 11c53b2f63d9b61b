// Subcommand registry of the dsserve binary. Each cmd_*.cc defines one `register_*` function
// that adds its subcommand (options + callback) to the app; main.cc calls them all.
// A callback reports failure by setting `exit_code` (input errors print a message, no crash).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>

#include <string>
#include "base/status.h"

namespace dss::app {

extern int exit_code;

// When `s` failed: prints "dsserve CMD: message" to stderr, sets exit_code 1 and returns true.
inline bool report_failure(const char* cmd, const Status& s) {
  if (s) return false;
  std::fprintf(stderr, "dsserve %s: %s\n", cmd, s.message().c_str());
  exit_code = 1;
  return true;
}
extern std::string command_line;  // argv joined by spaces (recorded by `tune`)

// A subcommand's option storage: CLI11 binds options by reference, so it must outlive the app.
// One object per type for the process (each register_* runs once), destroyed at exit, so
// LeakSanitizer finds nothing left (a `new` per subcommand was never freed).
template <class T>
T& command_options() {
  static T options;
  return options;
}

void register_model_commands(CLI::App& app);       // logits, inspect, init-model (cmd_model.cc)
void register_serve_command(CLI::App& app);        // serve (cmd_serve.cc)
void register_text_commands(CLI::App& app);        // tokenize, render-chat (cmd_text.cc)
void register_generate_command(CLI::App& app);     // generate (cmd_generate.cc)
void register_quant_commands(CLI::App& app);       // convert, eval-quant (cmd_quant.cc)
void register_bench_command(CLI::App& app);        // bench (cmd_bench.cc)
void register_tune_command(CLI::App& app);         // tune (cmd_tune.cc)
void register_bench_model_command(CLI::App& app);  // bench-model (cmd_bench_model.cc)

}  // namespace dss::app
