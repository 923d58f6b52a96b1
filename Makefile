# simdgrad's front door. CMake + Ninja do the building; this file installs what Debian lacks,
# configures, and runs the suites:
#
#   make test          build (Release) and run the whole test suite
#   make bench         build and run the default benchmark suite as a table (ARGS=... passes
#                      Google Benchmark flags through, e.g. ARGS=--benchmark_filter=exp;
#                      BENCH_SUITE=all runs everything); the JSON goes to $(BENCH_JSON)
#   make bench-plot    the roofline and speed-up PNGs from that JSON; make bench-compare A=x.json B=y.json
#                      compares two runs; make bench-smoke checks the bench in 10-20 seconds;
#                      make bench-torch compares with PyTorch in the same run; make bench-peers
#                      with PyTorch, ONNX Runtime and JAX from PyPI (a venv under build/)
#   make test-asan     the test suite built with AddressSanitizer, UBSan and LeakSanitizer
#   make test-clang    everything built with clang (library, tests, bench, examples), the suite run
#   make test-tsan     clang, ThreadSanitizer and LLVM's OpenMP runtime: the concurrency stress test
#                      and the thread tests as plain programs (docs/testing.md)
#   make test-arm64    the aarch64 cross build (NEON backend), its suite under qemu-user
#   make fuzz          the libFuzzer harnesses of tests/fuzz (clang, ASan, UBSan), each for
#                      FUZZ_SECONDS (300); make fuzz-smoke runs each for FUZZ_SMOKE_SECONDS (7),
#                      as CI does; FUZZERS=fuzz_gemm picks some (docs/testing.md, "Fuzzing")
#   make examples      build every example and run each briefly
#   make install       install into PREFIX (default /usr/local)
#   make test-dist     only the distributed tests (simdgrad_mpi under mpirun: 2 and 3 ranks, shared
#                      memory and TCP; make test runs them too); make bench-dist the distributed
#                      benchmarks (docs/distributed.md)
#   make abi-check     the exported ABI of libsimdgrad.so against abi/libsimdgrad.abi (fails on
#                      an incompatible change under the same SONAME); make abi-baseline
#                      rewrites that baseline (docs/embedding.md, "ABI policy")
#   make format        clang-format -i every C/C++ source; make format-check only checks
#   make deps          install the Debian packages the build needs (as root), nothing else
#
# CI=true turns warnings into errors. SIMDGRAD_BACKEND=scalar|avx2|avx512|neon picks the backend
# the tests and benchmarks run on (default: the best this CPU supports).

BUILD ?= build
ASAN_BUILD ?= build-asan
CLANG_BUILD ?= build-clang
TSAN_BUILD ?= build-tsan
PREFIX ?= /usr/local
TEST_TIMEOUT ?= 600
BENCH_MIN_TIME ?= 0.1
ARGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

ifeq ($(CI),true)
WERROR := ON
else
WERROR ?= OFF
endif

PACKAGES := build-essential cmake ninja-build pkg-config libsleef-dev libcriterion-dev \
            libbenchmark-dev libomp-dev zlib1g-dev dataset-fashion-mnist libopenblas-dev \
            abigail-tools libdlpack-dev python3-pytest python3-numpy python3-torch \
            libopenmpi-dev openmpi-bin clang libomp-14-dev libclang-rt-14-dev
FORMAT_PACKAGES := clang-format
FUZZ_PACKAGES := clang libclang-rt-14-dev libomp-14-dev
CLANG_FORMAT ?= clang-format

CMAKE_FLAGS := -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMDGRAD_WERROR=$(WERROR)
ASAN_FLAGS := -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIMDGRAD_WERROR=$(WERROR) \
              -DSIMDGRAD_SANITIZE=address,undefined -DSIMDGRAD_BUILD_BENCH=OFF
# Sanitizer reports go to files as well as failing the process: Criterion runs each test in a
# child and has already counted it as passed when LeakSanitizer reports at the child's exit, so
# test-asan fails on any report file instead.
ASAN_LOGS = $(abspath $(ASAN_BUILD))/sanitizer-reports
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:log_path=$(ASAN_LOGS)/asan \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(ASAN_LOGS)/ubsan

