#include "apps/bench/runner.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <chrono>

#include "apps/bench/progress.h"
#include "base/check.h"
#include "base/clock.h"
#include "io/json.h"

namespace dss::bench {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

std::string request_body(const RunOptions& o, const PlannedRequest& r) {
  OrderedJson j;
  j["model"] = o.model;
  if (o.endpoint == ApiEndpoint::kChat) {
    j["messages"] = OrderedJson::array({{{"role", "user"}, {"content", r.text}}});
  } else {
    j["prompt"] = r.ids;
  }
  j["max_tokens"] = r.max_tokens;
  j["temperature"] = 0.0;
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}};
  if (o.ignore_eos) j["ignore_eos"] = true;
  return j.dump();
}

Result<RunResult> run_requests(const RunOptions& o, std::span<const PlannedRequest> plan,
                               std::span<const double> arrivals) {
  DSS_CHECK(plan.size() == arrivals.size(), plan.size(), " vs ", arrivals.size());
  asio::io_context io;
  tcp::resolver resolver(io);
  boost::beast::error_code ec;
  const auto eps = resolver.resolve(o.url.host, o.url.port, ec);
  if (ec) return Status::error("resolving ", o.url.host, ": ", ec.message());
  const std::string target =
      o.endpoint == ApiEndpoint::kChat ? "/v1/chat/completions" : "/v1/completions";

  RunResult res;
  res.records.resize(plan.size());
  Progress progress(o.label, static_cast<int64_t>(plan.size()), o.progress);
  size_t next = 0;
  const double t0 = now_seconds();
  double t_end = t0;
  auto worker = [&]() -> asio::awaitable<void> {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (next < plan.size()) {
      const size_t i = next++;
      const double wait = t0 + arrivals[i] - now_seconds();
      if (wait > 0) {
        timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(wait)));
        co_await timer.async_wait(asio::use_awaitable);
      }
      const std::string body = request_body(o, plan[i]);
      StreamTimeline tl(now_seconds(), plan[i].prompt_len);
      co_await stream_post(eps, o.url, target, body, o.idle_timeout_s, tl);
      res.records[i] = tl.finish();
      t_end = std::max(t_end, now_seconds());
      progress.tick(res.records[i].success);
    }
  };
  const size_t n_workers = o.max_concurrency > 0
                               ? std::min(plan.size(), static_cast<size_t>(o.max_concurrency))
                               : plan.size();
  for (size_t w = 0; w < n_workers; ++w) asio::co_spawn(io, worker(), asio::detached);
  io.run();
  progress.done();
  res.duration_s = std::max(t_end - t0, 1e-9);
  return res;
}

}  // namespace dss::bench
