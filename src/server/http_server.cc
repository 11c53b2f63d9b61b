#include "server/http_server.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/log.h"
#include "server/http_request_parser.h"

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

// A request that breaks HTTP/1.x syntax (start line, header fields, message framing, chunked
// body): answered 400. Every other read error (timeout, EOF, a partial message from a client that
// went away, cancellation) just closes the connection.
bool is_malformed(beast::error_code ec) {
  if (ec.category() != http::make_error_code(http::error::bad_method).category()) return false;
  switch (static_cast<http::error>(ec.value())) {
    case http::error::bad_line_ending:
    case http::error::bad_method:
    case http::error::bad_target:
    case http::error::bad_version:
    case http::error::bad_field:
    case http::error::bad_value:
    case http::error::bad_content_length:
    case http::error::multiple_content_length:
    case http::error::bad_transfer_encoding:
    case http::error::bad_chunk:
    case http::error::bad_chunk_extension:
    case http::error::bad_obs_fold:
      return true;
    default:
      return false;
  }
}

class Session;

// The connections waiting for a request header with no request in flight, oldest first. Out of
// file descriptors, the listener closes the oldest of these to make room for new clients. Any
// thread; a Session links itself on its strand and unlinks itself at the latest in its destructor,
// so the list never holds a dangling pointer.
class IdleList {
 public:
  void link(Session& s);
  void unlink(Session& s);
  // Unlinks up to n of the oldest and returns them (live sessions only).
  std::vector<std::shared_ptr<Session>> take_oldest(size_t n);

 private:
  std::mutex mu_;
  std::list<Session*> list_;
};

