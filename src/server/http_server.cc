#include "server/http_server.h"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "base/log.h"

namespace dss {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

std::chrono::milliseconds ms_of(double s) {
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0));
}

std::string error_body(int status, const char* message) {
  return std::string("{\"error\":{\"message\":\"") + message +
         "\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":" + std::to_string(status) +
         "}}";
}

// One TCP connection: reads requests one after the other, answers through SessionExchange.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, const ServerOptions& opts, const HttpServerHooks& hooks,
          std::atomic<int64_t>& n_busy)
      : stream_(std::move(socket)), opts_(opts), hooks_(hooks), n_busy_(n_busy) {}
  ~Session() { set_busy(false); }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }

  // --- called on the strand (through SessionExchange) ---
  void respond(int status, std::string content_type, std::string body) {
    if (closed_) return;
    auto res =
        std::make_shared<http::response<http::string_body>>(static_cast<http::status>(status), 11);
    res->set(http::field::server, "dsserve");
    res->set(http::field::content_type, content_type);
    res->keep_alive(keep_alive_);
    res->body() = std::move(body);
    res->prepare_payload();
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, size_t) {
                        if (ec) return self->fail();
                        self->set_busy(false);
                        if (!self->keep_alive_) return self->lingering_close();
                        self->read_header();
                      });
  }

  void begin_stream(int status, std::string content_type) {
    if (closed_) return;
    stream_res_.emplace(static_cast<http::status>(status), 11);
    stream_res_->set(http::field::server, "dsserve");
    stream_res_->set(http::field::content_type, content_type);
    stream_res_->set(http::field::cache_control, "no-cache");
    stream_res_->keep_alive(false);
    stream_res_->chunked(true);
    serializer_.emplace(*stream_res_);
    stream_.expires_never();
    writing_ = true;
    http::async_write_header(stream_, *serializer_,
                             [self = shared_from_this()](beast::error_code ec, size_t) {
                               self->writing_ = false;
                               if (ec) return self->fail();
                               self->header_sent_ = true;
                               self->watch_for_close();
                               self->flush();
                             });
  }

  void write(std::string data) {
    if (closed_) return;
    pending_ += data;
    flush();
  }

  void end_stream() {
    if (closed_) return;
    end_requested_ = true;
    flush();
  }

  void set_on_close(std::function<void()> cb) {
    if (closed_) {
      if (cb) cb();
      return;
    }
    on_close_ = std::move(cb);
  }

  net::any_io_executor executor() { return stream_.get_executor(); }

 private:
  void read_header() {
    parser_.emplace();
    parser_->body_limit(static_cast<uint64_t>(opts_.max_request_bytes));
    parser_->header_limit(64 * 1024);
    stream_.expires_after(ms_of(opts_.header_timeout_s));
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec == http::error::header_limit) {
      keep_alive_ = false;
      return respond(431, "application/json", error_body(431, "request headers too large"));
    }
    // Beast checks Content-Length against body_limit while parsing the header.
    boost::optional<uint64_t> length;
    if (!ec) length = parser_->content_length();
    if (ec == http::error::body_limit ||
        (length && *length > static_cast<uint64_t>(opts_.max_request_bytes))) {
      keep_alive_ = false;
      return respond(413, "application/json",
                     error_body(413, "request body larger than --max-request-bytes"));
    }
    if (ec) return close();  // end of stream, idle/slow-header timeout, garbage
    auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    stream_.expires_after(ms_of(opts_.body_timeout_s));
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      net::async_write(stream_, net::buffer(kContinue),
                       [self = shared_from_this()](beast::error_code ec2, size_t) {
                         if (ec2) return self->close();
                         self->read_body();
                       });
      return;
    }
    read_body();
  }

  void read_body() {
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec);

  void flush() {
    if (writing_ || closed_ || !header_sent_) return;
    if (!pending_.empty()) {
      out_ = std::move(pending_);
      pending_.clear();
      writing_ = true;
      net::async_write(stream_, http::make_chunk(net::buffer(out_)),
                       [self = shared_from_this()](beast::error_code ec, size_t) {
                         self->writing_ = false;
                         if (ec) return self->fail();
                         self->flush();
                       });
      return;
    }
    if (end_requested_) {
      writing_ = true;
      on_close_ = nullptr;  // complete: a later disconnect is not an abandonment
      net::async_write(stream_, http::make_chunk_last(),
                       [self = shared_from_this()](beast::error_code, size_t) { self->close(); });
    }
  }

  // While a stream is open the client sends nothing; a read that ends means it went away.
  void watch_for_close() {
    stream_.async_read_some(net::buffer(probe_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (self->closed_) return;
                              if (ec) return self->fail();
                              self->watch_for_close();
                            });
  }

  void fail() {
    if (closed_) return;
    auto cb = std::move(on_close_);
    on_close_ = nullptr;
    close();
    if (cb) cb();
  }

  // Closing with unread request bytes would reset the connection and could destroy the response
  // in the client's receive buffer (e.g. a 413 before the body): send FIN, discard what still
  // arrives for up to 1 s, then close.
  void lingering_close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(std::chrono::seconds(1));
    discard_until_eof();
  }

  void discard_until_eof() {
    stream_.async_read_some(net::buffer(probe_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->close();
                              self->discard_until_eof();
                            });
  }

  // Busy: between a complete request and the end of its response (shutdown waits for these).
  void set_busy(bool busy) {
    if (busy == busy_) return;
    busy_ = busy;
    n_busy_ += busy ? 1 : -1;
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    set_busy(false);
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  beast::tcp_stream stream_;
  const ServerOptions& opts_;
  const HttpServerHooks& hooks_;
  std::atomic<int64_t>& n_busy_;
  bool busy_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keep_alive_ = true;
  bool closed_ = false;
  // streaming state
  std::optional<http::response<http::empty_body>> stream_res_;
  std::optional<http::response_serializer<http::empty_body>> serializer_;
  bool header_sent_ = false, writing_ = false, end_requested_ = false;
  std::string pending_, out_;
  std::function<void()> on_close_;
  char probe_[512];
};

