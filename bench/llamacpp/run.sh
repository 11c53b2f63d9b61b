#!/usr/bin/env bash
# llama-bench on a GGUF of the same checkpoint, in the shapes `dsserve bench-model` measures
# (pp512, pp2048, tg128), so the two can be run back to back on a quiet machine:
#   bench/llamacpp/run.sh LLAMA_BUILD_DIR MODEL.gguf [THREADS] [OUT_DIR]
#   build/release/apps/dsserve/dsserve bench-model --model models/ds-mini --threads 2 --json
# Writes OUT_DIR/llama-bench.json and OUT_DIR/llama-bench.md (default OUT_DIR: .) and prints the
# markdown table. Extra llama-bench flags can follow in LLAMA_BENCH_ARGS (e.g. "-r 5").
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 LLAMA_BUILD_DIR MODEL.gguf [THREADS] [OUT_DIR]" >&2
  exit 2
fi
build="$1"; model="$2"; threads="${3:-2}"; out="${4:-.}"
bench="$build/bin/llama-bench"
[ -x "$bench" ] || { echo "$0: no llama-bench at $bench" >&2; exit 1; }
[ -f "$model" ] || { echo "$0: no GGUF at $model" >&2; exit 1; }
mkdir -p "$out"
# One run: JSON on stdout, the markdown table on stderr (llama-bench -oe).
# shellcheck disable=SC2086  # LLAMA_BENCH_ARGS is a list of flags
"$bench" -m "$model" -p 512,2048 -n 128 -t "$threads" ${LLAMA_BENCH_ARGS:-} -o json -oe md \
  >"$out/llama-bench.json" 2>"$out/llama-bench.md"
cat "$out/llama-bench.md"