// One TCP connection: reads requests one after the other, answers through SessionExchange.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, const ServerOptions& opts, const HttpServerHooks& hooks,
          std::atomic<int64_t>& n_busy, IdleList& idle)
      : stream_(std::move(socket)), opts_(opts), hooks_(hooks), n_busy_(n_busy), idle_(idle) {}
  ~Session() {
    idle_.unlink(*this);
    set_busy(false);
  }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }

  // --- called on the strand (through SessionExchange) ---
  // The answer to the request: the request can no longer be abandoned, so the watch and the
  // on_close callback end here (a failed write still closes the connection).
  void respond(int status, std::string content_type, std::string body) {
    if (closed_) return;
    end_watch();
    on_close_ = nullptr;
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(status), version_);
    res->set(http::field::server, "dsserve");
    res->set(http::field::content_type, content_type);
    res->keep_alive(keep_alive_);
    // The idle limit of a kept-alive connection (--header-timeout), so a client stops reusing it
    // before the server closes it: without the hint, a client that sends on a connection just as
    // the server's idle timer closes it sees "other side closed" (Node's undici reuses a
    // connection for up to its hint minus 1 s; it otherwise assumes 4 s).
    if (keep_alive_) {
      const auto idle_s = static_cast<long long>(std::max(1.0, std::floor(opts_.header_timeout_s)));
      res->set(http::field::keep_alive, "timeout=" + std::to_string(idle_s));
    }
    res->body() = std::move(body);
    res->prepare_payload();
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, size_t) {
                        if (ec || self->closed_) return self->fail();
                        self->set_busy(false);
                        if (!self->keep_alive_) return self->lingering_close();
                        self->read_header();
                      });
  }

  // HTTP/1.1: chunked encoding, then the last chunk and a close. HTTP/1.0 has no chunked
  // encoding: the body goes out as raw bytes and closing the connection ends it.
  void begin_stream(int status, std::string content_type) {
    if (closed_) return;
    stream_res_.emplace(static_cast<http::status>(status), version_);
    stream_res_->set(http::field::server, "dsserve");
    stream_res_->set(http::field::content_type, content_type);
    stream_res_->set(http::field::cache_control, "no-cache");
    stream_res_->keep_alive(false);
    raw_stream_ = version_ < 11;
    if (!raw_stream_) stream_res_->chunked(true);
    serializer_.emplace(*stream_res_);
    stream_.expires_never();
    writing_ = true;
    http::async_write_header(stream_, *serializer_,
                             [self = shared_from_this()](beast::error_code ec, size_t) {
                               self->writing_ = false;
                               if (ec) return self->fail();
                               self->header_sent_ = true;
                               self->end_watch();
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

  // Closes the connection if it is still waiting for a request header (the listener's room
  // making); one whose request has arrived meanwhile is left alone.
  void close_if_idle() {
    if (waiting_header_) close();
  }

  net::any_io_executor executor() { return stream_.get_executor(); }

 private:
  friend class IdleList;

  void read_header() {
    parser_.emplace();
    limit_request_parser(*parser_, opts_);
    version_ = 11;
    stream_.expires_after(ms_of(opts_.header_timeout_s));
    waiting_header_ = true;
    idle_.link(*this);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    waiting_header_ = false;
    idle_.unlink(*this);
    if (ec == http::error::header_limit) {
      keep_alive_ = false;
      return respond(431, "application/json", error_body(431, "request headers too large"));
    }
    // Beast checks Content-Length against body_limit while parsing the header.
    boost::optional<uint64_t> length;
    if (!ec) {
      length = parser_->content_length();
      version_ = parser_->get().version() < 11 ? 10 : 11;
    }
    if (ec == http::error::body_limit ||
        (length && *length > static_cast<uint64_t>(opts_.max_request_bytes))) {
      keep_alive_ = false;
      return respond(413, "application/json",
                     error_body(413, "request body larger than --max-request-bytes"));
    }
    if (is_malformed(ec)) {
      keep_alive_ = false;
      return respond(400, "application/json", error_body(400, "malformed HTTP request"));
    }
    if (ec) return close();  // end of stream, idle/slow-header timeout, partial message
    auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    stream_.expires_after(ms_of(opts_.body_timeout_s));
    if (version_ >= 11 && beast::iequals(req[http::field::expect], "100-continue")) {
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
      auto done = [self = shared_from_this()](beast::error_code ec, size_t) {
        self->writing_ = false;
        if (ec) return self->fail();
        self->flush();
      };
      if (raw_stream_) {
        net::async_write(stream_, net::buffer(out_), std::move(done));
      } else {
        net::async_write(stream_, http::make_chunk(net::buffer(out_)), std::move(done));
      }
      return;
    }
    if (end_requested_) {
      on_close_ = nullptr;              // complete: a later disconnect is not an abandonment
      if (raw_stream_) return close();  // the close ends an HTTP/1.0 body
      writing_ = true;
      net::async_write(stream_, http::make_chunk_last(),
                       [self = shared_from_this()](beast::error_code, size_t) { self->close(); });
    }
  }

  // From a complete request until its answer (respond(), or the stream's header written, when
  // watch_for_close takes over), a client that goes away (EOF, reset) abandons the request:
  // fail() runs the on_close callback. A keep-alive client may pipeline its next request, whose
  // bytes must stay unread: the watch waits for readability and peeks. 0 bytes: EOF, gone; an
  // error: gone; data: a pipelined request, the client is there and the watch ends. Each watch
  // has a generation; a completion from an ended one is ignored.
  void watch_request() { arm_watch(++watch_gen_); }

  void end_watch() { ++watch_gen_; }

  void arm_watch(uint64_t gen) {
    stream_.socket().async_wait(
        tcp::socket::wait_read,
        [self = shared_from_this(), gen](beast::error_code ec) { self->on_watch(gen, ec); });
  }

  void on_watch(uint64_t gen, beast::error_code ec) {
    if (closed_ || gen != watch_gen_) return;
    if (ec) return fail();
    char byte;
    const ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return end_watch();
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      return arm_watch(gen);  // spurious readiness
    fail();
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
    waiting_header_ = false;
    idle_.unlink(*this);
    set_busy(false);
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  beast::tcp_stream stream_;
  const ServerOptions& opts_;
  const HttpServerHooks& hooks_;
  std::atomic<int64_t>& n_busy_;
  IdleList& idle_;
  // guarded by IdleList's mutex: the position in its list, valid while linked
  std::list<Session*>::iterator idle_it_;
  bool idle_linked_ = false;
  bool waiting_header_ = false;  // a header read is pending (the connection is idle)
  bool busy_ = false;
  beast::flat_buffer buffer_;
  std::optional<HttpRequestParser> parser_;
  bool keep_alive_ = true;
  unsigned version_ = 11;  // of the request being answered: 10 or 11
  bool closed_ = false;
  uint64_t watch_gen_ = 0;
  // streaming state
  std::optional<http::response<http::empty_body>> stream_res_;
  std::optional<http::response_serializer<http::empty_body>> serializer_;
  bool header_sent_ = false, writing_ = false, end_requested_ = false;
  bool raw_stream_ = false;  // HTTP/1.0: no chunk framing, the close ends the body
  std::string pending_, out_;
  std::function<void()> on_close_;
  char probe_[512];
};

void IdleList::link(Session& s) {
  std::lock_guard<std::mutex> lk(mu_);
  if (s.idle_linked_) list_.erase(s.idle_it_);
  s.idle_it_ = list_.insert(list_.end(), &s);
  s.idle_linked_ = true;
}

void IdleList::unlink(Session& s) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!s.idle_linked_) return;
  list_.erase(s.idle_it_);
  s.idle_linked_ = false;
}

std::vector<std::shared_ptr<Session>> IdleList::take_oldest(size_t n) {
  std::vector<std::shared_ptr<Session>> out;
  std::lock_guard<std::mutex> lk(mu_);
  for (auto it = list_.begin(); it != list_.end() && out.size() < n;) {
    std::shared_ptr<Session> s = (*it)->weak_from_this().lock();
    if (!s) {  // being destroyed: its destructor unlinks it
      ++it;
      continue;
    }
    s->idle_linked_ = false;
    it = list_.erase(it);
    out.push_back(std::move(s));
  }
  return out;
}

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
  if (is_malformed(ec)) {
    keep_alive_ = false;
    return respond(400, "application/json", error_body(400, "malformed HTTP request"));
  }
  if (ec) return close();  // slow body (timeout), client gone
  stream_.expires_never();
  set_busy(true);
  watch_request();
  HttpRequest req = to_http_request(parser_->release());
  hooks_.handle(std::move(req), std::make_shared<SessionExchange>(shared_from_this()));
}

