// HttpServer: the HTTP/1.1 transport of `dsserve serve` (Boost.Beast over Asio), asynchronous on
// a few io threads; each connection is a strand, so one connection's callbacks never overlap.
//
// Per request: headers within header_timeout (also the keep-alive idle limit), then the body
// within body_timeout; a body over max_request_bytes is answered 413 (from Content-Length before
// reading it, and while reading for chunked bodies) and the connection closed. A request that
// breaks HTTP syntax (start line, header fields, Content-Length, chunked framing) is answered 400
// with `Connection: close`; a timeout, EOF or a message cut short by a client that went away just
// closes. `Expect: 100-continue` is honoured (HTTP/1.1).
//
// From a complete request until its answer, a client that goes away (EOF, reset) runs
// HttpExchange::on_close (the routes cancel the engine requests); the watch peeks, so a pipelined
// next request is never consumed. Streams are sent with chunked encoding and `Connection: close`,
// watched by a read until they end. HTTP/1.0 requests are answered in HTTP/1.0: Content-Length
// and keep-alive only if asked for; a stream is raw bytes ended by closing the connection.
//
// Descriptors: create() raises the soft open-file limit to the hard one. An accept error pauses
// accepting (never a busy retry) and is logged at most once a second; out of descriptors
// (EMFILE/ENFILE), the oldest idle connections (waiting for a request header, nothing in flight)
// are closed to make room for new clients.
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
  // Shutdown began (optional): a signal or request_shutdown. by_launcher: a SIGINT / SIGTERM
  // sent by this process's parent (mpirun or its daemon ending the job).
  std::function<void(bool by_launcher)> on_shutdown;
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
