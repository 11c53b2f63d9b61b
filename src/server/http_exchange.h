// HttpRequest / HttpExchange: the seam between the HTTP transport (http_server.cc, Beast) and the
// routes. Routes never see sockets: they answer through an exchange, once with respond(), or as
// a stream with begin_stream() + write()... + end_stream().
//
// Threading: every method may be called from any thread; the work is posted to the connection's
// strand, in call order. post() runs a function on that strand, so a route can serialise its own
// per-request state with the writes (engine sinks post their events there).
// Disconnects: on_close(cb) registers a callback run once, on the strand, if the client goes
// away (or a write fails) after its request arrived and before the answer (respond() or
// end_stream()), streaming or not; writes after that are dropped.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace dss {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // path + query
  std::string path;                            // target without the query
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  virtual void respond(int status, std::string content_type, std::string body) = 0;
  virtual void begin_stream(int status, std::string content_type) = 0;
  virtual void write(std::string data) = 0;
  virtual void end_stream() = 0;
  virtual void on_close(std::function<void()> cb) = 0;
  virtual void post(std::function<void()> fn) = 0;
};

}  // namespace dss
