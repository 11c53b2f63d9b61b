// A minimal HTTP/1.1 client for benchmarking OpenAI-compatible servers (Boost.Beast + Asio).
//
// `stream_post` sends one POST and feeds each SSE event of the response to a StreamTimeline with
// its receive time, as the bytes arrive (chunked or not: Beast removes the chunk framing).
// `http_call` is the blocking form for small requests (/v1/models, /health, /metrics).
// No TLS (http:// only). One new connection per request.
// Threading: `stream_post` runs on the io_context that drives it; callers own that context.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <string>

#include "apps/bench/stream_timeline.h"
#include "base/status.h"

namespace dss::bench {

// http://HOST[:PORT][/PATH]; a trailing "/v1" and "/" are dropped (endpoints add "/v1/...").
struct ServerUrl {
  std::string host;
  std::string port = "80";
  std::string base_path;  // "" or "/prefix" without a trailing slash
};
Result<ServerUrl> parse_base_url(const std::string& url);

struct HttpResponse {
  int status = 0;
  std::string body;
};

// Blocking request; `body` empty means GET. Fails on connection errors and after `timeout_s`.
Result<HttpResponse> http_call(const ServerUrl& url, const std::string& target,
                               const std::string& body = "", double timeout_s = 30);

// Streams one POST of `body` (JSON) to `target`. Transport errors and non-200 statuses go to
// `tl.fail`. `idle_timeout_s`: longest wait for any byte.
boost::asio::awaitable<void> stream_post(const boost::asio::ip::tcp::resolver::results_type& eps,
                                         const ServerUrl& url, const std::string& target,
                                         const std::string& body, double idle_timeout_s,
                                         StreamTimeline& tl);

}  // namespace dss::bench
