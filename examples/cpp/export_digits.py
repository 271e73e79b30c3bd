"""Writes scikit-learn's handwritten digits (1797 images of 8x8 pixels) as MNIST-style IDX files,
so that examples/cpp/train_digits.cpp (and kindle::data::MNIST) can read them:

    python examples/cpp/export_digits.py digits/
    ./train_digits digits/

A fixed, seeded 80/20 split goes to train-* and t10k-*; pixel values 0..16 are scaled to 0..255.
"""
import argparse
import os
import struct

import numpy as np


def write_idx(path, array):
    """IDX: two zero bytes, the type code (0x08: uint8), the rank, big-endian sizes, the bytes."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    with open(path, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, 0x08, array.ndim))
        f.write(struct.pack(">" + "I" * array.ndim, *array.shape))
        f.write(array.tobytes())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", help="folder to write the four IDX files into (created if missing)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the train/test split")
    parser.add_argument("--test-fraction", type=float, default=0.2)
    args = parser.parse_args()

    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.rint(digits.images * (255.0 / 16.0)).astype(np.uint8)  # (1797, 8, 8)
    labels = digits.target.astype(np.uint8)
    order = np.random.default_rng(args.seed).permutation(len(labels))
    n_test = int(round(len(labels) * args.test_fraction))
    test, train = order[:n_test], order[n_test:]

    os.makedirs(args.out_dir, exist_ok=True)
    for prefix, idx in (("train", train), ("t10k", test)):
        write_idx(os.path.join(args.out_dir, f"{prefix}-images-idx3-ubyte"), images[idx])
        write_idx(os.path.join(args.out_dir, f"{prefix}-labels-idx1-ubyte"), labels[idx])
    print(f"wrote {len(train)} training and {len(test)} test images to {args.out_dir}")


if __name__ == "__main__":
    main()
