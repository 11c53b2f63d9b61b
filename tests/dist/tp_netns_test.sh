#!/usr/bin/env bash
# Tensor parallelism across two hosts: `dsserve logits --tp-size 2` with one rank in each of two
# network namespaces (scripts/netns-hosts, netns-mpirun: TCP over veth links, no shared memory)
# on golden tiny-v3's longest prompt gives DeepSeek's reference greedy continuation and one
# process's argmax at every position, last logits within 1e-4; the activations crossed the
# links (each host's eth0 moved at least 1 MiB each way: 9 allreduces of 300 x 256 f32 rows).
#
#   tests/dist/tp_netns_test.sh DSSERVE DATA_DIR
#
# Exit 77 (ctest SKIP_RETURN_CODE) when network namespaces cannot be made here.
set -euo pipefail
bin="$(realpath "${1:?usage: tp_netns_test.sh DSSERVE DATA_DIR}")"
data="$(realpath "$2")"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
prefix=dsstp-h
subnet=10.77.8
min_bytes=$((1024 * 1024))
if ! command -v ip >/dev/null 2>&1 || ! ip netns add "${prefix}probe$$" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here (needs root, iproute2)"
  exit 77
fi
ip netns delete "${prefix}probe$$"
exec 9>/tmp/dss-netns-test.lock
flock 9
tmp="$(mktemp -d)"
cleanup() { "$repo/scripts/netns-hosts" down --prefix "$prefix" || true; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 143' TERM INT
"$repo/scripts/netns-hosts" up 2 --prefix "$prefix" --subnet "$subnet"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

dir="$data/golden/tiny-v3"
python3 - "$dir/golden.json" "$tmp" <<'PY'
import json, sys
c = max(json.load(open(sys.argv[1]))["cases"], key=lambda x: len(x["prompt"]))
open(f"{sys.argv[2]}/ids", "w").write(",".join(map(str, c["prompt"])))
open(f"{sys.argv[2]}/greedy", "w").write(json.dumps(c["greedy"]["tokens"]))
PY
args=(logits --model "$dir" --ids "$(cat "$tmp/ids")" --decode 8 --matmul-dtype f32 --threads 1)
"$bin" "${args[@]}" >"$tmp/one.json"
counter() { ip netns exec "$1" cat "/sys/class/net/eth0/statistics/${2}_bytes"; }
declare -A rx0 tx0
for i in 0 1; do rx0[$i]=$(counter "$prefix$i" rx); tx0[$i]=$(counter "$prefix$i" tx); done
start_ms=$(($(date +%s%N) / 1000000))
"$repo/scripts/netns-mpirun" --prefix "$prefix" --subnet "$subnet" 2 "$bin" "${args[@]}" \
  --tp-size 2 >"$tmp/tp.json"
echo "2 hosts: mpirun took $(($(date +%s%N) / 1000000 - start_ms)) ms"
status=0
for i in 0 1; do
  rx=$(($(counter "$prefix$i" rx) - rx0[$i])); tx=$(($(counter "$prefix$i" tx) - tx0[$i]))
  echo "host $prefix$i eth0: sent $tx bytes, received $rx bytes"
  if [ "$tx" -lt "$min_bytes" ] || [ "$rx" -lt "$min_bytes" ]; then
    echo "FAIL: host $prefix$i moved less than $min_bytes bytes each way"; status=1
  fi
done
python3 - "$tmp/one.json" "$tmp/tp.json" "$tmp/greedy" <<'PY' || status=1
import json, sys
a = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().splitlines()
assert len(lines) == 1, f"{len(lines)} stdout lines (rank 0 alone prints)"
b = json.loads(lines[0])
want = json.load(open(sys.argv[3]))
assert b["greedy"] == want, f"greedy {b['greedy']} != reference {want}"
assert a["argmax"] == b["argmax"], "argmax differs from one process"
d = max(abs(x - y) for x, y in zip(a["last_logits"], b["last_logits"]))
assert d <= 1e-4, f"last logits differ by {d}"
print(f"ok   TP 2 over two hosts: reference greedy {want}, argmax at {len(b['argmax'])} positions, max |dlogit| {d:.2e}")
PY
exit "$status"
