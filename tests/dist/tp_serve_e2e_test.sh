#!/usr/bin/env bash
# The server's end-to-end suite (tests/server/e2e_test.sh: the official OpenAI Node SDK, raw SSE
# framing, every error status, timeouts, the queue limit, graceful shutdown) against
# `mpirun -np N dsserve serve FLAGS...` (--tp-size 2 [--ep-size 2], --dp-size 2: replicas behind
# the data-parallel front): the suite runs unchanged through a
# wrapper that starts `serve` under mpirun and every other subcommand as one process. The
# suite's SIGTERM goes to rank 0 (the HTTP front), as an operator stops a parallel server
# gracefully (docs/dist.md): mpirun itself ends every rank at once on SIGTERM, cutting requests.
# Usage: tp_serve_e2e_test.sh DSSERVE REPO_ROOT NP PARALLEL_FLAGS...
set -euo pipefail
bin="$(realpath "$1")" root="$(realpath "$2")" np="$3"
shift 3
flags="$*"
wrap="$(mktemp -d)"
# Whatever the suite leaves running (it kill -9s the wrapper on failure; mpirun and the ranks
# carry the tag in their environment) goes at exit.
export DSS_E2E_TAG="$wrap"
cleanup() {
  for e in /proc/[0-9]*/environ; do
    grep -qzx "DSS_E2E_TAG=$wrap" "$e" 2>/dev/null && kill -9 "$(basename "$(dirname "$e")")" 2>/dev/null
  done
  rm -rf "$wrap"
}
trap cleanup EXIT
cat >"$wrap/dsserve" <<SH
#!/usr/bin/env bash
if [ "\$1" = serve ]; then
  shift
  mpirun --oversubscribe --bind-to none --mca btl self,vader -np $np "$bin" serve "\$@" $flags &
  launcher=\$!
  rank0() {  # the pid of rank 0 among mpirun's children
    for p in \$(pgrep -P "\$launcher"); do
      tr '\\0' '\\n' <"/proc/\$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=0 && echo "\$p"
    done
  }
  trap 'kill -TERM \$(rank0) 2>/dev/null' TERM INT
  while :; do
    wait "\$launcher"; rc=\$?
    kill -0 "\$launcher" 2>/dev/null || exit "\$rc"  # else wait returned for the trap
  done
fi
exec "$bin" "\$@"
SH
chmod +x "$wrap/dsserve"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bash "$root/tests/server/e2e_test.sh" "$wrap/dsserve" "$root"
