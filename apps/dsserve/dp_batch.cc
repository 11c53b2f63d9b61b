#include "apps/dsserve/dp_batch.h"

#include <cstring>
#include <span>

#include "base/check.h"
#include "sched/dp_router.h"

namespace dss::app {

std::vector<size_t> replica_share(const std::vector<BatchRequest>& requests, int32_t n_replicas,
                                  int32_t replica, int32_t page_size) {
  DpRouterOptions o;
  o.n_replicas = n_replicas;
  o.block_tokens = page_size;
  o.min_match_tokens = page_size;
  DpRouter router(o);
  std::vector<int64_t> load(static_cast<size_t>(n_replicas), 0);
  std::vector<size_t> mine;
  for (size_t i = 0; i < requests.size(); ++i) {
    const int32_t r = router.route(requests[i].prompt, load);
    load[static_cast<size_t>(r)] += 1;
    if (r == replica) mine.push_back(i);
  }
  return mine;
}

std::vector<std::string> gather_lines(MpiComm& leaders,
                                      const std::vector<std::pair<size_t, std::string>>& mine,
                                      size_t n_total) {
  // One buffer per leader: [index u64][length u64][bytes] per line.
  std::vector<std::byte> buf;
  for (const auto& [index, line] : mine) {
    const uint64_t head[2] = {index, line.size()};
    const auto* h = reinterpret_cast<const std::byte*>(head);
    buf.insert(buf.end(), h, h + sizeof(head));
    const auto* l = reinterpret_cast<const std::byte*>(line.data());
    buf.insert(buf.end(), l, l + line.size());
  }
  const int n = leaders.size();
  const bool root = leaders.rank() == 0;
  const int64_t size = static_cast<int64_t>(buf.size());
  std::vector<int64_t> sizes(root ? static_cast<size_t>(n) : 0);
  leaders.gather(std::span<const int64_t>(&size, 1), std::span<int64_t>(sizes), 0);
  std::vector<int64_t> send_counts(static_cast<size_t>(n), 0),
      send_displs(static_cast<size_t>(n), 0);
  std::vector<int64_t> recv_counts(static_cast<size_t>(n), 0),
      recv_displs(static_cast<size_t>(n), 0);
  send_counts[0] = size;
  int64_t total = 0;
  if (root) {
    for (int p = 0; p < n; ++p) {
      recv_displs[static_cast<size_t>(p)] = total;
      recv_counts[static_cast<size_t>(p)] = sizes[static_cast<size_t>(p)];
      total += sizes[static_cast<size_t>(p)];
    }
  }
  std::vector<std::byte> all(static_cast<size_t>(total));
  leaders.all_to_all_v(std::span<const std::byte>(buf), std::span<std::byte>(all),
                       AllToAllLayout{send_counts, send_displs, recv_counts, recv_displs});
  if (!root) return {};
  std::vector<std::string> lines(n_total);
  std::vector<bool> seen(n_total, false);
  for (size_t at = 0; at < all.size();) {
    uint64_t head[2];
    std::memcpy(head, all.data() + at, sizeof(head));
    at += sizeof(head);
    DSS_CHECK(head[0] < n_total && !seen[head[0]], "gather_lines: index ", head[0], " of ",
              n_total);
    seen[head[0]] = true;
    lines[head[0]].assign(reinterpret_cast<const char*>(all.data() + at), head[1]);
    at += head[1];
  }
  for (size_t i = 0; i < n_total; ++i) DSS_CHECK(seen[i], "gather_lines: no line for request ", i);
  return lines;
}

std::vector<int64_t> sum_to_leader0(MpiComm& leaders, const std::vector<int64_t>& values) {
  const bool root = leaders.rank() == 0;
  std::vector<int64_t> all(root ? values.size() * static_cast<size_t>(leaders.size()) : 0);
  leaders.gather(std::span<const int64_t>(values), std::span<int64_t>(all), 0);
  if (!root) return {};
  std::vector<int64_t> sum(values.size(), 0);
  for (size_t i = 0; i < all.size(); ++i) sum[i % values.size()] += all[i];
  return sum;
}

}  // namespace dss::app
