# Thin wrapper over CMake. A user types `make demo` and `make test`; everything else follows from them.
BUILD_DIR ?= build
PRESET    ?= release
JOBS      ?= $(shell nproc)
NP        ?= 4
BENCH_DIR ?= $(BUILD_DIR)/bench
BENCH_FLAGS ?=

FUZZ_SECONDS ?= 30

.PHONY: deps deps-build configure build test demo bench fuzz sanitize format clean image

# Debian's packages, then PyPI's torch 2.x in a venv of its own (scripts/install-torch2.sh; exit 2,
# PyPI out of reach, leaves the build without torch 2.x and says so; TUTTI_TORCH2=skip for none),
# and TensorFlow (CPU) in another for the Python API's tests (scripts/install-tf.sh; TUTTI_TF=skip),
# and Open MPI 5, MPICH 5 and Intel MPI in one venv each (scripts/install-mpis.sh; TUTTI_MPIS=skip).
deps: deps-build
	@bash scripts/install-torch2.sh || [ $$? -eq 2 ]
	@bash scripts/install-tf.sh || [ $$? -eq 2 ]
	@bash scripts/install-mpis.sh || [ $$? -eq 2 ]

# What the build itself needs (Debian's packages only): all `make demo` installs.
deps-build:
	@bash scripts/install-deps.sh

# DEPS=deps-build configures with only Debian's packages (what `make demo` does).
DEPS ?= deps
configure: $(DEPS)
	@echo "make: configuring $(BUILD_DIR)/ (cmake --preset $(PRESET))"
	@mkdir -p $(BUILD_DIR)
	@cmake --preset $(PRESET) >$(BUILD_DIR)/configure.log || { cat $(BUILD_DIR)/configure.log; exit 1; }
	@sed -n 's/^-- tutti: /make: /p' $(BUILD_DIR)/configure.log

build: configure
	@echo "make: building with $(JOBS) jobs (from an empty ccache about 15 minutes on 2 CPUs)"
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

# One epoch of Fashion-MNIST on NP ranks with the libtorch trainer (examples/fashion_mnist), or
# the plain tutti-demo when libtorch was not found (no fashion_mnist was built).
demo:
	@echo "demo: the first run installs Debian's packages and builds tutti (about 15-20 minutes on"
	@echo "demo: 2 CPUs), then trains for about a minute; later runs only train"
	@$(MAKE) --no-print-directory build DEPS=deps-build
	@if [ -x $(BUILD_DIR)/bin/fashion_mnist ]; then \
	  $(BUILD_DIR)/bin/tuttirun -np $(NP) -- $(BUILD_DIR)/bin/fashion_mnist --epochs 1; \
	else \
	  echo "demo: libtorch was not found at configure time (Debian: libtorch-dev), so no"; \
	  echo "demo: fashion_mnist trainer was built; running the allreduce demo instead"; \
	  $(BUILD_DIR)/bin/tuttirun -np $(NP) -- $(BUILD_DIR)/bin/tutti-demo; \
	fi

# tutti against Open MPI and Gloo (whichever are installed), interleaved in one run per pair; writes
# $(BENCH_DIR)/*.txt, *.csv and allreduce.svg/.png. See docs/PERFORMANCE.md.
bench: build
	bash bench/sweep.sh $(BUILD_DIR) $(BENCH_DIR) $(BENCH_FLAGS)

# libFuzzer (clang, ASan+UBSan) on every tests/fuzz/<name>_fuzz.cc for FUZZ_SECONDS each; CI runs it
# before the tests.
fuzz: deps
	bash scripts/fuzz.sh $(BUILD_DIR)/fuzz $(FUZZ_SECONDS)

# ASan + UBSan over the integration tests (build-dev/), TSan over a multi-threaded subset
# (build-tsan/); CI runs it after the tests. See docs/TESTING.md.
sanitize: deps
	JOBS=$(JOBS) bash scripts/sanitize.sh all

# The images (docker/Dockerfile's targets launcher, worker, worker-torch2) with docker or podman;
# fails, naming what, where none could be built. IMAGE_PREFIX=registry/path/ PUSH=1 to push,
# IMAGES="launcher worker" for some. See docs/KUBERNETES.md.
image:
	@bash scripts/build-images.sh

format:
	@git ls-files '*.cc' '*.hpp' '*.h' '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
