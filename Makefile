# Thin wrapper over CMake. A user types `make demo` and `make test`; everything else follows from them.
BUILD_DIR ?= build
PRESET    ?= release
JOBS      ?= $(shell nproc)
NP        ?= 4

.PHONY: deps configure build test demo bench format clean

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

demo: build
	$(BUILD_DIR)/bin/tuttirun -np $(NP) -- $(BUILD_DIR)/bin/tutti-demo

bench: build
	$(BUILD_DIR)/bin/tuttirun -np 2 -- $(BUILD_DIR)/bin/tutti-bench allreduce -b 8 -e 64M -f 8 -n 20 -w 5 -c 1

format:
	@git ls-files '*.cc' '*.hpp' '*.h' '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
