#!/usr/bin/env bash
# The CUDA backend's checks on a GPU machine (issue 22): builds Kindle with CUDA (OpenBLAS as the
# CPU BLAS: such machines have no MKL), then runs the CUDA tests (the op database on cuda
# against cpu, autograd and optimizer steps on cuda, the allocator and streams on the real
# device) and the side-by-side benchmarks, writing everything into OUTDIR:
#   summary.txt (the verdicts), build.log, smoke.log (gdb.log), pytest.log, coverage.jsonl (per op: samples matched,
#   samples without a CUDA kernel, failures), bench.md.
# Needs on the machine: nvcc + cuBLAS, CMake, ninja, nanobind, numpy, pytest, pyyaml, PyTorch with
# CUDA (the benchmark's peer); scipy-openblas32 installed or its wheel in .whl/.
#   bash scripts/gpu_check.sh OUTDIR
set -uo pipefail
OUT=${1:?usage: scripts/gpu_check.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc)}
start=$SECONDS
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"
say "gpu_check $(date -u +%Y-%m-%dT%H:%MZ) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"

if ! $PY -c "import scipy_openblas32" 2>/dev/null; then
  if ls .whl/scipy_openblas32-*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --target /tmp/kindle-site .whl/scipy_openblas32-*.whl
    export PYTHONPATH=/tmp/kindle-site${PYTHONPATH:+:$PYTHONPATH}
  else
    $PY -m pip install -q scipy-openblas32 || { say "FAIL: no OpenBLAS (scipy-openblas32) available"; exit 1; }
  fi
fi

# The C++ runtime loaded at run time (the system's libstdc++, which Python and NumPy load first)
# must be the one the compiler built against: a compiler of its own prefix (the GPU image's
# /opt/gcc) gave objects whose stream formatting crashed against the system's library. Prefer
# the system compiler; otherwise put the compiler's own runtime first on the library path.
for cxx in /usr/bin/g++ /usr/bin/g++-13 /usr/bin/g++-14; do
  if [ -x "$cxx" ]; then export CXX=$cxx; break; fi
done
export CXX=${CXX:-$(command -v g++)} CUDAHOSTCXX=${CXX:-$(command -v g++)}
rt=$(dirname "$($CXX -print-file-name=libstdc++.so.6)")
case "$rt" in
  /usr/lib*|/lib*|.) ;;
  *) export LD_LIBRARY_PATH=$rt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
esac
say "C++ compiler: $CXX ($($CXX -dumpfullversion)); its runtime: $rt"

say "== build (KINDLE_CUDA=ON, KINDLE_BLAS=openblas, $JOBS jobs)"
if ! { cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKINDLE_CUDA=ON -DKINDLE_BLAS=openblas \
         -DKINDLE_BUILD_PYTHON=ON -DKINDLE_BUILD_TESTS=OFF -DPython_EXECUTABLE="$(command -v $PY)" &&
       cmake --build build/gpu -j "$JOBS"; } > "$OUT/build.log" 2>&1; then
  grep -m 20 -E "error|Error" "$OUT/build.log" | tee -a "$OUT/summary.txt"
  say "FAIL: build ($((SECONDS - start)) s)"
  exit 1
fi
say "build ok ($((SECONDS - start)) s); libkindle links: $(ldd build/gpu/libkindle.so | grep -oE 'lib(cudart|cublas|stdc\+\+|scipy_openblas)[^ ]*' | tr '\n' ' ')"

say "C++ runtime symbols defined inside libkindle (must be 0): $(nm -C build/gpu/libkindle.so | grep -cE ' [TW] .*std::(ostream|basic_ostream|locale|codecvt)')"

PKG=build/gpu/pypkg
rm -rf "$PKG" && mkdir -p "$PKG"
cp -r python/kindle "$PKG/kindle"
rm -f "$PKG"/kindle/_C*.so "$PKG"/kindle/libkindle.so
cp build/gpu/_C*.so build/gpu/libkindle.so "$PKG/kindle/"
export PYTHONPATH=$PWD/$PKG${PYTHONPATH:+:$PYTHONPATH}
$PY -c "import kindle; assert kindle.cuda.is_available(), 'kindle sees no GPU'; print('kindle sees', kindle.cuda.get_device_name(0))" 2>&1 | tee -a "$OUT/summary.txt"
$PY -c "
import kindle
try:
    kindle.ones(2).view(3)
except RuntimeError as e:
    print('error messages format numbers:', e)
print(kindle.ones(2, device='cuda'))" 2>&1 | tail -n 3 | tee -a "$OUT/summary.txt"

say "== scripts/gpu_smoke.py (a crash is rerun under cuda-gdb for its native stack)"
timeout 60 $PY -X faulthandler scripts/gpu_smoke.py > "$OUT/smoke.log" 2>&1
src=$?
tail -n 3 "$OUT/smoke.log" | tee -a "$OUT/summary.txt"
if [ $src -ne 0 ] && command -v cuda-gdb >/dev/null; then
  timeout 40 cuda-gdb -q -batch -ex run -ex bt --args $PY scripts/gpu_smoke.py > "$OUT/gdb.log" 2>&1
  grep -m 30 -E "^#[0-9]+" "$OUT/gdb.log" | cut -c1-240 | tee -a "$OUT/summary.txt"
fi


say "== benchmarks/bench_cuda.py"
timeout 60 $PY benchmarks/bench_cuda.py --out "$OUT/bench.md" > "$OUT/bench.log" 2>&1
say "bench exit $? ($((SECONDS - start)) s)"
cat "$OUT/bench.md" >> "$OUT/summary.txt" 2>/dev/null || tail -n 20 "$OUT/bench.log" >> "$OUT/summary.txt"

say "== tests/python/test_cuda.py (8 workers: a crash loses one test, not the run)"
rm -f "$OUT/coverage.jsonl"
KINDLE_CUDA_REPORT="$OUT/coverage.jsonl" timeout 120 $PY -m pytest -q -rf -n 8 -p no:cacheprovider \
  tests/python/test_cuda.py > "$OUT/pytest.log" 2>&1
rc=$?
tail -n 40 "$OUT/pytest.log" | grep -E "passed|failed|FAILED|error" | tail -n 30 | tee -a "$OUT/summary.txt"
say "pytest exit $rc ($((SECONDS - start)) s)"
if [ -f "$OUT/coverage.jsonl" ]; then
  $PY - "$OUT/coverage.jsonl" <<'EOF' | tee -a "$OUT/summary.txt"
import json, sys
c = {d["op"]: d for d in map(json.loads, open(sys.argv[1]))}
ops = len(c)
full = sum(1 for v in c.values() if v["matched"] and not v["no_cuda_kernel"] and not v["failed"])
some = sum(1 for v in c.values() if v["matched"])
print(f"op database on cuda: {ops} ops; {full} with every sample matching cpu, {some} with at least one; "
      f"{sum(v['matched'] for v in c.values())} samples matched, "
      f"{sum(v['no_cuda_kernel'] for v in c.values())} without a CUDA kernel, {sum(v['failed'] for v in c.values())} failed")
EOF
fi
exit $rc
