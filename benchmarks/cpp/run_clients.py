"""libtorch programs on Kindle and on libtorch, side by side (issue 19).

Builds each program of tests/cpp_clients/ twice from the same source: against Kindle through the
compatibility headers alone (compat/: <torch/torch.h> with `namespace torch = kindle;`) and against
the libtorch in the installed PyTorch wheel. Then runs the two builds alternately (A B A B), several
rounds per program and thread count, and prints the median time per epoch (each program prints
`epoch I seconds S loss L` lines and a final `result NAME VALUE`), the ratio kindle/libtorch and
both final results.

    python benchmarks/cpp/run_clients.py [--threads 1 2] [--rounds 3] [--markdown out.md]
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLIENTS = os.path.join(ROOT, "tests", "cpp_clients")
PROGRAMS = ["mnist", "dcgan", "regression", "custom_autograd", "pipeline"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def newer(exe, srcs):
    return os.path.exists(exe) and all(os.path.getmtime(exe) >= os.path.getmtime(s) for s in srcs)


def build_kindle(name, out_dir, kindle_build):
    kindle_build = os.path.abspath(kindle_build)
    exe = os.path.join(out_dir, f"{name}_kindle")
    src = os.path.join(CLIENTS, f"{name}.cpp")
    lib = os.path.join(kindle_build, "libkindle.so")
    if not os.path.exists(lib):
        sys.exit(f"no {lib}: build Kindle with CMake first (cmake -S . -B build && cmake --build build)")
    if not newer(exe, [src, lib]):
        print(f"building {exe}...", file=sys.stderr)
        run(["g++", "-std=c++20", "-O2", "-march=x86-64-v3", "-fopenmp", f"-I{ROOT}/compat", f"-I{ROOT}/include",
             f"-I{kindle_build}/generated", src, "-o", exe, f"-L{kindle_build}",
             *(["-lkindle_frontend"] if os.path.exists(os.path.join(kindle_build, "libkindle_frontend.so")) else []),
             "-lkindle",
             f"-Wl,-rpath,{kindle_build}", "-pthread"])
    return exe


def build_libtorch(name, out_dir):
    import torch  # noqa: F401  (only to find the wheel's include/ and lib/)
    t = os.path.dirname(torch.__file__)
    exe = os.path.join(out_dir, f"{name}_libtorch")
    src = os.path.join(CLIENTS, f"{name}.cpp")
    if not newer(exe, [src]):
        print(f"building {exe} against libtorch {torch.__version__}...", file=sys.stderr)
        abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
        run(["g++", "-std=c++17", "-O2", "-march=x86-64-v3", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", f"-I{t}/include",
             f"-I{t}/include/torch/csrc/api/include", src, "-o", exe, f"-L{t}/lib", "-ltorch", "-ltorch_cpu",
             "-lc10", f"-Wl,-rpath,{t}/lib"])
    return exe


def sample(exe, threads, extra):
    out = subprocess.run([exe, "--threads", str(threads), "--quiet", *extra], capture_output=True, text=True)
    epochs, result = [], None
    for line in out.stdout.splitlines():
        parts = line.split()
        if parts[:1] == ["epoch"] and len(parts) >= 4:
            epochs.append(float(parts[3]))
        elif parts[:1] == ["result"] and len(parts) >= 3:
            result = f"{parts[1]} {parts[2]}"
    if out.returncode != 0 or not epochs:
        raise RuntimeError(f"{exe} failed ({out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    # the first epoch pays for first touches of memory and caches: the median of the rest
    return statistics.median(epochs[1:] or epochs), result


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=3, help="alternating runs of each build")
    p.add_argument("--programs", nargs="+", default=PROGRAMS)
    p.add_argument("--kindle-build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build", "bench_clients"))
    p.add_argument("--markdown", help="also write the table to this file")
    args = p.parse_args(argv)
    os.makedirs(args.build_dir, exist_ok=True)

    lines = ["| program | threads | kindle ms/epoch | libtorch ms/epoch | kindle/libtorch | kindle result | libtorch result |",
             "|---|---:|---:|---:|---:|---|---|"]
    for name in args.programs:
        k_exe, t_exe = build_kindle(name, args.build_dir, args.kindle_build), build_libtorch(name, args.build_dir)
        extra = ["--data", os.path.join(args.build_dir, "mnist_data")] if name == "mnist" else []
        for nt in args.threads:
            k, t = [], []
            for _ in range(args.rounds):
                k.append(sample(k_exe, nt, extra))
                t.append(sample(t_exe, nt, extra))
            mk, mt = statistics.median(s for s, _ in k), statistics.median(s for s, _ in t)
            lines.append(f"| {name} | {nt} | {1e3 * mk:.2f} | {1e3 * mt:.2f} | {mk / mt:.2f} | {k[-1][1]} | {t[-1][1]} |")
            print(lines[-1], flush=True)
    table = "\n".join(lines)
    print("\n" + table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
