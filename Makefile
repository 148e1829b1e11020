# Thin wrapper over Meson. `make run` builds and simulates the default
# scenario; `make check` runs the whole test suite.
BUILD ?= build
ASAN_BUILD ?= build-asan
SCENARIO ?= scenarios/default.yaml
MESON_TEST = meson test --print-errorlogs --num-processes 2

.PHONY: all deps build run check check-asan check-valgrind bench plots validate validate-check gain-table format format-check fuzz clean

all: build

deps:
	sh build-aux/deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

run: build
	$(BUILD)/src/cli/tpsim run $(SCENARIO)

check: build
	$(MESON_TEST) -C $(BUILD)

# Unit tests under AddressSanitizer and UndefinedBehaviorSanitizer.
check-asan: deps
	[ -f $(ASAN_BUILD)/build.ninja ] || meson setup $(ASAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false
	ninja -C $(ASAN_BUILD)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    $(MESON_TEST) -C $(ASAN_BUILD)

check-valgrind: build
	$(MESON_TEST) -C $(BUILD) --setup valgrind

# Render every figure definition of plots/ (docs/figures.md) into PLOTS_DIR,
# each as PNG, SVG (real text) and PDF unless its formats: says otherwise.
PLOTS_DIR ?= $(BUILD)/plots
plots: build
	$(BUILD)/src/cli/tpsim plot plots/*.yaml --output-dir $(PLOTS_DIR)

# Every dataset of the calibration set through the cost models
# (docs/validation.md): the recorded figures (docs/validation.json), the
# page's table and its residual plots (docs/img/validation-*.png).
validate: build
	$(BUILD)/src/cli/tpsim validate --format json --output docs/validation.json \
	    --doc docs/validation.md --plot-dir docs/img

# Fails when a dataset's p90 |error| grew by more than a point over
# docs/validation.json (run by .ci/run).
validate-check: build
	sh build-aux/check-validation.sh $(BUILD)/src/cli/tpsim docs/validation.json

# Every preset's gain over megatron on every shipped scenario, into the
# generated block of docs/overlap-gains.md.
gain-table: build
	sh build-aux/gain-table.sh $(BUILD)/src/cli/tpsim docs/overlap-gains.md scenarios

bench: build
	meson test -C $(BUILD) --benchmark --verbose
	$(BUILD)/src/cli/tpsim bench

# Reformat the C sources by .clang-format (clang-format 14, installed by
# `deps.sh format`), or only list what would change. Neither is part of
# `check`.
FORMAT_SOURCES = find src tests -name '*.[ch]' -o -name '*.cu'
format:
	sh build-aux/deps.sh format
	$(FORMAT_SOURCES) | sort | xargs clang-format -i

format-check:
	$(FORMAT_SOURCES) | sort | xargs clang-format --dry-run --Werror

# Run each fuzz target (tests/fuzz/meson.build) for FUZZ_SECONDS with
# libFuzzer, in its own clang build with ASan and UBSan (clang and libFuzzer
# installed by `deps.sh fuzz`; not part of `check`, which replays the corpus).
# New inputs go to $(FUZZ_BUILD)/corpus/TARGET, crashes and timeouts to
# $(FUZZ_BUILD)/crashes/; copy one that found a bug into tests/fuzz/corpus as
# its regression. FUZZ_JOBS > 1 runs that many processes per target.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= 1
# Every target of tests/fuzz/meson.build's fuzz_targets (held by the lint
# test fuzz-targets), seeded with the inputs its replay test reads.
FUZZ_TARGETS = $(shell sed -n "s/^  '\(fuzz-[a-z0-9-]*\)': .*/\1/p" tests/fuzz/meson.build)
FUZZ_SEEDS = tests/fuzz/corpus scenarios models plots sweeps tests/data/megatron \
	tests/data/nccl-tests
fuzz:
	sh build-aux/deps.sh fuzz
	[ -f $(FUZZ_BUILD)/build.ninja ] || CC=clang meson setup $(FUZZ_BUILD) -Dfuzzing=true \
	    -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link
	ninja -C $(FUZZ_BUILD) fuzz
	mkdir -p $(FUZZ_BUILD)/crashes
	for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	    echo "== $$t: $(FUZZ_SECONDS) s"; \
	    G_DEBUG=fatal-criticals ASAN_OPTIONS=detect_leaks=1 \
	    LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan-fonts.supp:print_suppressions=0 \
	    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    $(FUZZ_BUILD)/tests/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=30 \
	        -fork=$(FUZZ_JOBS) -ignore_crashes=0 -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_BUILD)/crashes/$$t- $(FUZZ_BUILD)/corpus/$$t \
	        $(FUZZ_SEEDS) || exit 1; \
	done

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
