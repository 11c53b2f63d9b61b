#include "apps/bench/http_client.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <limits>

#include "apps/bench/sse_parser.h"
#include "base/clock.h"

namespace dss::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

Result<ServerUrl> parse_base_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (!std::string_view(url).starts_with(kScheme))
    return Status::error("--base-url: '", url, "' must start with http:// (no TLS)");
  std::string rest = url.substr(kScheme.size());
  ServerUrl u;
  const size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  if (slash != std::string::npos) u.base_path = rest.substr(slash);
  while (!u.base_path.empty() && u.base_path.back() == '/') u.base_path.pop_back();
  if (u.base_path.ends_with("/v1")) u.base_path.resize(u.base_path.size() - 3);
  const size_t colon = hostport.rfind(':');
  if (colon != std::string::npos && hostport.find(']', colon) == std::string::npos) {
    u.port = hostport.substr(colon + 1);
    hostport.resize(colon);
  }
  if (hostport.size() > 2 && hostport.front() == '[')
    hostport = hostport.substr(1, hostport.size() - 2);
  u.host = hostport;
  if (u.host.empty()) return Status::error("--base-url: '", url, "' has no host");
  if (u.port.empty() || u.port.find_first_not_of("0123456789") != std::string::npos)
    return Status::error("--base-url: '", url, "' has a bad port");
  return u;
}

namespace {

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

http::request<http::string_body> make_request(const ServerUrl& url, const std::string& target,
                                              const std::string& body) {
  http::request<http::string_body> req{body.empty() ? http::verb::get : http::verb::post,
                                       url.base_path + target, 11};
  req.set(http::field::host, url.host + ":" + url.port);
  req.set(http::field::user_agent, "dsserve-bench");
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  return req;
}

// Sends the request and reads the response body piece by piece; `on_bytes(status, bytes)` is
// called for each piece with the receive time taken by the caller. Returns "" or an error.
template <typename OnBytes>
asio::awaitable<std::string> exchange(beast::tcp_stream& stream,
                                      const tcp::resolver::results_type& eps,
                                      const http::request<http::string_body>& req,
                                      double idle_timeout_s, int& status, OnBytes on_bytes) {
  const auto tuple = asio::as_tuple(asio::use_awaitable);
  stream.expires_after(seconds(idle_timeout_s));
  auto [ec_c, ep] = co_await stream.async_connect(eps, tuple);
  if (ec_c) co_return "connect: " + ec_c.message();
  stream.expires_after(seconds(idle_timeout_s));
  auto [ec_w, n_w] = co_await http::async_write(stream, req, tuple);
  if (ec_w) co_return "write: " + ec_w.message();
  beast::flat_buffer buf;
  http::response_parser<http::buffer_body> p;
  p.body_limit(std::numeric_limits<std::uint64_t>::max());
  stream.expires_after(seconds(idle_timeout_s));
  auto [ec_h, n_h] = co_await http::async_read_header(stream, buf, p, tuple);
  if (ec_h) co_return "read header: " + ec_h.message();
  status = static_cast<int>(p.get().result_int());
  char piece[16384];
  while (!p.is_done()) {
    p.get().body().data = piece;
    p.get().body().size = sizeof(piece);
    stream.expires_after(seconds(idle_timeout_s));
    auto [ec, n] = co_await http::async_read_some(stream, buf, p, tuple);
    if (ec && ec != http::error::need_buffer) co_return "read body: " + ec.message();
    const size_t got = sizeof(piece) - p.get().body().size;
    if (got > 0) on_bytes(status, std::string_view(piece, got));
  }
  co_return status == 200 ? std::string() : "HTTP status " + std::to_string(status);
}

}  // namespace

asio::awaitable<void> stream_post(const tcp::resolver::results_type& eps, const ServerUrl& url,
                                  const std::string& target, const std::string& body,
                                  double idle_timeout_s, StreamTimeline& tl) {
  beast::tcp_stream stream(co_await asio::this_coro::executor);
  SseParser sse;
  std::string error_body;
  int status = 0;
  const std::string err =
      co_await exchange(stream, eps, make_request(url, target, body), idle_timeout_s, status,
                        [&](int code, std::string_view bytes) {
                          const double t = now_seconds();
                          if (code != 200) {
                            if (error_body.size() < 2000) error_body += bytes;
                            return;
                          }
                          for (const std::string& ev : sse.feed(bytes)) tl.on_event(t, ev);
                        });
  if (!err.empty()) tl.fail(error_body.empty() ? err : err + ": " + error_body);
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

Result<HttpResponse> http_call(const ServerUrl& url, const std::string& target,
                               const std::string& body, double timeout_s) {
  asio::io_context io;
  tcp::resolver resolver(io);
  beast::error_code ec;
  auto eps = resolver.resolve(url.host, url.port, ec);
  if (ec) return Status::error("resolving ", url.host, ": ", ec.message());
  HttpResponse resp;
  std::string err;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        beast::tcp_stream stream(co_await asio::this_coro::executor);
        err =
            co_await exchange(stream, eps, make_request(url, target, body), timeout_s, resp.status,
                              [&](int, std::string_view bytes) { resp.body += bytes; });
      },
      asio::detached);
  io.run();
  if (!err.empty() && !err.starts_with("HTTP status"))
    return Status::error("http://", url.host, ":", url.port, url.base_path, target, ": ", err);
  return resp;
}

}  // namespace dss::bench
