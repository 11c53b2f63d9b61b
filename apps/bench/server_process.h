// ServerProcess: a `dsserve serve` child process for `dsserve tune`.
//
// start(): runs `EXE serve --host 127.0.0.1 --port 0 ARGS...` with stdout and stderr in
// `log_path`, reads the port from its start-up line ("... on http://127.0.0.1:PORT"), then waits
// until GET /health answers 200. stop(): SIGTERM, then SIGKILL after `kill_after_s`; the
// destructor stops a running child. POSIX only.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/status.h"

namespace dss::bench {

class ServerProcess {
 public:
  ServerProcess() = default;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess();

  Status start(const std::string& exe, const std::vector<std::string>& args,
               const std::string& log_path, double start_timeout_s);
  // Exit status of the child (0 = clean shutdown), or -1 when it had to be killed.
  int stop(double kill_after_s = 30);
  int port() const { return port_; }
  std::string base_url() const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

}  // namespace dss::bench