.PHONY: all build deps format-deps fuzz-deps test test-asan test-clang test-tsan bench examples \
        install format format-check clean abi-build abi-check abi-baseline test-dist bench-dist

all: build

# Installs only what is missing: dpkg-query first, `apt-get update` only if something is.
# Not root: prints the apt-get line to run and stops.
define install_packages
	@missing=""; \
	if ! command -v dpkg-query >/dev/null 2>&1; then \
	  echo "simdgrad: no dpkg here; make sure these are installed: $(1)"; exit 0; \
	fi; \
	for p in $(1); do \
	  dpkg-query -W -f='$${db:Status-Status}\n' $$p 2>/dev/null | grep -qx installed || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "simdgrad: missing Debian packages:$$missing"; \
	  echo "simdgrad: run as root:  apt-get update && apt-get install -y$$missing"; \
	  exit 1; \
	fi; \
	echo "simdgrad: installing$$missing"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get update -q && apt-get install -y -q --no-install-recommends$$missing
endef

deps:
	$(call install_packages,$(PACKAGES))

format-deps:
	$(call install_packages,$(FORMAT_PACKAGES))

fuzz-deps:
	$(call install_packages,$(FUZZ_PACKAGES))

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# Runs ctest in build folder $(1) (with environment $(2)), then prints each test binary's
# Criterion synthesis line from ctest's log and their sum, also when some failed; fails if
# folder $(3), when given, holds sanitizer reports.
define run_ctest
	$(2) ctest --test-dir $(1) --output-on-failure --timeout $(TEST_TIMEOUT) -j $(JOBS); rc=$$?; \
	echo "simdgrad: Criterion results per test binary in $(1):"; \
	awk -F'[:|]' '/^[0-9]+\/[0-9]+ Test: / { name = $$2; sub(/^ +/, "", name) } \
	  /^\[====\] Synthesis:/ { printf "  %-24s %s\n", name ":", $$0; t += $$3; p += $$5; f += $$7; c += $$9 } \
	  END { printf "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d \n", t, p, f, c }' \
	  $(1)/Testing/Temporary/LastTest.log; \
	if [ -n "$(3)" ] && [ -n "$$(ls -A $(3))" ]; then \
	  for f in $(3)/*; do echo "--- $$f"; cat "$$f"; done; \
	  echo "simdgrad: the sanitizers reported the problems above"; rc=1; \
	elif [ -n "$(3)" ]; then echo "simdgrad: no sanitizer reports"; fi; \
	exit $$rc
endef

test: build
	$(call run_ctest,$(BUILD),)

# The distributed tests alone (ctest label mpi; distributed/tests/CMakeLists.txt). Fails when
# none is registered (the build found no MPI).
test-dist: build
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -L mpi -j $(JOBS)

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) $(ASAN_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	rm -rf $(ASAN_LOGS) && mkdir -p $(ASAN_LOGS)
	$(call run_ctest,$(ASAN_BUILD),$(ASAN_ENV),$(ASAN_LOGS))

# ---- clang, and ThreadSanitizer (docs/testing.md) --------------------------------------------
# make test-clang: the whole tree built with clang 14 and libomp (warnings are errors under CI, as
# with gcc), the whole suite run. make test-tsan: the library built with clang,
# -fsanitize=thread and LLVM's OpenMP runtime, whose tool library (libarcher.so, found by CMake
# and named in each test's OMP_TOOL_LIBRARIES) tells TSan about OpenMP's synchronisation; gcc's
# libgomp is not instrumented and gives false reports. Criterion's runner cannot start under
# TSan, so this build has only plain programs: tests/stress_threads.c and the thread tests
# (tests/test_threads.c, tests/test_host.c) through tests/plain_test.h. A report fails the test
# (TSAN_OPTIONS with halt_on_error=1 exitcode=66, set by tests/CMakeLists.txt). No simdgrad_mpi
# there: OpenMPI is not instrumented either.
CLANG_CMAKE := -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
CLANG_FLAGS := -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMDGRAD_WERROR=$(WERROR) $(CLANG_CMAKE)
TSAN_FLAGS := -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIMDGRAD_WERROR=$(WERROR) \
              $(CLANG_CMAKE) -DSIMDGRAD_SANITIZE=thread -DSIMDGRAD_BUILD_BENCH=OFF \
              -DSIMDGRAD_BUILD_EXAMPLES=OFF -DSIMDGRAD_BUILD_MPI=OFF
TSAN_STRESS_SECONDS ?= 3

test-clang: deps
	cmake -S . -B $(CLANG_BUILD) $(CLANG_FLAGS)
	cmake --build $(CLANG_BUILD) -j $(JOBS)
	$(call run_ctest,$(CLANG_BUILD),)

test-tsan: deps
	cmake -S . -B $(TSAN_BUILD) $(TSAN_FLAGS)
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	$(call run_ctest,$(TSAN_BUILD),SIMDGRAD_STRESS_SECONDS=$(TSAN_STRESS_SECONDS))

# ---- make test-arm64: the aarch64 build and the NEON backend, cross-built and run under qemu ----
# Installs (as root, each step only if missing) the cross compilers, qemu-user, the arm64 SLEEF,
# Google Benchmark and runtime libraries, unpacks Criterion's arm64 .debs into a sysroot folder
# (the arm64 libcriterion cannot be installed next to the amd64 one) and registers qemu with
# binfmt_misc (Criterion re-executes each test binary). Then the whole suite runs under qemu with
# SIMDGRAD_BACKEND=neon and =scalar, one thread, and the benchmarks once as a smoke test (qemu's
# timings mean nothing). qemu ignores SIGTERM, hence timeout -s KILL around everything it runs.
ARM64_BUILD ?= build-arm64
ARM64_SYSROOT = $(abspath $(ARM64_BUILD))/sysroot
ARM64_TEST_TIMEOUT ?= 600
ARM64_SUITE_TIMEOUT ?= 1800
ARM64_BENCH_TIMEOUT ?= 300
# Extra C flags for the cross build (none by default; the workaround for gcc 12's aarch64 ICE
# on the tests' reference loops is in tests/CMakeLists.txt).
ARM64_CFLAGS ?=
ARM64_ENV = OMP_NUM_THREADS=1 SIMDGRAD_THREADS=1
# A few small benchmarks (make bench-smoke's selection), no roofline (a DRAM triad under qemu
# takes minutes).
ARM64_BENCH_FILTER = $(BENCH_SMOKE_FILTER)
ARM64_BENCH_ARGS ?= --roofline=off --table --benchmark_min_time=0.0001 \
                    '--benchmark_filter=$(ARM64_BENCH_FILTER)'
ARM64_PACKAGES := gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user qemu-user-static \
                  libsleef-dev:arm64 libgomp1:arm64 libstdc++6:arm64 libbenchmark-dev:arm64
# Criterion and the libraries it loads, for the sysroot (Debian 12 names).
ARM64_SYSROOT_DEBS := libcriterion3 libcriterion-dev libnanomsg5 libgit2-1.5 libffi8 \
                      libhttp-parser2.9 libmbedcrypto7 libmbedtls14 libmbedx509-1 libpcre2-8-0 \
                      libssh2-1 zlib1g libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 \
                      libcom-err2 libkeyutils1 libssl3
ARM64_CMAKE_FLAGS = -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMDGRAD_WERROR=$(WERROR) \
                    -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/aarch64-toolchain.cmake \
                    -DARM64_SYSROOT=$(ARM64_SYSROOT) -DCMAKE_C_FLAGS="$(ARM64_CFLAGS)" \
                    -DSIMDGRAD_TEST_TIMEOUT=$(ARM64_TEST_TIMEOUT)
BINFMT = /proc/sys/fs/binfmt_misc

.PHONY: test-arm64
test-arm64: TEST_TIMEOUT = $(ARM64_TEST_TIMEOUT)
test-arm64: deps
	@if ! dpkg --print-foreign-architectures 2>/dev/null | grep -qx arm64; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "simdgrad: run as root:  dpkg --add-architecture arm64 && apt-get update"; exit 1; \
	  fi; \
	  echo "simdgrad: dpkg --add-architecture arm64"; dpkg --add-architecture arm64 && apt-get update -q; \
	fi
	$(call install_packages,$(ARM64_PACKAGES))
	@if [ ! -e $(ARM64_SYSROOT)/usr/lib/aarch64-linux-gnu/libcriterion.so ]; then \
	  set -e; debs=$$(mktemp -d); chmod 777 $$debs; \
	  echo "simdgrad: unpacking Criterion's arm64 packages into $(ARM64_SYSROOT)"; \
	  (cd $$debs && apt-get download -q $(addsuffix :arm64,$(ARM64_SYSROOT_DEBS))); \
	  mkdir -p $(ARM64_SYSROOT); for d in $$debs/*.deb; do dpkg -x $$d $(ARM64_SYSROOT); done; \
	  rm -rf $$debs; \
	fi
	@if [ ! -e $(BINFMT)/qemu-aarch64 ]; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "simdgrad: register qemu-aarch64 with binfmt_misc (as root):"; \
	    echo "  cat /usr/lib/binfmt.d/qemu-aarch64.conf > $(BINFMT)/register"; exit 1; \
	  fi; \
	  [ -e $(BINFMT)/register ] || mount -t binfmt_misc binfmt_misc $(BINFMT); \
	  cat /usr/lib/binfmt.d/qemu-aarch64.conf > $(BINFMT)/register; \
	  echo "simdgrad: registered qemu-aarch64 with binfmt_misc"; \
	fi
	cmake -S . -B $(ARM64_BUILD) $(ARM64_CMAKE_FLAGS)
	cmake --build $(ARM64_BUILD) -j $(JOBS)
	$(call run_ctest,$(ARM64_BUILD),SIMDGRAD_BACKEND=neon $(ARM64_ENV) timeout -s KILL $(ARM64_SUITE_TIMEOUT))
	$(call run_ctest,$(ARM64_BUILD),SIMDGRAD_BACKEND=scalar $(ARM64_ENV) timeout -s KILL $(ARM64_SUITE_TIMEOUT))
	$(ARM64_ENV) timeout -s KILL $(ARM64_BENCH_TIMEOUT) qemu-aarch64 $(ARM64_BUILD)/bench/simdgrad_bench \
	  $(ARM64_BENCH_ARGS)

# ---- Fuzzing (docs/testing.md, "Fuzzing") ---------------------------------------------------
# The library and the harnesses built by clang with ASan, UBSan and libFuzzer's coverage; each
# harness then fuzzes for its time from its seed corpus (tests/fuzz/corpus/<name>, read only)
# and the inputs it found before ($(FUZZ_BUILD)/corpus/<name>, where new ones go). A crash, a
# sanitizer report or a broken invariant stops that harness, leaves the input in
# $(FUZZ_BUILD)/artifacts/ and fails the target once the others have run. The last lines give
# each harness's executions.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 300
# 8 harnesses x 7 s: CI's fuzzing stays at about a minute.
FUZZ_SMOKE_SECONDS ?= 7
FUZZERS ?= fuzz_api fuzz_unary fuzz_binary fuzz_reduce fuzz_gemm fuzz_shape fuzz_window fuzz_nn
FUZZ_ARGS ?=
FUZZ_FLAGS := -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
              "-DCMAKE_C_FLAGS_DEBUG=-O1 -gline-tables-only" \
              -DSIMDGRAD_WERROR=$(WERROR) -DSIMDGRAD_FUZZ=ON -DSIMDGRAD_BUILD_TESTS=OFF \
              -DSIMDGRAD_BUILD_BENCH=OFF -DSIMDGRAD_BUILD_EXAMPLES=OFF
FUZZ_ENV := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Runs every harness of $(FUZZERS) for $(1) seconds.
define run_fuzzers
	@rc=0; summary=""; mkdir -p $(FUZZ_BUILD)/artifacts; \
	for h in $(FUZZERS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$h; \
	  echo "simdgrad: $$h for $(1) s"; \
	  $(FUZZ_ENV) $(FUZZ_BUILD)/tests/fuzz/$$h -max_total_time=$(1) -timeout=60 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$h- $(FUZZ_ARGS) $(FUZZ_BUILD)/corpus/$$h \
	    tests/fuzz/corpus/$$h > $(FUZZ_BUILD)/$$h.log 2>&1 || { rc=1; tail -n 60 $(FUZZ_BUILD)/$$h.log; }; \
	  runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_BUILD)/$$h.log | tail -n 1); \
	  summary="$$summary  $$h: $${runs:-?} executions\n"; \
	done; \
	printf "simdgrad: fuzzing, $(1) s per harness:\n$$summary"; \
	if [ $$rc != 0 ]; then echo "simdgrad: a harness failed; its input is in $(FUZZ_BUILD)/artifacts/" \
	  "(docs/testing.md says how to reproduce it)"; fi; exit $$rc
endef

.PHONY: fuzz-build fuzz fuzz-smoke
fuzz-build: fuzz-deps
	cmake -S . -B $(FUZZ_BUILD) $(FUZZ_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZERS)

fuzz: fuzz-build
	$(call run_fuzzers,$(FUZZ_SECONDS))

# CI's run starts from a fixed seed: a failure there can be replayed, and the new kernels were
# fuzzed from it before they landed. make fuzz explores from a fresh seed each time.
fuzz-smoke: FUZZ_ARGS += -seed=1
fuzz-smoke: fuzz-build
	$(call run_fuzzers,$(FUZZ_SMOKE_SECONDS))

# ---- Benchmarks (docs/bench.md) -------------------------------------------------------------
# make bench: the table on stdout, a progress line on stderr, the JSON in $(BENCH_JSON). The
# default suite runs unless a filter selects from every benchmark: FILTER=regex (passed on
# verbatim, quoted) or --benchmark_filter in ARGS; BENCH_SUITE=default|all forces the set. The
# bench itself unsets OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE before it opens OpenBLAS
# (bench/bench_openblas.c), so no `env -u` is needed here.
BENCH_SUITE ?=
FILTER ?=
BENCH_JSON ?= $(BUILD)/bench.json
BENCH_PNG ?= $(BUILD)/roofline.png
BENCH_SPEEDUP_PNG ?= $(BUILD)/speedup.png
BENCH_BIN = $(BUILD)/bench/simdgrad_bench
# make bench-plot only (bench/plot is Python with matplotlib); nothing else needs it.
PLOT_PACKAGES := python3-matplotlib
# One or two benchmarks of each family at small sizes, for make bench-smoke (and qemu runs).
BENCH_SMOKE_KERNELS := exp|add_backward|where|reduce_max\.axis0|argmax|softmax_cross_entropy_backward|$\
  transpose|batch_norm_backward|adam_update
BENCH_SMOKE_FILTER := ^($(BENCH_SMOKE_KERNELS)|scatter_add)/[a-z0-9]+/(16384|16x1024)/|$\
  ^matmul(_backward)?/[a-z0-9]+/128/|^gemm\.mix/|^api\.less/[a-z0-9]+/16384/|^engine\.|$\
  ^tape\.(exp|sum|matmul|gather|conv2d)/[a-z0-9]+/(16384|16x1024|64|1x8x8x16)/|$\
  ^train\.mlp(\.profiled)?/avx512/
BENCH_SMOKE_ARGS = --roofline=quick --benchmark_min_time=0.01 '--benchmark_filter=$(BENCH_SMOKE_FILTER)'

.PHONY: bench-plot bench-compare bench-smoke bench-torch bench-peers
bench: build
	$(BENCH_BIN) --table --benchmark_min_time=$(BENCH_MIN_TIME) \
	  --benchmark_out=$(BENCH_JSON) --benchmark_out_format=json \
	  $(if $(BENCH_SUITE),--suite=$(BENCH_SUITE)) \
	  $(if $(value FILTER),'--benchmark_filter=$(value FILTER)') $(ARGS)

bench-plot:
	$(call install_packages,$(PLOT_PACKAGES))
	@[ -r $(BENCH_JSON) ] || { echo "simdgrad: no $(BENCH_JSON) yet: run make bench first" \
	  "(or name a run: make bench-plot BENCH_JSON=run.json)"; exit 1; }
	/usr/bin/python3 bench/plot $(BENCH_JSON) $(BENCH_PNG) $(BENCH_SPEEDUP_PNG)

# simdgrad against PyTorch (Debian: python3-torch) in one run: the same ops, training steps and
# convolution, alternating between the two (bench/vs_torch).
TORCH_PACKAGES := python3-torch
PYTHON ?= /usr/bin/python3
bench-torch: build
	$(call install_packages,$(TORCH_PACKAGES))
	$(PYTHON) bench/vs_torch --bench $(BENCH_BIN) $(ARGS)

# simdgrad against today's peers from PyPI (PyTorch, ONNX Runtime, JAX) in one process-alternating
# run (bench/vs_peers): installs them into a virtual environment under $(BUILD) on first use
# (PyTorch's Linux wheels on PyPI bring its CUDA libraries: a few GB). Never part of make test.
PEERS_VENV ?= $(BUILD)/peers-venv
PEERS_PIP ?= torch onnxruntime onnx jax numpy
bench-peers: build
	@[ -x $(PEERS_VENV)/bin/python ] || /usr/bin/python3 -m venv $(PEERS_VENV) || \
	  { echo "simdgrad: bench-peers: cannot make a virtual environment (Debian: python3-venv)"; exit 1; }
	@$(PEERS_VENV)/bin/python -c 'import torch, onnxruntime, onnx, jax' 2>/dev/null || \
	  $(PEERS_VENV)/bin/pip install --progress-bar off $(PEERS_PIP) || \
	  { echo "simdgrad: bench-peers: pip could not install $(PEERS_PIP) from PyPI"; exit 1; }
	$(PEERS_VENV)/bin/python bench/vs_peers --bench $(BENCH_BIN) $(ARGS)

# simdgrad_mpi's benchmarks (distributed/bench_dist.c, docs/distributed.md): 2 ranks x 1 thread,
# then the same global batch on 1 rank x 2 threads. As root, OpenMPI wants the two variables.
DIST_MPIRUN = OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe
bench-dist: build
	SIMDGRAD_THREADS=1 $(DIST_MPIRUN) -np 2 $(BUILD)/distributed/bench_dist $(ARGS)
	SIMDGRAD_THREADS=2 $(DIST_MPIRUN) -np 1 $(BUILD)/distributed/bench_dist step $(ARGS)

bench-compare:
	@[ -n "$(A)" ] && [ -n "$(B)" ] || { echo "usage: make bench-compare A=old.json B=new.json" \
	  "[FILTER=regex]"; exit 2; }
	bench/compare $(A) $(B) $(if $(value FILTER),'$(value FILTER)')

# Exits non-zero if the bench fails to run, a benchmark reports an error, the JSON lacks the
# roofline counters (of the mean, and of the fastest call) or a row lacks its footprint and roof
# (bench/check_roof); 10-20 seconds on 2 cores.
bench-smoke: build
	$(BENCH_BIN) --table $(BENCH_SMOKE_ARGS) --benchmark_out=$(BUILD)/bench-smoke.json \
	  --benchmark_out_format=json
	@for c in pct_roofline best_pct_roofline; do grep -q "\"$$c\"" $(BUILD)/bench-smoke.json || \
	  { echo "simdgrad: bench-smoke: no $$c in $(BUILD)/bench-smoke.json"; exit 1; }; done
	bench/check_roof $(BUILD)/bench-smoke.json
	bench/compare $(BUILD)/bench-smoke.json $(BUILD)/bench-smoke.json > $(BUILD)/bench-smoke.txt
	@tail -n 1 $(BUILD)/bench-smoke.txt

# Builds every example and runs each briefly: the training ones for one epoch on 2000 images
# (the full runs: build/examples/mlp_fashion 5, cnn_fashion 5), the MPI ones on 2 ranks when
# simdgrad_mpi was built.
examples: build
	cmake --build $(BUILD) --target simdgrad_examples
	$(BUILD)/examples/backend_only
	$(BUILD)/examples/readme_example
	SIMDGRAD_THREADS=1 $(BUILD)/examples/profile_mlp
	$(BUILD)/examples/mlp_fashion 1 2000
	$(BUILD)/examples/cnn_fashion 1 2000
	@if [ -x $(BUILD)/examples/mlp_fashion_dist ]; then set -x; \
	  $(DIST_MPIRUN) -np 2 $(BUILD)/examples/mlp_fashion_dist 1 2000 && \
	  $(DIST_MPIRUN) -np 2 $(BUILD)/examples/cnn_fashion_dist 1 2000; fi

# As root into /usr/local, ldconfig follows, so the loader finds the new libsimdgrad.so.N at once.
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)
	@if [ "$$(id -u)" = 0 ] && [ "$(abspath $(PREFIX))" = /usr/local ] && command -v ldconfig >/dev/null; then \
	  echo "simdgrad: ldconfig"; ldconfig; fi

# ---- The ABI (abi/check.sh) --------------------------------------------------------------------
# libabigail reads the types from DWARF, so the shared library is built once more with -g, at -O0
# (the ABI does not depend on the optimisation level, and it compiles in half a minute), library
# only. ABI_BASE_REF=<git revision> also compares with the baseline at that revision (catches a
# baseline regenerated over a break without a new SONAME). The baseline is x86-64's.
ABI_BUILD ?= build-abi
ABI_BASE_REF ?=
ABI_FLAGS := -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSIMDGRAD_WERROR=$(WERROR) -DSIMDGRAD_BUILD_TESTS=OFF \
             -DSIMDGRAD_BUILD_BENCH=OFF -DSIMDGRAD_BUILD_EXAMPLES=OFF

abi-build: deps
	cmake -S . -B $(ABI_BUILD) $(ABI_FLAGS)
	cmake --build $(ABI_BUILD) -j $(JOBS) --target simdgrad

abi-check: abi-build
	sh abi/check.sh check $(ABI_BUILD)/libsimdgrad.so $(ABI_BASE_REF)

abi-baseline: abi-build
	sh abi/check.sh baseline $(ABI_BUILD)/libsimdgrad.so

# Tracked and new (not ignored) C/C++ sources, .inc kernel templates included; build folders
# and ignored files are left alone.
SOURCES = $(wildcard $(shell git ls-files --cached --others --exclude-standard -- '*.c' '*.h' '*.cc' '*.inc' \
            2>/dev/null || find . -path './build*' -prune -o \( -name '*.c' -o -name '*.h' -o -name '*.cc' \
            -o -name '*.inc' \) -print))

format: format-deps
	$(CLANG_FORMAT) -i $(SOURCES)

format-check: format-deps
	@bad=""; for f in $(SOURCES); do \
	  $(CLANG_FORMAT) --dry-run --Werror "$$f" >/dev/null 2>&1 || bad="$$bad $$f"; \
	done; \
	if [ -n "$$bad" ]; then \
	  echo "simdgrad: not formatted (see: $(CLANG_FORMAT) --dry-run FILE; fix: make format):"; \
	  for f in $$bad; do echo "  $$f"; done; exit 1; \
	fi; echo "simdgrad: all $(words $(SOURCES)) C/C++ sources are clang-formatted"

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(CLANG_BUILD) $(TSAN_BUILD) $(ABI_BUILD) $(FUZZ_BUILD)
