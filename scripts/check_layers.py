#!/usr/bin/env python3
"""The include graph of src/ against the allowed layer edges (docs/architecture.md).

Each folder of src/ (kernels/*, backend/cpu and model/* count separately) may include only the
folders listed for it below; anything else fails with the file, line and include. CMake's
target_link_libraries gives the link-level direction; this check closes the gap the shared include
root (src/) leaves: a header reachable on the include path is not thereby an allowed dependency.
Usage: check_layers.py [repo root]. Exit 1 on a violation or an unknown folder.
"""
import os
import re
import sys

# folder -> folders it may include (itself always allowed). External headers (<...>) are free.
ALLOWED = {
    "base": set(),
    "core": {"base"},
    "tensor": {"base"},
    "io": {"base", "tensor"},
    "kernels/cpu": {"base", "tensor", "hwy"},
    "kernels/ref": {"base", "tensor", "kernels/cpu"},
    "kernels/cuda": {"base", "tensor"},
    "kv": {"base", "core", "tensor"},
    # Communicators (MPI, NCCL, a world of one): below the model, beside kv.
    "dist": {"base", "core"},
    # The seam (header-only) and its CPU implementation: only backend/cpu reaches the kernels.
    "backend": {"base", "core", "io", "kv", "tensor"},
    "backend/cpu": {"backend", "base", "core", "io", "kv", "tensor", "kernels/cpu"},
    # The CUDA backend over kernels/cuda; it shares the CPU backend's host routing (route_token).
    "backend/cuda": {"backend", "backend/cpu", "base", "core", "io", "kv", "tensor",
                     "kernels/cuda"},
    # The blocks call the seam; they instantiate themselves for the backends' classes (their
    # headers include no kernel). deepseek/ never includes runtime/.
    "model/deepseek": {"backend", "backend/cpu", "backend/cuda", "base", "core", "io", "kv",
                       "tensor"},
    "model/runtime": {"model/deepseek", "backend", "backend/cpu", "backend/cuda", "dist", "base",
                      "core", "io", "kv", "tensor"},
    "sample": {"base", "core"},
    "sched": {"base", "core", "kv"},
    "engine": {"model/runtime", "model/deepseek", "backend", "backend/cpu", "dist", "sched",
               "sample", "grammar", "kv", "base", "core", "io", "tensor"},
    "text": {"base", "core", "io"},
    # Grammar-constrained decoding: below the engine, reads the tokenizer's vocabulary.
    "grammar": {"base", "core", "io", "text"},
    "server": {"engine", "grammar", "text", "sample", "base", "core", "io"},
    # bench-model's measurement and cost model: above the model, below the apps.
    "perf": {"model/runtime", "model/deepseek", "backend", "backend/cpu", "kernels/cpu", "hwy",
             "engine", "kv", "base", "core", "io", "tensor"},
}


def folder(rel):
    parts = rel.split("/")
    if parts[0] in ("kernels", "model") or (parts[0] == "backend" and len(parts) > 2):
        return "/".join(parts[:2])
    return parts[0]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    src = os.path.join(root, "src")
    bad = []
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".h", ".cc", ".cu")):
                continue
            path = os.path.join(dirpath, f)
            me = folder(os.path.relpath(path, src))
            if me not in ALLOWED:
                bad.append(f"{path}: folder '{me}' has no entry in scripts/check_layers.py")
                continue
            with open(path, encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m or "/" not in m.group(1):
                        continue
                    other = folder(m.group(1))
                    if other != me and other not in ALLOWED[me]:
                        bad.append(f"{path}:{n}: {me} may not include {m.group(1)}")
    for b in bad:
        print(b)
    print(f"check_layers: {len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
