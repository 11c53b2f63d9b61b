#include "apps/dsserve/commands.h"
namespace dss::app {
void register_text_commands(CLI::App&) {}
}  // namespace dss::app
