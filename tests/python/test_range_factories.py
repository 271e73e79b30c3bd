"""arange, linspace and logspace give torch's exact values (Note [Ranges as torch computes them]
in csrc/cpu/random.cpp): programs compare against them and floor() them (affine_grid's pixel
centres), so a last-bit difference changes results downstream."""
import random

import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")

FLOATS = ["float32", "float64", "float16", "bfloat16"]


def same(k, t):
    k, t = k.float() if k.dtype in (kindle.float16, kindle.bfloat16) else k, t
    t = t.float() if t.dtype in (torch.float16, torch.bfloat16) else t
    np.testing.assert_array_equal(k.numpy(), t.numpy())


def cases(seed, count):
    rng = random.Random(seed)
    for _ in range(count):
        a = rng.uniform(-10, 10)
        yield a, rng.uniform(-10, 10), rng.choice([1, -1]) * 10 ** rng.uniform(-3, 0.5), rng.randint(0, 3000)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_arange_bits(dtype):
    with_one_thread = torch.get_num_threads()
    torch.set_num_threads(1)  # torch's vector grouping restarts per thread chunk past 32768 elements
    try:
        for a, _, step, n in cases(1, 150):
            b = a + step * n
            same(kindle.arange(a, b, step, dtype=getattr(kindle, dtype)),
                 torch.arange(a, b, step, dtype=getattr(torch, dtype)))
        same(kindle.arange(-3.0, 70000.5, 0.7, dtype=getattr(kindle, dtype)),
             torch.arange(-3.0, 70000.5, 0.7, dtype=getattr(torch, dtype)))
    finally:
        torch.set_num_threads(with_one_thread)


@pytest.mark.parametrize("dtype", FLOATS + ["int64", "int32", "uint8", "int8"])
def test_linspace_bits(dtype):
    for a, b, _, n in cases(2, 150):
        if dtype in ("uint8",):
            a, b = abs(a) * 20, abs(b) * 20
        same(kindle.linspace(a, b, n, dtype=getattr(kindle, dtype)), torch.linspace(a, b, n, dtype=getattr(torch, dtype)))
    fixed = [(-1, 1, 28), (-1, 1, 1), (3, 3, 5), (0, 1, 0), (-np.pi, np.pi, 2000), (0, 10, 100003)]
    for a, b, n in fixed if dtype != "uint8" else fixed[2:4] + fixed[5:]:
        same(kindle.linspace(a, b, n, dtype=getattr(kindle, dtype)), torch.linspace(a, b, n, dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "float16"])
def test_logspace_bits(dtype):
    rng = random.Random(3)
    for _ in range(100):
        a, b, n, base = rng.uniform(-3, 3), rng.uniform(-3, 3), rng.randint(0, 300), rng.choice([10.0, 2.0, np.e, 3.5])
        same(kindle.logspace(a, b, n, base=base, dtype=getattr(kindle, dtype)),
             torch.logspace(a, b, n, base=base, dtype=getattr(torch, dtype)))


def test_affine_grid_identity_is_torchs():
    # pixel centres on the identity: floor() in grid_sample must pick torch's side
    for size, ac in [((1, 1, 28, 28), False), ((2, 3, 17, 9), True), ((1, 1, 4, 5, 6), False)]:
        eye = [[1.0, 0, 0], [0, 1.0, 0]] if len(size) == 4 else [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0]]
        k = kindle.nn.functional.affine_grid(kindle.tensor([eye] * size[0]), size, align_corners=ac)
        t = torch.nn.functional.affine_grid(torch.tensor([eye] * size[0]), size, align_corners=ac)
        same(k, t)
