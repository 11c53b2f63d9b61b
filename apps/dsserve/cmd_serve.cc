#include <cstdio>

#include "apps/dsserve/commands.h"

namespace dss::app {

void register_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Serve the OpenAI-compatible HTTP API (not implemented yet)");
  auto* model = new std::string();
  cmd->add_option("--model", *model, "Checkpoint directory");
  cmd->callback([] {
    std::fprintf(stderr,
                 "dsserve serve: not yet implemented (the HTTP server is issue #5). "
                 "Try `dsserve logits --model DIR --ids 0,15,27` meanwhile.\n");
    exit_code = 2;
  });
}

}  // namespace dss::app