class SessionExchange : public HttpExchange {
 public:
  explicit SessionExchange(std::shared_ptr<Session> s) : s_(std::move(s)) {}
  void respond(int status, std::string content_type, std::string body) override {
    net::post(s_->executor(),
              [s = s_, status, ct = std::move(content_type), b = std::move(body)]() mutable {
                s->respond(status, std::move(ct), std::move(b));
              });
  }
  void begin_stream(int status, std::string content_type) override {
    net::post(s_->executor(), [s = s_, status, ct = std::move(content_type)]() mutable {
      s->begin_stream(status, std::move(ct));
    });
  }
  void write(std::string data) override {
    net::post(s_->executor(), [s = s_, d = std::move(data)]() mutable { s->write(std::move(d)); });
  }
  void end_stream() override {
    net::post(s_->executor(), [s = s_] { s->end_stream(); });
  }
  void on_close(std::function<void()> cb) override {
    net::post(s_->executor(),
              [s = s_, cb = std::move(cb)]() mutable { s->set_on_close(std::move(cb)); });
  }
  void post(std::function<void()> fn) override { net::post(s_->executor(), std::move(fn)); }

 private:
  std::shared_ptr<Session> s_;
};

void Session::on_body(beast::error_code ec) {
  if (ec == http::error::body_limit) {
    keep_alive_ = false;
    return respond(413, "application/json",
                   error_body(413, "request body larger than --max-request-bytes"));
  }
  if (ec) return close();  // slow body (timeout), client gone, malformed
  stream_.expires_never();
  set_busy(true);
  auto msg = parser_->release();
  HttpRequest req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  req.path = req.target.substr(0, req.target.find('?'));
  for (const auto& f : msg) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    req.headers[name] = std::string(f.value());
  }
  req.body = std::move(msg.body());
  hooks_.handle(std::move(req), std::make_shared<SessionExchange>(shared_from_this()));
}

}  // namespace

struct HttpServer::Impl {
  ServerOptions opts;
  HttpServerHooks hooks;
  std::atomic<int64_t> n_busy{0};  // connections with a request being answered (before ioc:
                                   // sessions destroyed with the ioc still count down)
  net::io_context ioc;
  // Listener, shutdown timer and signal reactions share one strand (acceptor.close() must not
  // race with a pending accept's completion).
  net::strand<net::io_context::executor_type> control{net::make_strand(ioc)};
  tcp::acceptor acceptor{control};
  net::signal_set signals{control, SIGINT, SIGTERM};
  net::steady_timer drain_timer{control};
  std::atomic<bool> shutting_down{false};
  std::chrono::steady_clock::time_point shutdown_start;
  bool cancelled = false;

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
      if (ec) {
        if (!acceptor.is_open()) return;
        log_warn("accept: ", ec.message());
      } else {
        beast::error_code ignored;
        s.set_option(tcp::no_delay(true), ignored);
        std::make_shared<Session>(std::move(s), opts, hooks, n_busy)->start();
      }
      accept();
    });
  }

  void begin_shutdown() {
    if (shutting_down.exchange(true)) return;
    shutdown_start = std::chrono::steady_clock::now();
    log_info("shutting down: no new connections; waiting up to ", opts.shutdown_timeout_s,
             " s for ", hooks.in_flight(), " request(s)");
    beast::error_code ec;
    acceptor.close(ec);
    signals.cancel();
    poll_drain();
  }

  void poll_drain() {
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - shutdown_start).count();
    if ((hooks.in_flight() == 0 && n_busy.load() == 0) || waited > opts.shutdown_timeout_s + 5.0) {
      ioc.stop();
      return;
    }
    if (waited > opts.shutdown_timeout_s && !cancelled) {
      cancelled = true;
      log_info("shutdown timeout: cancelling ", hooks.in_flight(), " request(s)");
      hooks.cancel_all();
    }
    drain_timer.expires_after(std::chrono::milliseconds(20));
    drain_timer.async_wait([this](beast::error_code) { poll_drain(); });
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() = default;

Result<std::unique_ptr<HttpServer>> HttpServer::create(const ServerOptions& opts,
                                                       HttpServerHooks hooks) {
  auto impl = std::make_unique<Impl>();
  impl->opts = opts;
  impl->hooks = std::move(hooks);
  beast::error_code ec;
  const auto addr = net::ip::make_address(opts.host, ec);
  if (ec) return Status::error("--host: '", opts.host, "' is not an IP address");
  const tcp::endpoint ep(addr, opts.port);
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Status::error("cannot listen on ", opts.host, ":", opts.port, ": ", ec.message());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

uint16_t HttpServer::port() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

void HttpServer::run() {
  Impl& s = *impl_;
  s.accept();
  s.signals.async_wait([&s](beast::error_code ec, int) {
    if (!ec) net::post(s.control, [&s] { s.begin_shutdown(); });
  });
  std::vector<std::thread> threads;
  for (int i = 1; i < std::max(1, s.opts.n_io_threads); ++i)
    threads.emplace_back([&s] { s.ioc.run(); });
  s.ioc.run();
  for (auto& t : threads) t.join();
}

void HttpServer::request_shutdown() {
  net::post(impl_->control, [this] { impl_->begin_shutdown(); });
}

bool HttpServer::shutting_down() const { return impl_->shutting_down.load(); }

}  // namespace dss
