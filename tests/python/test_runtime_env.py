"""The runtime's process-level behaviour (issue 14): `import kindle` leaves the environment as
it found it, and set_num_threads applies to every thread of the process, as torch's does."""
import os
import subprocess
import sys
import threading

import kindle


def test_import_leaves_the_environment_alone():
    code = "import os; before = dict(os.environ); import kindle; assert dict(os.environ) == before, " \
           "set(os.environ) ^ set(before); print('ok')"
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_set_num_threads_is_process_wide():
    before = kindle.get_num_threads()
    try:
        kindle.set_num_threads(1)
        seen = []
        t = threading.Thread(target=lambda: seen.append(kindle.get_num_threads()))
        t.start()
        t.join()
        assert seen == [1]
        kindle.set_num_threads(2)
        t = threading.Thread(target=lambda: seen.append(kindle.get_num_threads()))
        t.start()
        t.join()
        assert seen == [1, 2]
    finally:
        kindle.set_num_threads(before)


def test_thread_count_default_is_not_taken_from_a_limited_thread():
    """A small factorisation limits its own thread to one; the process's default stays OpenMP's."""
    code = ("import kindle; kindle.linalg.cholesky(kindle.tensor([[4., 1.], [1., 3.]])); "
            "print(kindle.get_num_threads())")
    env = dict(os.environ, OMP_NUM_THREADS="3")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "3", (r.stdout, r.stderr[-2000:])


# ---- the CPU kernels' instruction set (kindle.backends.cpu.get_cpu_capability)

_ORDER = ["DEFAULT", "AVX2", "AVX512"]

# The same computations under each set: transcendental functions (libmvec's vector entry points,
# the AVX2 tanh), reductions, Kindle's own GEMM and a convolution, float16 conversions, random
# numbers from a seed; printed as a checksum per result.
_PROGRAM = r"""
import sys, kindle
x = kindle.linspace(-4, 4, 4099)
h = kindle.linspace(-2, 2, 777, dtype=kindle.float16)
kindle.manual_seed(0)
a, b = kindle.randn(67, 45), kindle.randn(45, 33)
img, w = kindle.randn(2, 3, 17, 19), kindle.randn(4, 3, 3, 3)
results = {
    "exp": x.exp(), "tanh": x.tanh(), "erf": x.erf(), "sigmoid": x.sigmoid(), "gelu": kindle.nn.functional.gelu(x),
    "softmax": x.reshape(-1, 1).expand(-1, 3).softmax(0), "sum": x.sum().reshape(1), "std": x.std().reshape(1),
    "mm": a @ b, "conv": kindle.nn.functional.conv2d(img, w, padding=1), "half": (h * 3).float(),
    "normal": kindle.randn(1000), "uniform": kindle.rand(1000),
}
print(kindle.backends.cpu.get_cpu_capability())
for k, v in results.items():
    print(k, " ".join(repr(float(t)) for t in v.double().flatten()[::7].tolist()))
"""


def _run_under(cap):
    env = dict(os.environ)
    env.pop("ATEN_CPU_CAPABILITY", None)
    if cap is None:
        env.pop("KINDLE_CPU_CAPABILITY", None)
    else:
        env["KINDLE_CPU_CAPABILITY"] = cap
    r = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    return lines[0], {ln.split(" ", 1)[0]: [float(v) for v in ln.split(" ", 1)[1].split()] for ln in lines[1:]}, r.stderr


def test_cpu_capability_is_chosen_at_load_and_lowered_by_the_environment():
    best, base_results, _ = _run_under(None)
    assert best in _ORDER
    assert kindle.backends.cpu.get_cpu_capability() in _ORDER
    for cap in ("default", "avx2", "avx512"):
        got, results, _ = _run_under(cap)
        # the environment lowers the choice, never raises it above what the CPU has
        assert got == _ORDER[min(_ORDER.index(cap.upper()), _ORDER.index(best))]
        for k, vals in results.items():
            ref = base_results[k]
            assert len(vals) == len(ref), k
            # the same results within float32 rounding (the sets differ in FMA contraction and in
            # the vector math routines' last bits)
            tol = 2e-3 if k in ("half",) else 1e-4
            bad = [(i, v, r) for i, (v, r) in enumerate(zip(vals, ref)) if abs(v - r) > tol * (1 + abs(r))]
            assert not bad, f"{k} under {cap}: {bad[:5]}"


def test_unknown_cpu_capability_is_reported_and_ignored():
    best, _, _ = _run_under(None)
    got, _, err = _run_under("sse9")
    assert got == best
    assert "KINDLE_CPU_CAPABILITY=sse9" in err
