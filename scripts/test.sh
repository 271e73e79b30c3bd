#!/usr/bin/env bash
# Runs every test of Kindle on a fresh machine: installs what the build and the tests need,
# then the C++ suite (GoogleTest via CTest) in a release build and again under AddressSanitizer
# and UndefinedBehaviorSanitizer, then the Python suite (pytest; compared against PyTorch).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
stage() { echo "== $1 (${SECONDS}s since start)"; }

# libgloo-dev: Gloo, the collective engine under kindle.distributed (without it, distributed is off);
# strace: the test that a save fsyncs its file and folder traces the system calls.
# The portability stage: Debian's aarch64 cross compiler, user-mode QEMU, and the target's libraries
# (OpenBLAS, SLEEF: its vector math there, GoogleTest) from Debian's arm64 packages.
if [ ! -f /usr/include/gtest/gtest.h ] || [ ! -f /usr/include/gloo/allreduce.h ] || ! command -v ninja >/dev/null \
    || ! command -v strace >/dev/null \
    || ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64 >/dev/null \
    || [ ! -f /usr/lib/aarch64-linux-gnu/openblas-openmp/libopenblas.so.0 ] || [ ! -f /usr/lib/aarch64-linux-gnu/libsleef.so ] \
    || [ ! -f /usr/lib/aarch64-linux-gnu/libgtest.a ] || [ ! -f /usr/lib/aarch64-linux-gnu/libgomp.so.1 ]; then
  (dpkg --add-architecture arm64 && apt-get update -qq \
    && apt-get install -y -qq libgtest-dev libgloo-dev ninja-build ccache strace \
         g++-aarch64-linux-gnu qemu-user libopenblas-openmp-dev:arm64 libsleef-dev:arm64 libgtest-dev:arm64 \
         libstdc++6:arm64 libgomp1:arm64) >/dev/null
fi
$PY -m pip install -q scikit-build-core nanobind mkl mkl-include nlohmann-json pyyaml numpy pytest hypothesis safetensors scikit-learn tqdm matplotlib tensorboard
# PyTorch is the reference in the tests (never a dependency); its tests skip where it is absent.
$PY -m pip install -q torch==2.13.0 || echo "note: torch==2.13.0 not installable here; torch comparisons will skip"

# One compiler cache for every build below: paths relative to the checkout, so the C++ release
# build reuses the Python package's objects (same flags, build/<wheel tag> and build/release);
# the same compiler name too (ccache hashes it: the package build calls g++, CMake's default c++).
export CCACHE_BASEDIR="$PWD" CC=gcc CXX=g++

stage "build and install the Python package"
$PY -m pip install -q --no-build-isolation .

stage "C++ tests (release)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v $PY)" >/dev/null
cmake --build build/release
ctest --test-dir build/release --output-on-failure

stage "C++ tests on aarch64 (cross-compiled, run under QEMU)"
# The portability proof: the library and its GoogleTest suite built for 64-bit Arm (baseline
# Armv8-A with NEON, OpenBLAS, SLEEF) and run under user-mode emulation. Only the C++ tests: the
# examples and the libtorch clients are not cross-built.
cmake -S . -B build/aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v $PY)" >/dev/null
cmake --build build/aarch64 --target kindle_tests
ctest --test-dir build/aarch64 --output-on-failure -R '^kindle_tests$'

stage "C++ tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
# The same build also makes a sanitized kindle._C for the Python stage below.
# (Its CPU kernels in the baseline x86-64 build only, which is then what the sanitized stages
# run: sanitized compiles are the slowest, and each kernel module is csrc/cpu/ once more.)
# -O1 -g1 (line tables: enough for the sanitizers' stack traces): the sanitized compile of the
# large generated files takes half the time of -O2 -g (autograd_ops.cpp: 72 s against 135 s here).
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKINDLE_SANITIZE=ON -DKINDLE_BUILD_PYTHON=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DKINDLE_CPU_ISAS= -DPython_EXECUTABLE="$(command -v $PY)" >/dev/null
cmake --build build/asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build/asan --output-on-failure

stage "Python tests"
$PY -m pytest -q tests/python

stage "Python op database with the CPU kernels forced to baseline x86-64 and to AVX2"
# (the full run above used the widest set this CPU has: kindle.backends.cpu.get_cpu_capability())
for cap in default avx2; do
  KINDLE_CPU_CAPABILITY=$cap $PY -m pytest -q -p no:cacheprovider tests/python/test_ops.py \
    tests/python/test_ops_consistency.py tests/python/test_runtime_env.py
done

stage "Python op database, differential fuzz and meta-device run (AddressSanitizer + UndefinedBehaviorSanitizer)"
# The sanitized extension beside a copy of the Python package; the interpreter (not built with
# ASan) gets the runtime preloaded. Leak checking is off: CPython's own allocations look leaked;
# huge requests return NULL (torch, the reference, allocates what the tests ask it to refuse).
ASAN_PKG=build/asan/pypkg
rm -rf "$ASAN_PKG" && mkdir -p "$ASAN_PKG"
cp -r python/kindle "$ASAN_PKG/kindle"
cp build/asan/_C*.so build/asan/libkindle.so "$ASAN_PKG/kindle/"
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
  PYTHONPATH="$ASAN_PKG" $PY -m pytest -q -p no:cacheprovider tests/python/test_ops.py tests/python/test_ops_consistency.py \
  tests/python/test_robustness.py tests/python/test_fuzz_differential.py tests/python/test_meta.py
stage "done"
