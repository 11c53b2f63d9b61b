#include "dist/mpi_mailbox.h"

#include <climits>

#include "base/check.h"

namespace dss {

MpiMailbox::MpiMailbox(const MpiComm& comm) {
  check_mpi(MPI_Comm_dup(comm.handle(), &comm_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  rank_ = comm.rank();
  size_ = comm.size();
}

MpiMailbox::~MpiMailbox() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  DSS_CHECK(!finalized, "an MpiMailbox outlived its MpiRuntime");
  check_mpi(MPI_Comm_free(&comm_), "MPI_Comm_free");
}

void MpiMailbox::send(int dest, int tag, std::span<const uint8_t> bytes) {
  DSS_CHECK(dest >= 0 && dest < size_ && tag >= 0, "mailbox send to ", dest, " tag ", tag);
  DSS_CHECK(bytes.size() <= static_cast<size_t>(INT_MAX), "mailbox message of ", bytes.size(),
            " bytes exceeds MPI's int count");
  check_mpi(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, dest, tag, comm_),
            "MPI_Send");
}

std::optional<MpiMailbox::Message> MpiMailbox::poll() {
  int flag = 0;
  MPI_Message handle = MPI_MESSAGE_NULL;
  MPI_Status st;
  check_mpi(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, &handle, &st), "MPI_Improbe");
  if (flag == 0) return std::nullopt;
  int n = 0;
  check_mpi(MPI_Get_count(&st, MPI_BYTE, &n), "MPI_Get_count");
  Message m;
  m.source = st.MPI_SOURCE;
  m.tag = st.MPI_TAG;
  m.bytes.resize(static_cast<size_t>(n));
  check_mpi(MPI_Mrecv(m.bytes.data(), n, MPI_BYTE, &handle, MPI_STATUS_IGNORE), "MPI_Mrecv");
  return m;
}

}  // namespace dss
