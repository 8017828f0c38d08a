# Thin wrapper over CMake.  The two set-up commands of the README:
#   make bench   build, then run the main job (weft bench allreduce on shared memory)
#   make test    build, then run every test (ctest)
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build bench test install sanitize tsan clang fuzz clean

all: build

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

bench: build
	$(BUILD)/weft bench allreduce --np 4 --check

test:
	bash tests/deps.sh
	$(MAKE) build CMAKE_FLAGS="-DWEFT_REQUIRE_MPI=ON $(CMAKE_FLAGS)"
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

install: build
	cmake --install $(BUILD)

# ASan + UBSan (LeakSanitizer included) over the data, error and death tests.
sanitize:
	bash tests/deps.sh
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=address,undefined -DWEFT_WERROR=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -L '^asan$$'
	# Open MPI leaks in its own plugins, unloaded before LeakSanitizer
	# reports (so no suppression can name them): memory errors only here.
	# The drop-in test preloads an instrumented library, hence the link order.
	cd build-asan && ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -L '^asan-mpi$$'

# ThreadSanitizer over the shared-memory transport.
tsan:
	bash tests/deps.sh
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -L '^tsan$$'

# The build with clang (Debian's), warnings as errors, and the unit, error
# and data tests it must pass.
clang:
	bash tests/deps.sh clang
	CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release -DWEFT_WERROR=ON
	cmake --build build-clang -j $(JOBS)
	cd build-clang && ctest --output-on-failure -j $(JOBS) -L '^(unit|errors)$$'
	cd build-clang && ctest --output-on-failure -j $(JOBS) -L '^tsan$$'

# libFuzzer (clang) with ASan+UBSan over the parameter parser, the
# environment, weft bench's options, the tuning tables and the simulator's
# GOAL and preset readers, FUZZ_SECONDS each, starting from
# fuzz/corpus (new inputs go to build-fuzz/corpus, not into the tree); an
# input that takes over 10 s is a failure (a hang), not a 20-minute wait.
FUZZ_SECONDS ?= 30
fuzz:
	bash tests/deps.sh fuzzer
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DWEFT_FUZZ=ON \
	  -DWEFT_SANITIZE=address,undefined -DBUILD_TESTING=OFF
	cmake --build build-fuzz -j $(JOBS) --target fuzz_params fuzz_env fuzz_bench_opts fuzz_tuning \
	  fuzz_goal fuzz_preset fuzz_noise
	for f in params env bench_opts tuning goal preset noise; do \
	  mkdir -p build-fuzz/corpus/$$f && \
	  UBSAN_OPTIONS=halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 build-fuzz/fuzz_$$f \
	    -max_total_time=$(FUZZ_SECONDS) -max_len=256 -timeout=10 -print_final_stats=1 -close_fd_mask=3 \
	    build-fuzz/corpus/$$f fuzz/corpus/$$f || exit 1; \
	done

clean:
	rm -rf $(BUILD) build-asan build-tsan build-clang build-fuzz