// Each connection holds a file descriptor: lift the soft limit to the hard one (process-wide;
// Asio uses epoll, so descriptors above 1024 are fine).
void raise_open_file_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  const rlim_t before = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
    log_info("open-file limit raised from ", before, " to ", rl.rlim_cur);
}

bool out_of_descriptors(beast::error_code ec) {
  return ec == boost::system::errc::too_many_files_open ||
         ec == boost::system::errc::too_many_files_open_in_system;
}

// Who sent the last SIGINT / SIGTERM: asio's handler is wrapped by one that records si_pid
// first, so a shutdown can tell the launcher (our parent: mpirun or its daemon, ending the job)
// from an operator's signal.
std::atomic<pid_t> g_signal_sender{0};
struct sigaction g_asio_action[2];

void record_signal_sender(int sig, siginfo_t* info, void* ctx) {
  g_signal_sender.store(info != nullptr ? info->si_pid : 0);
  const struct sigaction& a = g_asio_action[sig == SIGTERM ? 1 : 0];
  if (a.sa_flags & SA_SIGINFO) {
    if (a.sa_sigaction != nullptr) a.sa_sigaction(sig, info, ctx);
  } else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN) {
    a.sa_handler(sig);
  }
}

// After asio installed its handlers (signal_set constructed).
void wrap_signal_handlers() {
  const int sigs[2] = {SIGINT, SIGTERM};
  for (int i = 0; i < 2; ++i) {
    struct sigaction now {};
    sigaction(sigs[i], nullptr, &now);
    // Already wrapped (another server in this process): wrapping the wrapper would recurse.
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == record_signal_sender) continue;
    g_asio_action[i] = now;
    struct sigaction w = now;
    w.sa_flags |= SA_SIGINFO;
    w.sa_sigaction = record_signal_sender;
    sigaction(sigs[i], &w, nullptr);
  }
}

}  // namespace

