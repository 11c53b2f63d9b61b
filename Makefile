# dsserve developer entry points. The two quick-start commands are `make serve` and `make test`;
# both run scripts/setup first (idempotent: installs only what is missing).
#
#   make serve        build, create the default demo model on first use, serve it
#   make test         build (release) and run the whole default test suite
#   make test-asan    the suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   make test-ubsan   the suite under UBSan only
#   make test-tsan    the suite under ThreadSanitizer
#   make fuzz-smoke   libFuzzer (clang, ASan+UBSan) on the tokenizer, the output parsers, the
#                     server's request path (raw HTTP and JSON bodies to prompts) and the grammar
#                     front ends + matcher (JSON Schema, regex, GBNF), 15 s each
#                     (part of `make test`)
#   make cuda         the CUDA build (nvcc; no GPU needed): build/cuda-release
#   make cuda-test    scripts/gpu-check on a GPU machine (builds the CUDA preset first)
#   make fuzz-long    the same fuzzers for DSS_FUZZ_SECONDS (default 600) each
#   make build        release build only (build/release)
#   make format       clang-format every C++ file
#   make demo-model   (re)create models/demo-tiny-v32 (the default model of `dsserve serve`)
#   make ds-mini      create models/ds-mini (benchmark shape, ~1.7 GB, about a minute)
#   make bench-engine in-process engine benchmark on ds-mini (16 x 256/128, concurrent vs serial;
#                     ~1 minute on the 2-core dev VM); results in build/bench-engine.json
#   make soak         soak test, not in `make test`: SOAK_CONCURRENCY (1000) SSE clients for
#                     SOAK_SECONDS (600) on the demo model, 30% dropped mid-stream, 10% non-stream
#                     clients that leave; fails on errors, pages not back, RSS growth >= 5%
#                     (minute 2 to the end); report in build/soak-report.json
#   make structured-output-acceptance   not in `make test` (minutes): every JSON Schema of
#                     tests/data/grammar/schemas x 3 temperatures x 2 seeds, streamed and not, on
#                     the random-weight tiny V3.2 model; every finished reply checked by ajv
#                     (scripts/structured-output-acceptance)
#   make spec-sampling-check   not in `make test` (~1 min): speculative decoding keeps the
#                     sampling distribution, chi-square over 20,000 seeds per arm (make test: 4,000)

JOBS ?= $(shell nproc)
DSSERVE := build/release/apps/dsserve/dsserve
# [DEMO_MODEL] the same path and preset as apps/dsserve/cmd_serve.cc kDefaultModel
DEMO_MODEL ?= models/demo-tiny-v32
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: cuda cuda-test fuzz-smoke fuzz-long setup build serve test test-asan test-ubsan test-tsan format demo-model ds-mini bench-engine soak structured-output-acceptance spec-sampling-check clean

setup:
	@scripts/setup

build: setup
	@cmake --preset release >/dev/null
	@cmake --build build/release -j $(JOBS)

$(DEMO_MODEL)/config.json: | build
	$(DSSERVE) init-model --preset tiny-v32 --out $(DEMO_MODEL) --seed 7

demo-model: build
	rm -rf $(DEMO_MODEL)
	$(DSSERVE) init-model --preset tiny-v32 --out $(DEMO_MODEL) --seed 7

models/ds-mini/config.json: | build
	$(DSSERVE) init-model --preset ds-mini --out models/ds-mini --seed 7

ds-mini: build models/ds-mini/config.json

bench-engine: build models/ds-mini/config.json
	build/release/bench/engine/engine_bench --model models/ds-mini --requests 16 --input-len 256 \
	  --output-len 128 --json-out build/bench-engine.json

serve: build $(DEMO_MODEL)/config.json
	$(DSSERVE) serve --model $(DEMO_MODEL) $(ARGS)

SOAK_SECONDS ?= 600
SOAK_CONCURRENCY ?= 1000
SOAK_SEED ?= 1
SOAK_REPORT ?= build/soak-report.json

soak: build $(DEMO_MODEL)/config.json
	SOAK_SECONDS=$(SOAK_SECONDS) SOAK_CONCURRENCY=$(SOAK_CONCURRENCY) SOAK_SEED=$(SOAK_SEED) \
	  SOAK_REPORT=$(abspath $(SOAK_REPORT)) SOAK_MODEL=$(abspath $(DEMO_MODEL)) \
	  bash tests/server/soak_test.sh $(DSSERVE) $(CURDIR)

structured-output-acceptance: build
	scripts/structured-output-acceptance $(DSSERVE)

spec-sampling-check: build
	DSS_SPEC_SAMPLING_REQUESTS=20000 build/release/tests/engine/spec_sampling_test

test: build
	cd build/release && ctest -j $(JOBS) --output-on-failure --timeout 600
	@$(MAKE) --no-print-directory fuzz-smoke

# libFuzzer needs clang; only the fuzz targets (and the text layer under them) are built there.
build/fuzz/build.ninja:
	CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DDSS_BENCH=OFF >/dev/null

fuzz-smoke: setup build/fuzz/build.ninja
	cmake --build build/fuzz -j $(JOBS) --target fuzz_tokenizer fuzz_output_parser fuzz_request \
	  fuzz_grammar
	cd build/fuzz && ctest --output-on-failure -R 'fuzz_.*_smoke'

fuzz-long: setup build/fuzz/build.ninja
	cmake --build build/fuzz -j $(JOBS) --target fuzz_text_long

define sanitized_test
	@scripts/setup
	@cmake --preset $(1) >/dev/null
	@cmake --build build/$(1) -j $(JOBS)
	cd build/$(1) && ctest -j $(JOBS) --output-on-failure --timeout 1200
endef

test-asan:
	$(call sanitized_test,debug-asan)

test-ubsan:
	$(call sanitized_test,debug-ubsan)

test-tsan:
	$(call sanitized_test,tsan)

# CUDA backend (needs nvcc; builds here without a GPU): everything, in build/cuda-release. On a
# GPU machine `make cuda-test` runs scripts/gpu-check (every CUDA test and benchmark, the golden
# suites and the server on the GPU; JSON and a summary under $$OUT, default build/gpu-check).
cuda: setup
	cmake --preset cuda-release >/dev/null
	cmake --build build/cuda-release -j$(JOBS)

cuda-test:
	scripts/gpu-check

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	rm -rf build
