#include "apps/bench/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "apps/bench/http_client.h"
#include "base/clock.h"

namespace dss::bench {

namespace {

// The port of the start-up line in the log, 0 while absent.
int port_from_log(const std::string& path) {
  std::ifstream f(path);
  const std::string marker = " on http://127.0.0.1:";
  for (std::string line; std::getline(f, line);) {
    const size_t at = line.find(marker);
    if (at != std::string::npos) return std::atoi(line.c_str() + at + marker.size());
  }
  return 0;
}

std::string log_tail(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

}  // namespace

ServerProcess::~ServerProcess() {
  if (pid_ > 0) stop();
}

std::string ServerProcess::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

Status ServerProcess::start(const std::string& exe, const std::vector<std::string>& args,
                            const std::string& log_path, double start_timeout_s) {
  log_path_ = log_path;
  std::vector<std::string> argv_s = {exe, "serve", "--host", "127.0.0.1", "--port", "0"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::error("cannot write ", log_path);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    return Status::error("fork failed");
  }
  if (pid == 0) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fd);
  pid_ = pid;
  const double deadline = now_seconds() + start_timeout_s;
  while (port_ == 0) {
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      return Status::error("the server exited at start-up; log ", log_path, ":\n",
                           log_tail(log_path));
    }
    if (now_seconds() > deadline) {
      stop(1);
      return Status::error("no start-up line from the server in ", start_timeout_s, " s; log ",
                           log_path);
    }
    port_ = port_from_log(log_path);
    if (port_ == 0) sleep_s(0.1);
  }
  ServerUrl url{"127.0.0.1", std::to_string(port_), ""};
  while (true) {
    auto r = http_call(url, "/health", "", 5);
    if (r && r->status == 200) return Status::ok();
    if (now_seconds() > deadline) {
      stop(1);
      return Status::error("GET /health did not answer 200 in ", start_timeout_s, " s");
    }
    sleep_s(0.1);
  }
}

int ServerProcess::stop(double kill_after_s) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  const double deadline = now_seconds() + kill_after_s;
  int st = 0;
  while (::waitpid(pid_, &st, WNOHANG) != pid_) {
    if (now_seconds() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &st, 0);
      pid_ = -1;
      return -1;
    }
    sleep_s(0.05);
  }
  pid_ = -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace dss::bench