struct HttpServer::Impl {
  ServerOptions opts;
  HttpServerHooks hooks;
  std::atomic<int64_t> n_busy{0};  // connections with a request being answered (before ioc:
                                   // sessions destroyed with the ioc still count down)
  IdleList idle;                   // before ioc, for the same reason
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

  // Accept errors (on the control strand). The listener stays readable while an error such as
  // EMFILE lasts, so accepting again at once would spin: each error pauses accepting, 10 ms
  // doubling to 250 ms while it repeats. Out of descriptors, the kEvictBatch oldest idle
  // connections are closed first and accepting resumes after 5 ms (time for those closes to run
  // on their strands). Errors are logged at most once a second, with a count.
  static constexpr size_t kEvictBatch = 16;
  net::steady_timer accept_timer{control};
  std::chrono::milliseconds accept_backoff{0};
  std::chrono::steady_clock::time_point accept_logged_at{};
  int64_t accept_errors = 0, accept_evicted = 0;  // since the last report

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
      if (!acceptor.is_open()) return;
      if (ec) return on_accept_error(ec);
      accept_backoff = std::chrono::milliseconds(0);
      beast::error_code ignored;
      s.set_option(tcp::no_delay(true), ignored);
      std::make_shared<Session>(std::move(s), opts, hooks, n_busy, idle)->start();
      accept();
    });
  }

  void on_accept_error(beast::error_code ec) {
    using std::chrono::milliseconds;
    size_t n_evicted = 0;
    if (out_of_descriptors(ec)) {
      for (auto& s : idle.take_oldest(kEvictBatch)) {
        net::post(s->executor(), [s] { s->close_if_idle(); });
        ++n_evicted;
      }
    }
    milliseconds delay(5);
    if (n_evicted == 0) {
      accept_backoff = std::clamp(accept_backoff * 2, milliseconds(10), milliseconds(250));
      delay = accept_backoff;
    }
    ++accept_errors;
    accept_evicted += static_cast<int64_t>(n_evicted);
    const auto now = std::chrono::steady_clock::now();
    if (now - accept_logged_at >= std::chrono::seconds(1)) {
      log_warn("accept: ", ec.message(), " (", accept_errors, " time(s) since the last report",
               accept_evicted > 0 ? "; closed " + std::to_string(accept_evicted) +
                                        " idle connection(s) to make room"
                                  : std::string(),
               ")");
      accept_logged_at = now;
      accept_errors = 0;
      accept_evicted = 0;
    }
    accept_timer.expires_after(delay);
    accept_timer.async_wait([this](beast::error_code e) {
      if (!e && acceptor.is_open()) accept();
    });
  }

  void begin_shutdown(bool by_signal) {
    if (hooks.on_shutdown) hooks.on_shutdown(by_signal && g_signal_sender.load() == getppid());
    if (shutting_down.exchange(true)) return;
    shutdown_start = std::chrono::steady_clock::now();
    log_info("shutting down: no new connections; waiting up to ", opts.shutdown_timeout_s,
             " s for ", hooks.in_flight(), " request(s)");
    beast::error_code ec;
    acceptor.close(ec);
    accept_timer.cancel();
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
  raise_open_file_limit();
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
  wrap_signal_handlers();
  s.signals.async_wait([&s](beast::error_code ec, int) {
    if (!ec) net::post(s.control, [&s] { s.begin_shutdown(true); });
  });
  std::vector<std::thread> threads;
  for (int i = 1; i < std::max(1, s.opts.n_io_threads); ++i)
    threads.emplace_back([&s] { s.ioc.run(); });
  s.ioc.run();
  for (auto& t : threads) t.join();
}

void HttpServer::request_shutdown() {
  net::post(impl_->control, [this] { impl_->begin_shutdown(false); });
}

bool HttpServer::shutting_down() const { return impl_->shutting_down.load(); }

}  // namespace dss
