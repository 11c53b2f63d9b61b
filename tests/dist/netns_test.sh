#!/usr/bin/env bash
# mpi_comm_test with one rank per simulated host (scripts/netns-hosts, scripts/netns-mpirun), for
# 2 and 4 hosts, and proof that the data crossed the veth links: every host's eth0 must have sent
# and received at least the 4 MiB of MpiComm.AllreduceLarge (an allreduce moves at least
# 2 (S-1)/S of the buffer each way per rank, >= 4 MiB for S >= 2; the launcher's own traffic is
# a few KiB). Prints each host's counters.
#
#   tests/dist/netns_test.sh PATH/TO/mpi_comm_test
#
# Exit 77 (ctest SKIP_RETURN_CODE) with the reason when network namespaces cannot be made here
# (not root, no CAP_NET_ADMIN). Hosts use their own prefix and subnet (dsst-h, 10.77.9) so they
# do not collide with hosts made by hand, a lock serialises concurrent runs, and the hosts are
# removed on every exit path.
set -euo pipefail

bin="${1:?usage: netns_test.sh PATH/TO/mpi_comm_test}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
prefix=dsst-h
subnet=10.77.9
min_bytes=$((4 * 1024 * 1024))

if ! command -v ip >/dev/null 2>&1; then
  echo "SKIP: no 'ip' command (iproute2)"
  exit 77
fi
if ! command -v mpirun >/dev/null 2>&1; then
  echo "FAIL: mpirun not found (scripts/setup installs openmpi-bin)"
  exit 1
fi
# What netns-hosts needs: a namespace (CAP_SYS_ADMIN) and links in the root one (CAP_NET_ADMIN).
probe="${prefix}probe"
if ! err="$(ip netns add "$probe$$" 2>&1)"; then
  echo "SKIP: cannot create network namespaces here (needs root / CAP_SYS_ADMIN): $err"
  exit 77
fi
ip netns delete "$probe$$"
if ! err="$(ip link add "$probe" type bridge 2>&1)"; then
  echo "SKIP: cannot create network devices here (needs root / CAP_NET_ADMIN): $err"
  exit 77
fi
ip link delete "$probe"

exec 9>/tmp/dss-netns-test.lock
flock 9
cleanup() { "$repo/scripts/netns-hosts" down --prefix "$prefix" || true; }
trap cleanup EXIT
trap 'exit 143' TERM INT

"$repo/scripts/netns-hosts" up 4 --prefix "$prefix" --subnet "$subnet"

counter() {  # counter HOST rx|tx -> bytes on the host's eth0
  ip netns exec "$1" cat "/sys/class/net/eth0/statistics/${2}_bytes"
}

status=0
for np in 2 4; do
  declare -A rx0 tx0
  for ((i = 0; i < np; i++)); do
    rx0[$i]="$(counter "$prefix$i" rx)"
    tx0[$i]="$(counter "$prefix$i" tx)"
  done
  echo "== $np ranks, one per host (${prefix}0..${prefix}$((np - 1)))"
  start_ms=$(($(date +%s%N) / 1000000))
  if ! "$repo/scripts/netns-mpirun" --prefix "$prefix" --subnet "$subnet" "$np" "$bin" \
    --dss-expect-size="$np"; then
    echo "FAIL: mpi_comm_test with $np hosts"
    status=1
    continue
  fi
  echo "$np ranks: mpirun took $(($(date +%s%N) / 1000000 - start_ms)) ms"
  for ((i = 0; i < np; i++)); do
    rx=$(($(counter "$prefix$i" rx) - rx0[$i]))
    tx=$(($(counter "$prefix$i" tx) - tx0[$i]))
    echo "host $prefix$i eth0: sent $tx bytes, received $rx bytes"
    if [ "$tx" -lt "$min_bytes" ] || [ "$rx" -lt "$min_bytes" ]; then
      echo "FAIL: host $prefix$i moved less than $min_bytes bytes each way over its veth link"
      status=1
    fi
  done
  unset rx0 tx0
done
[ "$status" = 0 ] && echo "netns_test: ok"
exit "$status"
