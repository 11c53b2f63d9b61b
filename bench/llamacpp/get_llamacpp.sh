#!/usr/bin/env bash
# Builds llama.cpp's llama-bench and llama-server (CPU backend) outside the repository, from the
# llama.cpp source snapshot that the node-llama-cpp npm package ships as a git bundle (package/
# llama/gitRelease.bundle): npm is reachable where GitHub may not be. Nothing of it enters this repo.
#   bench/llamacpp/get_llamacpp.sh [DIR]      (default DIR: /tmp/llama.cpp)
# Then: $DIR/build/bin/llama-bench, $DIR/build/bin/llama-server (for serve_compare.sh), and
# $DIR/gguf-py for hf_to_gguf.py.
# node-llama-cpp 3.22.1 bundles llama.cpp commit de3ff81 (2026-09-28); NODE_LLAMA_CPP_VERSION
# picks another release.
set -euo pipefail
dir="${1:-/tmp/llama.cpp}"
version="${NODE_LLAMA_CPP_VERSION:-3.22.1}"
if [ ! -d "$dir/.git" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "node-llama-cpp@$version" >/dev/null)
  tar -xzf "$work"/node-llama-cpp-*.tgz -C "$work" package/llama/gitRelease.bundle
  git -c advice.detachedHead=false clone -q "$work/package/llama/gitRelease.bundle" "$dir"
fi
git -C "$dir" log -1 --format='llama.cpp %h (%cs)'
cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=ON >/dev/null
cmake --build "$dir/build" --target llama-bench llama-completion llama-server
echo "llama-bench: $dir/build/bin/llama-bench"
echo "llama-server: $dir/build/bin/llama-server"
