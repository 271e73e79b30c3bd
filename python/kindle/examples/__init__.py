"""Runnable examples that ship with Kindle.

    pip install "kindle[examples]"      # scikit-learn, tqdm, matplotlib
    python -m kindle.examples.digits    # a small CNN on scikit-learn's handwritten digits

`kindle.examples.mnist` reads MNIST's IDX files (`python -m kindle.examples.digits --data DIR`).
The repository's examples/ folder holds more scripts (a character-level language model, a
ResNet-18, a custom autograd.Function).
"""
