// The HTTP request parser as the server configures it (limits) and its conversion to the routes'
// HttpRequest: one definition shared by the transport (http_server.cc) and the request-path
// fuzzer (tests/fuzz/fuzz_request.cc), so the fuzzer parses exactly what the server parses.
#pragma once

#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdint>
#include <string>

#include "server/http_exchange.h"
#include "server/server_options.h"

namespace dss {

inline constexpr uint32_t kMaxRequestHeaderBytes = 64 * 1024;  // larger: 431

using HttpRequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// Header and body limits of `opts` (a body over max_request_bytes: body_limit error, 413).
inline void limit_request_parser(HttpRequestParser& parser, const ServerOptions& opts) {
  parser.body_limit(static_cast<uint64_t>(opts.max_request_bytes));
  parser.header_limit(kMaxRequestHeaderBytes);
}

// The parsed message as the routes see it (header names lower-cased; later duplicates win).
inline HttpRequest to_http_request(
    boost::beast::http::request<boost::beast::http::string_body>&& msg) {
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
  return req;
}

}  // namespace dss
