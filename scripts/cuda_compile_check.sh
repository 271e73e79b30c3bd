#!/usr/bin/env bash
# Compiles and links the CUDA backend on a machine without a GPU (nor a CUDA toolkit): nvcc, the
# CUDA runtime, CCCL and cuBLAS come from NVIDIA's PyPI wheels, unpacked into a prefix that
# looks like a toolkit. Catches compile and link errors in csrc/cuda/ before a GPU machine is
# lent; `import kindle` then reports CUDA built but no device. Not part of the test command
# (the cuBLAS wheel alone is ~450 MB); scripts/gpu_check.sh runs the real thing on a GPU.
#   bash scripts/cuda_compile_check.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
BUILD=${1:-build/cuda-compile}
PREFIX=${CUDA_WHEELS_PREFIX:-/tmp/kindle-cuda-wheels}
CU=$PREFIX/nvidia/cu13
if [ ! -x "$CU/bin/nvcc" ]; then
  mkdir -p "$PREFIX/dl"
  $PY -m pip download -q --no-deps -d "$PREFIX/dl" "nvidia-cuda-nvcc==13.0.*" "nvidia-cuda-runtime==13.0.*" \
    "nvidia-cuda-cccl==13.0.*" "nvidia-nvvm==13.0.*" "nvidia-cuda-crt==13.0.*" "nvidia-cublas==13.*"
  for w in "$PREFIX"/dl/*.whl; do (cd "$PREFIX" && unzip -q -o "$w" 'nvidia/*'); done
  # the layout nvcc and CMake's FindCUDAToolkit expect: lib64 beside bin, unversioned .so names
  ln -sfn lib "$CU/lib64"
  for l in cudart cublas cublasLt; do ln -sf "lib$l.so.13" "$CU/lib/lib$l.so"; done
fi
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKINDLE_CUDA=ON -DKINDLE_BUILD_PYTHON=ON \
  -DKINDLE_BUILD_TESTS=OFF -DPython_EXECUTABLE="$(command -v $PY)" -DCMAKE_CUDA_COMPILER="$CU/bin/nvcc" \
  -DCUDAToolkit_ROOT="$CU" >/dev/null
cmake --build "$BUILD"
PKG=$BUILD/pypkg
rm -rf "$PKG" && mkdir -p "$PKG" && cp -r python/kindle "$PKG/kindle"
rm -f "$PKG"/kindle/_C*.so "$PKG"/kindle/libkindle.so
cp "$BUILD"/_C*.so "$BUILD"/libkindle.so "$PKG/kindle/"
PYTHONPATH=$PKG $PY -c "
import kindle
assert kindle._C._cuda_is_built()
print('CUDA backend compiled and linked; devices here:', kindle.cuda.device_count())"
PYTHONPATH=$PKG $PY -m pytest -q -p no:cacheprovider tests/python/test_cuda.py
