"""Train a small CNN on handwritten digits: Kindle's main example.

    pip install ".[examples]" && python examples/digits.py

The implementation lives in the package (kindle/examples/digits.py), so an installed Kindle
runs the same program as `python -m kindle.examples.digits`; see --help for the flags.
"""
from kindle.examples.digits import main

if __name__ == "__main__":
    main()
