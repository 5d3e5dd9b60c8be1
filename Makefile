# Dovetail developer entry points. The README's two commands are `make demo` and `make test`.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
JOBS ?= $(shell nproc)

.PHONY: all deps build release dovetail-release image k8s test test-tsan thread-safety fuzz-build fuzz test-unit test-integration test-e2e test-repeat demo bench bench-e2e bench-upstream bench-compare format format-check lint clean

all: build

deps:
	@scripts/install-deps

# The test build (preset dev): every test target, under AddressSanitizer + UndefinedBehaviorSanitizer
# at -O0 -g1; no benchmarks.
build: deps
	@cmake --preset dev >/dev/null
	@cmake --build --preset dev -j $(JOBS)

# The optimised build (preset release): the dovetail binary and the benchmarks; no tests.
release: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

# Only the optimised dovetail binary (what `make demo` runs).
dovetail-release: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS) --target dovetail

# The controller's container image, without Docker: build/image/dovetail-controller.oci.tar, tagged
# dovetail/controller:<version> (tools/image/build; docs/getting-started.md pushes it).
image: dovetail-release
	@tools/image/build

# Real Kubernetes binaries (kube-apiserver, etcd, kube-scheduler, kube-controller-manager, kwok,
# kubectl) built from the Go module proxy at the pinned release; cached under ~/.cache/dovetail.
k8s:
	@tools/k8s/build

# Every test, unit, integration (real API server) and e2e (full local cluster), once, on the
# sanitized dev build (after clang-tidy on the changed sources, scripts/lint), the image test on
# the image `make image` builds, and a short run of every fuzzer of the fuzz build (fuzz_smoke). The Kubernetes binaries build alongside the C++
# (scripts/with-k8s). On failure, the failed tests' failure lines are printed last
# (scripts/ctest-failure-digest).
test: deps format-check
	@scripts/with-k8s $(MAKE) --no-print-directory build image fuzz-build
	@scripts/lint --jobs $(JOBS)
	@ctest --preset dev -j $(JOBS) || { scripts/ctest-failure-digest build/dev; exit 1; }

# The unit and integration tests under ThreadSanitizer (preset tsan: clang++, -O1 -g1), against
# Abseil and cpp-httplib built with TSan from Debian's sources at the installed versions
# (scripts/build-absl-tsan, scripts/build-httplib-tsan; cached under ~/.cache/dovetail), so that
# absl::Mutex and the HTTP servers' threads are visible to it. The Kubernetes binaries build
# alongside (scripts/with-k8s). Not part of `make test` (CI time); docs/reliability.md has the last
# result. TSAN_OPTIONS come from the test preset (CMakePresets.json), suppressions from
# test/tsan/suppressions.txt. `-U 'DOVETAIL_*HTTPLIB'` makes an older build/tsan find the TSan
# cpp-httplib again instead of keeping Debian's from its cache.
test-tsan: deps
	@scripts/with-k8s bash -c 'set -e; absl="$$(scripts/build-absl-tsan)"; httplib="$$(scripts/build-httplib-tsan)"; \
		cmake --preset tsan -U "DOVETAIL_*HTTPLIB" -DCMAKE_PREFIX_PATH="$$absl;$$httplib" >/dev/null; \
		cmake --build --preset tsan -j $(JOBS)'
	@ctest --preset tsan -j $(JOBS) -L 'unit|integration' || { scripts/ctest-failure-digest build/tsan; exit 1; }

# Clang's thread safety analysis (-Wthread-safety) over every translation unit of the dev build;
# also a ctest test (thread_safety_analysis, label static), so `make test` runs it.
thread-safety: build
	@scripts/thread-safety-check build/dev

# The libFuzzer targets of test/fuzz (preset fuzz: clang, ASan + UBSan, -O1): only the fuzzers and
# the libraries they use.
fuzz-build: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)

