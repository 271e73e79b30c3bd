#!/usr/bin/env python3
"""Long differential fuzzing run of kindle against torch (see tests/python/fuzz_programs.py).

    python scripts/fuzz_long.py --n 100000 --seed 0 --jobs 4 --out /tmp/fuzz_findings.txt

Programs run in subprocess batches, so a segfault, abort or hang in kindle is caught and reported
with the (minimised) program that caused it. Prints a summary (programs run, disagreements by
class and by op) and writes every finding, as Python code that runs on both libraries, to --out
(at most --per-key examples per (class, op); the counts cover all of them).
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
import fuzz_programs as fp  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100000, help="number of programs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="index of the first program")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="subprocesses at a time")
    ap.add_argument("--batch", type=int, default=500, help="programs per subprocess")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per batch before it counts as a hang")
    ap.add_argument("--per-key", type=int, default=3, help="examples written per (class, op)")
    ap.add_argument("--out", default="fuzz_findings.txt", help="file for the findings (Python reproducers)")
    args = ap.parse_args()

    lock = threading.Lock()
    by_key, by_cls, by_op = collections.Counter(), collections.Counter(), collections.Counter()
    notes = collections.Counter()
    state = {"done": 0, "bad": 0, "t0": time.time(), "last": 0.0}
    out = open(args.out, "w")
    out.write(f"# kindle vs torch differential fuzzing, seed {args.seed}\n\n")

    def on_result(i, findings):
        with lock:
            notes.update((f.cls, f.op) for f in findings if f.cls.startswith(fp.NOTE))
            findings = [f for f in findings if not f.cls.startswith(fp.NOTE)]
            state["done"] += 1
            state["bad"] += bool(findings)
            for f in findings:
                key = (f.cls, f.op)
                by_key[key] += 1
                by_cls[f.cls] += 1
                by_op[f.op] += 1
                if by_key[key] <= args.per_key:
                    out.write(f"# ---- {f.cls} | {f.op} | program {i} (seed {args.seed})\n# {f.detail}\n{f.code}\n")
                    out.flush()
            now = time.time()
            if now - state["last"] > 30:
                state["last"] = now
                rate = state["done"] / max(now - state["t0"], 1e-9)
                print(f"[{state['done']}/{args.n}] {rate:.0f} programs/s, {sum(by_cls.values())} findings "
                      f"in {state['bad']} programs", flush=True)

    fp.run_batches(args.seed, args.n, start=args.start, jobs=args.jobs, batch=args.batch,
                   timeout=args.timeout, on_result=on_result)
    out.close()

    print(f"\nprograms run: {args.n} (seed {args.seed}, from {args.start}); with disagreements: "
          f"{state['bad']}; findings: {sum(by_cls.values())}; {time.time() - state['t0']:.0f} s")
    print("\nby class:")
    for cls, c in by_cls.most_common():
        print(f"  {c:7d}  {cls}")
    print("\nby class and op:")
    for (cls, op), c in by_key.most_common():
        print(f"  {c:7d}  {cls:28s}  {op}")
    if notes:
        print("\nnotes (lenient matches, not disagreements):")
        for (cls, op), c in notes.most_common():
            print(f"  {c:7d}  {cls[len(fp.NOTE):]:28s}  {op}")
    print(f"\nreproducers: {args.out}")
    return 1 if by_cls else 0


if __name__ == "__main__":
    sys.exit(main())
