# simdgrad's front door. CMake + Ninja do the building; this file installs what Debian lacks,
# configures, and runs the suites:
#
#   make test          build (Release) and run the whole test suite
#   make bench         build and run the default benchmark suite as a table (ARGS=... passes
#                      Google Benchmark flags through, e.g. ARGS=--benchmark_filter=exp)
#   make test-asan     the test suite built with AddressSanitizer, UBSan and LeakSanitizer
#   make examples      build and run the examples
#   make install       install into PREFIX (default /usr/local)
#   make format        clang-format -i every C/C++ source; make format-check only checks
#   make deps          install the Debian packages the build needs (as root), nothing else
#
# CI=true turns warnings into errors. SIMDGRAD_BACKEND=scalar|avx2|avx512 picks the backend the
# tests and benchmarks run on (default: the best this CPU supports).

BUILD ?= build
ASAN_BUILD ?= build-asan
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
            libbenchmark-dev libomp-dev
FORMAT_PACKAGES := clang-format
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

.PHONY: all build deps format-deps test test-asan bench examples install format format-check clean

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

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) $(ASAN_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	rm -rf $(ASAN_LOGS) && mkdir -p $(ASAN_LOGS)
	$(call run_ctest,$(ASAN_BUILD),$(ASAN_ENV),$(ASAN_LOGS))

bench: build
	$(BUILD)/bench/simdgrad_bench --table --benchmark_min_time=$(BENCH_MIN_TIME) $(ARGS)

examples: build
	cmake --build $(BUILD) --target simdgrad_examples
	$(BUILD)/examples/backend_only
	$(BUILD)/examples/readme_example

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

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
	rm -rf $(BUILD) $(ASAN_BUILD)
