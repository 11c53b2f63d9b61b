// dsserve: one binary, subcommands (serve, logits, inspect, init-model, tokenize, ...).
#include <cstdio>
#include <string>

#include "apps/dsserve/commands.h"

namespace dss::app {
int exit_code = 0;
std::string command_line;
}  // namespace dss::app

int main(int argc, char** argv) {
  for (int i = 0; i < argc; ++i)
    dss::app::command_line += (i ? " " : "") + std::string(i ? argv[i] : "dsserve");
  CLI::App app{"dsserve: an inference server for DeepSeek-V3-family models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dsserve 0.1.0");
  dss::app::register_serve_command(app);
  dss::app::register_model_commands(app);
  dss::app::register_generate_command(app);
  dss::app::register_quant_commands(app);
  dss::app::register_bench_command(app);
  dss::app::register_tune_command(app);
  dss::app::register_bench_model_command(app);
  dss::app::register_text_commands(app);
  CLI11_PARSE(app, argc, argv);
  return dss::app::exit_code;
}