# Every fuzzer for FUZZ_SECONDS (default 600) from its seeds, JOBS at a time; a crash fails and is
# saved under build/fuzz/fuzz-work/<target>/artifacts (scripts/fuzz). FUZZ_TARGETS picks some.
fuzz: fuzz-build
	@scripts/fuzz --seconds $(or $(FUZZ_SECONDS),600) --jobs $(JOBS) $(FUZZ_TARGETS)

test-unit: build
	@ctest --preset dev -j $(JOBS) -L unit

test-integration: build k8s
	@ctest --preset dev -j $(JOBS) -L integration

test-e2e: build k8s
	@ctest --preset dev -j $(JOBS) -L e2e

# One test or label N times in a row, to find flakes (docs/development.md):
#   make test-repeat TEST=disruption_e2e_test N=5      # ctest -R regex
#   make test-repeat LABEL='integration|e2e' N=5        # ctest -L regex, two tests at a time
test-repeat: build k8s
	@scripts/test-repeat --n "$(or $(N),5)" --jobs $(JOBS) $(if $(TEST),--test '$(TEST)') \
		$(if $(LABEL),--label '$(LABEL)')

# The main job: `dovetail simulate` on examples/simulate, then a live local cluster autoscaled by
# `dovetail controller` (scripts/demo_cluster.py; DEMO_SIMULATE_ONLY=1 skips it).
demo: deps
	@$(if $(DEMO_SIMULATE_ONLY),,scripts/with-k8s) $(MAKE) --no-print-directory dovetail-release
	@scripts/demo

bench: release
	@scripts/bench

# End-to-end provisioning benchmark: 1,000 pending pods to Running on the local cluster.
bench-e2e: dovetail-release k8s
	@python3 bench/e2e/scale_bench.py --pods 1000 --json build/release/bench-results/scale_bench.json

# Side-by-side with upstream Karpenter (bench/upstream/README.md): upstream's own scheduling
# benchmark from the Go module proxy, then both schedulers on the same fixture. Not part of
# `make test` or CTest. DOVETAIL_BIN overrides the dovetail binary.
DOVETAIL_BIN ?= build/release/dovetail/cli/dovetail
bench-upstream:
	@bench/upstream/run-upstream-bench build/bench-upstream/upstream-scheduling.txt
	@bench/upstream/compare.py $(DOVETAIL_BIN) --json build/bench-upstream/compare.json

# Issue 9's whole comparison in one run (up to an hour; bench/upstream/README.md): the frozen
# fixtures on both schedulers, upstream's kwok build against `dovetail controller` on the local
# cluster (1,000 and 5,000 pods, then a 30% scale-in), and the generated section and plots of
# docs/benchmarks.md. Plots need matplotlib, installed into .cache/bench-venv from PyPI.
# BENCH_COMPARE_ARGS passes options through (e.g. "--fixtures diverse-1000 --e2e-pods 1000").
BENCH_VENV := .cache/bench-venv
bench-compare: dovetail-release k8s
	@test -x $(BENCH_VENV)/bin/python || python3 -m venv $(BENCH_VENV)
	@$(BENCH_VENV)/bin/python -c "import matplotlib" 2>/dev/null || \
		$(BENCH_VENV)/bin/pip install -q --disable-pip-version-check "matplotlib==3.10.9"
	@$(BENCH_VENV)/bin/python bench/upstream/bench_compare.py --dovetail $(DOVETAIL_BIN) $(BENCH_COMPARE_ARGS)

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

# Every C++ file as clang-format (.clang-format) writes it; part of `make test`.
format-check:
	@git ls-files '*.h' '*.cc' | xargs clang-format --dry-run --Werror

# clang-tidy (.clang-tidy) on the sources under dovetail/ changed since the commit in
# scripts/lint-base (the last one linted in CI) or in the work tree (scripts/lint; LINT_BASE=<commit>
# for another range, LINT_ARGS=--all for all); part of `make test`.
lint:
	@scripts/lint --jobs $(JOBS) $(LINT_ARGS)

clean:
	rm -rf build
