# gpool: the entry points. `make demo` and `make test` work on a fresh Debian 12 as root.
BUILD       ?= build
BUILD_ASAN  ?= build-asan
BUILD_FUZZ  ?= build-fuzz
BUILD_TYPE  ?= RelWithDebInfo
JOBS        ?= $(shell nproc)
FUZZ_SECONDS ?= 60
CTEST_ARGS  ?=

.PHONY: all build deps test unit system demo bench sanitize fuzz clean

all: build

deps:
	deploy/install-deps.sh

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build $(BUILD) -j$(JOBS)

# every test: unit tests and the system tests (which start multi-host clusters)
test: deps build
	ctest --test-dir $(BUILD) --output-on-failure $(CTEST_ARGS)

# only the unit tests, or only the system tests (no deps step: for a quick loop)
unit: build
	ctest --test-dir $(BUILD) --output-on-failure -LE system $(CTEST_ARGS)
system: build
	ctest --test-dir $(BUILD) --output-on-failure -L system $(CTEST_ARGS)

demo: deps build
	GPOOL_BIN_DIR=$(CURDIR)/$(BUILD)/bin deploy/demo.sh

bench: build
	@set -e; found=0; for b in bench/*.sh; do \
		[ -x "$$b" ] || continue; found=1; \
		echo "== $$b"; GPOOL_BIN_DIR=$(CURDIR)/$(BUILD)/bin "$$b"; \
	done; [ $$found = 1 ] || echo "bench: no bench/*.sh yet"

sanitize: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DGPOOL_SANITIZE=ON
	cmake --build $(BUILD_ASAN) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --test-dir $(BUILD_ASAN) --output-on-failure $(CTEST_ARGS)

# libFuzzer harnesses (tests/fuzz), each run FUZZ_SECONDS on its saved corpus
fuzz: deps
	@if [ ! -f tests/fuzz/CMakeLists.txt ]; then echo "fuzz: no tests/fuzz yet"; exit 0; fi; \
	set -e; \
	CC=clang cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPOOL_FUZZ=ON; \
	cmake --build $(BUILD_FUZZ) -j$(JOBS); \
	for f in $(BUILD_FUZZ)/bin/fuzz_*; do \
		[ -x "$$f" ] || continue; n=$$(basename $$f); \
		mkdir -p $(BUILD_FUZZ)/corpus/$$n; \
		seeds=""; [ -d tests/fuzz/corpus/$$n ] && seeds=tests/fuzz/corpus/$$n; \
		echo "== $$n ($(FUZZ_SECONDS) s)"; \
		$$f -max_total_time=$(FUZZ_SECONDS) $(BUILD_FUZZ)/corpus/$$n $$seeds; \
	done

clean:
	-@[ -x deploy/gpool-cluster ] && deploy/gpool-cluster stop >/dev/null 2>&1 || true
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
