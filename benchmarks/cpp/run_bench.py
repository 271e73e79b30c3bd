"""Training steps in C++: Kindle's C++ front end against libtorch, side by side.

Builds bench_train_kindle.cpp (against the CMake build of libkindle in build/, or --kindle-build)
and bench_train_libtorch.cpp (against the libtorch shipped in the installed PyTorch wheel), then
runs the two programs alternately, several rounds per workload and thread count, and prints the
median time per training step and the ratio kindle/libtorch (below 1: Kindle is faster).

    python benchmarks/cpp/run_bench.py [--threads 1 2] [--rounds 5] [--markdown out.md]

Workloads (as benchmarks/bench_e2e.py): MLP 784-512-512-10, batch 128, SGD momentum 0.9; LeNet
on 1x28x28, batch 64, Adam. Each program times --reps samples of --steps steps after a warm-up
and reports the median sample; the table shows the median over rounds.
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FLAGS = ["-O2", "-march=x86-64-v3", "-fopenmp", "-Wno-init-list-lifetime"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def has_frontend(lib):
    """True when libkindle already contains the C++ front end (csrc/api)."""
    try:
        out = run(["nm", "-DC", lib]).stdout
    except (OSError, subprocess.CalledProcessError):
        return False
    return "kindle::nn::Module::state_dict" in out


def up_to_date(exe, srcs):
    return os.path.exists(exe) and all(os.path.getmtime(exe) >= os.path.getmtime(s) for s in srcs)


def build_kindle(build_dir, kindle_build):
    exe = os.path.join(build_dir, "bench_train_kindle")
    lib = os.path.join(kindle_build, "libkindle.so")
    if not os.path.exists(lib):
        sys.exit(f"no {lib}: build Kindle with CMake first (cmake -S . -B build && cmake --build build)")
    srcs = [os.path.join(HERE, "bench_train_kindle.cpp")]
    if not has_frontend(lib):  # the front end is not in the library yet: compile it in
        api = os.path.join(ROOT, "csrc", "api")
        srcs += sorted(os.path.join(api, f) for f in os.listdir(api) if f.endswith(".cpp"))
    if up_to_date(exe, srcs + [lib]):
        return exe
    print(f"building {exe} ({len(srcs)} sources)...", file=sys.stderr)
    run(["g++", "-std=c++20", *FLAGS, f"-I{ROOT}/include", f"-I{kindle_build}/generated", *srcs, "-o", exe,
         f"-L{kindle_build}", "-lkindle", f"-Wl,-rpath,{kindle_build}", "-pthread"])
    return exe


def build_libtorch(build_dir):
    import torch  # noqa: F401  (only to find the wheel's include/ and lib/)
    t = os.path.dirname(torch.__file__)
    exe = os.path.join(build_dir, "bench_train_libtorch")
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    if up_to_date(exe, [os.path.join(HERE, "bench_train_libtorch.cpp")]):
        return exe
    print(f"building {exe} against libtorch {torch.__version__}...", file=sys.stderr)
    run(["g++", "-std=c++17", "-O2", "-march=x86-64-v3", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", f"-I{t}/include",
         f"-I{t}/include/torch/csrc/api/include", os.path.join(HERE, "bench_train_libtorch.cpp"), "-o", exe,
         f"-L{t}/lib", "-ltorch", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{t}/lib"])
    return exe


def sample(exe, workload, threads, args):
    out = run([exe, "--workload", workload, "--threads", str(threads), "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--reps", str(args.reps)]).stdout.split()
    return float(out[2]), float(out[4])  # median ms per step, last loss


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=5, help="alternating runs of each program")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--workloads", nargs="+", default=["mlp", "lenet"])
    p.add_argument("--kindle-build", default=os.path.join(ROOT, "build"))
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build", "bench_cpp"))
    p.add_argument("--markdown", help="also write the table to this file")
    args = p.parse_args(argv)

    os.makedirs(args.build_dir, exist_ok=True)
    kindle_exe = build_kindle(args.build_dir, args.kindle_build)
    torch_exe = build_libtorch(args.build_dir)

    lines = ["| workload | threads | kindle ms/step | libtorch ms/step | kindle/libtorch |", "|---|---:|---:|---:|---:|"]
    for wl in args.workloads:
        for nt in args.threads:
            k, t = [], []
            for _ in range(args.rounds):
                k.append(sample(kindle_exe, wl, nt, args)[0])
                t.append(sample(torch_exe, wl, nt, args)[0])
            mk, mt = statistics.median(k), statistics.median(t)
            lines.append(f"| {wl} | {nt} | {mk:.3f} | {mt:.3f} | {mk / mt:.2f} |")
            print(lines[-1], flush=True)
    table = "\n".join(lines)
    print("\n" + table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
