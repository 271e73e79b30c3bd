"""python -m kindle.run SCRIPT.py [args...]   (or: python -m kindle.run -m MODULE [args...])

Runs an unmodified PyTorch program on Kindle: within it, `import torch` and every `torch.*`
import give Kindle's modules (see kindle.install_as_torch). The program sees sys.argv as if
it had been started with `python SCRIPT.py args...`."""
import os
import runpy
import sys


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    import kindle
    kindle.install_as_torch()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("kindle.run: -m needs a module name", file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    if not os.path.exists(script):
        print(f"kindle.run: can't open file '{script}': no such file", file=sys.stderr)
        return 2
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
