// HttpServer: the HTTP/1.1 transport of `dsserve serve` (Boost.Beast over Asio), asynchronous on
// a few io threads; each connection is a strand, so one connection's callbacks never overlap.
//
// Per request: headers within header_timeout (also the keep-alive idle limit), then the body
// within body_timeout; a body over max_request_bytes is answered 413 (from Content-Length before
// reading it, and while reading for chunked bodies) and the connection closed. `Expect:
// 100-continue` is honoured. Streams are sent with chunked encoding and `Connection: close`;
// while one is open a read on the socket watches for the client going away
// (HttpExchange::on_close).
//
// Shutdown (SIGINT/SIGTERM, or request_shutdown()): the listener closes at once; run() returns
// when in_flight() reaches 0, or, after shutdown_timeout, cancel_all() is called and run()
// returns when in_flight() reaches 0 or 5 s later. Connections still open are then dropped.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "base/status.h"
#include "server/http_exchange.h"
#include "server/server_options.h"

namespace dss {

struct HttpServerHooks {
  std::function<void(HttpRequest&&, std::shared_ptr<HttpExchange>)> handle;
  std::function<int64_t()> in_flight;  // requests still being answered
  std::function<void()> cancel_all;    // cancel everything in flight (shutdown timeout hit)
};

class HttpServer {
 public:
  // Binds and listens (errors: address in use, bad host).
  static Result<std::unique_ptr<HttpServer>> create(const ServerOptions& opts,
                                                    HttpServerHooks hooks);
  ~HttpServer();

  uint16_t port() const;
  // Serves on opts.n_io_threads threads (this one included) until shutdown completes.
  void run();
  // Starts the graceful shutdown, as a signal would (any thread).
  void request_shutdown();
  bool shutting_down() const;

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dss
