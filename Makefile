# gpool: the entry points. `make demo` and `make test` work on a fresh Debian 12 as root.
BUILD       ?= build
BUILD_ASAN  ?= build-asan
BUILD_FUZZ  ?= build-fuzz
BUILD_TYPE  ?= RelWithDebInfo
JOBS        ?= $(shell nproc)
FUZZ_SECONDS ?= 60
CTEST_ARGS  ?=
# system tests side by side: SYSTEM_SLOTS network slots (1-4, tests/netslots.sh), each running
# one system test, and TEST_JOBS tests at once in all (the unit tests run beside them)
SYSTEM_SLOTS ?= 4
TEST_JOBS   ?= $(shell echo $$(($(SYSTEM_SLOTS) + 1)))
NETSLOTS    = $(abspath $(BUILD))/netslots.json
CTEST_PAR   = -j$(TEST_JOBS) --resource-spec-file $(NETSLOTS)

.PHONY: all build deps test unit system style demo bench bench-comm bench-train sanitize \
	sanitize-build sanitize-unit fuzz clean deb test-images

all: build

deps:
	deploy/install-deps.sh

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build $(BUILD) -j$(JOBS)

# Debian packages (gpool-scheduler, gpool-worker, gpool-client, gpool-gateway, ...) into $(BUILD)/ (deploy/deb)
deb: build
	cd $(BUILD) && cpack -G DEB

# every test: unit tests and the system tests (which start multi-host clusters, SYSTEM_SLOTS
# of them side by side: docs/testing.md), then the unit tests and the fuzz corpora again under
# the sanitizers (sanitize-unit)
test: deps build test-images $(NETSLOTS)
	ctest --test-dir $(BUILD) --output-on-failure $(CTEST_PAR) $(CTEST_ARGS)
	$(MAKE) sanitize-unit

$(NETSLOTS): FORCE
	@mkdir -p $(BUILD)
	tests/netslots.sh $(SYSTEM_SLOTS) >$@
.PHONY: FORCE
FORCE:

# the container tests' images (debootstrap, once per machine, cached): built before the tests,
# not inside their time limits; never fails (a test whose image is missing skips)
test-images: deps
	tests/system/build-images.sh

# only the unit tests, or only the system tests (no deps step: for a quick loop)
unit: build
	ctest --test-dir $(BUILD) --output-on-failure -LE system $(CTEST_ARGS)
system: build $(NETSLOTS)
	ctest --test-dir $(BUILD) --output-on-failure -L system $(CTEST_PAR) $(CTEST_ARGS)
# only the style checks: clang-format, clang-tidy (tests/style)
style: build
	ctest --test-dir $(BUILD) --output-on-failure -L style $(CTEST_ARGS)

demo: deps build
	GPOOL_BIN_DIR=$(CURDIR)/$(BUILD)/bin deploy/demo.sh

bench: build
	GPOOL_BIN_DIR=$(CURDIR)/$(BUILD)/bin bench/sched/throughput.sh

# allreduce side by side (gcomm, Open MPI, gloo, ring ceiling) on 2, 3, 4 netns hosts; root
bench-comm: build
	GPOOL_DEPS_EXTRA="iperf3 python3-torch python3-matplotlib" deploy/install-deps.sh
	GPOOL_BIN_DIR=$(CURDIR)/$(BUILD)/bin bench/comm/bench-all.sh 2 3 4

# gtrain against PyTorch DDP (gloo) on 1-4 netns hosts, digits MLP; root
bench-train: build
	GPOOL_DEPS_EXTRA="python3-torch" deploy/install-deps.sh
	GPOOL_BIN_DIR=$(CURDIR)/$(BUILD)/bin bench/train/gtrain-vs-ddp.sh 1 2 3 4

# address + undefined-behaviour sanitizers: a second tree, $(BUILD_ASAN) (Debug: -O0 builds
# fastest; no GPU backends: kernels/ keeps its own flags, so they would not be sanitized)
SAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp
# what `make test` runs there: the unit tests and the fuzz corpora replayed (the system tests,
# the style checks and the kernels' own tests need no second run). Left out (SAN_SKIP):
# libgcomm's collectives on 1, 2, 4 and 5 ranks, its kill tests and Open MPI's run (3-5x
# slower under ASan: 800 s of the 880 s this run took; tcp on 3 ranks and ucx on 2 stay),
# unit.install.pkgconfig (it links a program without the ASan runtime against the
# instrumented library, which ASan refuses to start) and unit.install.standalone-train (its
# own uninstrumented build of train/: nothing of the ASan tree runs in it).
SAN_TESTS ?= ^(unit|fuzz)\.
SAN_SKIP ?= ^unit\.(comm\.(tcp\.np[1245]|ucx\.np[1345]|tcp\.kill|ucx\.kill|mpi\..*)|install\.(pkgconfig|standalone-train))$$
sanitize-build:
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DGPOOL_SANITIZE=ON \
		-DGK_WITH_CUDA=OFF -DGK_WITH_HIP=OFF
	cmake --build $(BUILD_ASAN) -j$(JOBS)
sanitize-unit: sanitize-build
	$(SAN_ENV) ctest --test-dir $(BUILD_ASAN) --output-on-failure -R '$(SAN_TESTS)' \
		-E '$(SAN_SKIP)' -LE system $(CTEST_ARGS)
# every test under the sanitizers, the system tests included
sanitize: deps sanitize-build
	$(SAN_ENV) ctest --test-dir $(BUILD_ASAN) --output-on-failure $(CTEST_ARGS)

# libFuzzer harnesses (tests/fuzz), each run FUZZ_SECONDS on its saved corpus
fuzz: deps
	BUILD_FUZZ=$(BUILD_FUZZ) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh

clean:
	-@[ -x deploy/gpool-cluster ] && deploy/gpool-cluster stop >/dev/null 2>&1 || true
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
