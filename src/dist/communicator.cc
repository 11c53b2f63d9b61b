#include "dist/communicator.h"

namespace dss {

const char* comm_dtype_name(CommDType t) {
  switch (t) {
    case CommDType::kF32:
      return "f32";
    case CommDType::kF64:
      return "f64";
    case CommDType::kI32:
      return "i32";
    case CommDType::kI64:
      return "i64";
    case CommDType::kBytes:
      return "bytes";
  }
  return "?";
}

void check_all_to_all_layout(const AllToAllLayout& layout, int n_ranks, size_t n_send,
                             size_t n_recv) {
  const auto n = static_cast<size_t>(n_ranks);
  DSS_CHECK(layout.send_counts.size() == n && layout.send_displs.size() == n &&
                layout.recv_counts.size() == n && layout.recv_displs.size() == n,
            "all_to_all_v: counts and displacements need one entry per rank (", n_ranks,
            "); got send ", layout.send_counts.size(), "/", layout.send_displs.size(), ", recv ",
            layout.recv_counts.size(), "/", layout.recv_displs.size());
  for (size_t p = 0; p < n; ++p) {
    const int64_t sc = layout.send_counts[p], sd = layout.send_displs[p];
    const int64_t rc = layout.recv_counts[p], rd = layout.recv_displs[p];
    DSS_CHECK(sc >= 0 && sd >= 0 && rc >= 0 && rd >= 0,
              "all_to_all_v: negative count or displacement for peer ", p);
    DSS_CHECK(static_cast<size_t>(sd + sc) <= n_send, "all_to_all_v: send region of peer ", p, " [",
              sd, ", ", sd + sc, ") exceeds the send buffer (", n_send, " elements)");
    DSS_CHECK(static_cast<size_t>(rd + rc) <= n_recv, "all_to_all_v: receive region of peer ", p,
              " [", rd, ", ", rd + rc, ") exceeds the receive buffer (", n_recv, " elements)");
  }
}

}  // namespace dss
