"""Kindle's CPU generator is PyTorch's: for the same seed, every random op draws torch's numbers,
bit for bit (the same Mersenne Twister and the same transforms, torch's vectorised normal_
included), whatever the thread count; generator states cross over both ways."""
import subprocess
import sys

import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")


def _bits(t):
    t = t.detach()
    if str(t.dtype).endswith(("float16", "bfloat16")):
        t = t.float()
    return np.asarray(t.numpy()).copy()


def _same(draw, seed=7):
    kindle.manual_seed(seed)
    k = draw(kindle)
    torch.manual_seed(seed)
    t = draw(torch)
    k, t = _bits(k), _bits(t)
    assert k.shape == t.shape and k.dtype == t.dtype, (k.shape, t.shape, k.dtype, t.dtype)
    bad = np.flatnonzero(k.view(np.uint8).reshape(k.size, -1) != t.view(np.uint8).reshape(t.size, -1)) if k.size else []
    assert len(bad) == 0, f"{len(bad)} bytes differ; kindle {k.ravel()[:4]} torch {t.ravel()[:4]}"


P2 = [[0.1, 0.2, 0.05, 0.4, 0.25], [1.0, 0.0, 3.0, 2.0, 0.5], [0.0, 0.0, 1.0, 0.0, 0.0]]

CASES = {
    # uniforms: 24 bits for float (and half, bfloat16), 53 for double; fma(u, to - from, from)
    "rand f32": lambda L: L.rand(3, 1000),
    "rand f64": lambda L: L.rand(1001, dtype=L.float64),
    "uniform_ f32": lambda L: L.empty(5000).uniform_(-0.37, 2.9),
    "uniform_ f64": lambda L: L.empty(5000, dtype=L.float64).uniform_(-0.37, 2.9),
    "uniform_ f16": lambda L: L.empty(5000, dtype=L.float16).uniform_(-0.37, 2.9),
    "uniform_ bf16": lambda L: L.empty(5000, dtype=L.bfloat16).uniform_(-0.37, 2.9),
    "rand_like": lambda L: L.rand_like(L.zeros(7, 9)),
    # normals: the vectorised Box-Muller of 16-blocks (tail redrawn), the scalar one below 16
    "randn f32 large": lambda L: L.randn(100003),
    "randn f32 16": lambda L: L.randn(16),
    "randn f32 37": lambda L: L.randn(37),
    "randn f32 small": lambda L: L.randn(5),
    "randn f64 large": lambda L: L.randn(4099, dtype=L.float64),
    "randn f64 small": lambda L: L.randn(3, dtype=L.float64),
    "randn twice (cached sample)": lambda L: L.cat([L.randn(3, dtype=L.float64), L.randn(3, dtype=L.float64),
                                                    L.randn(1)]),
    "normal_ mean std f32": lambda L: L.empty(1000).normal_(2.5, 0.3),
    "normal_ mean std f64": lambda L: L.empty(1000, dtype=L.float64).normal_(2.5, 0.3),
    "normal_ small mean std": lambda L: L.empty(7, dtype=L.float64).normal_(-1.5, 3.3),
    "normal_ transposed": lambda L: L.empty(20, 10).t().normal_(),
    "normal_ strided": lambda L: L.empty(40, 2)[:, 0].normal_(),
    "normal()": lambda L: L.normal(2.0, 3.0, size=(50,)),
    "randn_like": lambda L: L.randn_like(L.zeros(3, 40)),
    "randn f16 multiple of 16": lambda L: L.randn(48, dtype=L.float16),
    "randn f16 small": lambda L: L.randn(7, dtype=L.float16),
    # integers: a 32-bit draw modulo the range, a 64-bit one from 2**32 on
    "randint": lambda L: L.randint(-5, 17, (1000,)),
    "randint 2**32": lambda L: L.randint(0, 2**32, (100,)),
    "randint 2**40": lambda L: L.randint(0, 2**40, (100,)),
    "randint int32": lambda L: L.randint(0, 100, (1000,), dtype=L.int32),
    "randint float": lambda L: L.randint(0, 100, (100,), dtype=L.float32),
    "random_(10)": lambda L: L.empty(100).random_(10),
    "random_(3, 10) int16": lambda L: L.empty(100, dtype=L.int16).random_(3, 10),
    **{f"random_() {d}": (lambda d: lambda L: L.empty(100, dtype=getattr(L, d)).random_())(d)
       for d in ("int64", "int32", "int16", "int8", "uint8", "bool", "float32", "float64", "float16", "bfloat16")},
    # permutations: a forward Fisher-Yates shuffle
    "randperm 10": lambda L: L.randperm(10),
    "randperm 100000": lambda L: L.randperm(100000),
    "randperm int32": lambda L: L.randperm(50, dtype=L.int32),
    # bernoulli, dropout, exponential, multinomial
    "bernoulli_ p": lambda L: L.empty(1000).bernoulli_(0.3),
    "bernoulli_ p bool": lambda L: L.empty(1000, dtype=L.bool).bernoulli_(0.3),
    "bernoulli tensor f32": lambda L: L.bernoulli(L.linspace(0, 1, 1000)),
    "bernoulli tensor f64": lambda L: L.bernoulli(L.full((1000,), 0.3, dtype=L.float64)),
    "dropout": lambda L: L.nn.functional.dropout(L.arange(1000, dtype=L.float32) / 7, 0.3),
    "dropout f64": lambda L: L.nn.functional.dropout(L.arange(1000, dtype=L.float64) / 7, 0.3),
    "dropout transposed": lambda L: L.nn.functional.dropout(L.ones(30, 20).t(), 0.5),
    "dropout2d": lambda L: L.nn.functional.dropout2d(L.ones(4, 8, 3, 3), 0.4),
    "Dropout module": lambda L: L.nn.Dropout(0.2)(L.ones(64, 32)),
    "exponential_ f32": lambda L: L.empty(1000).exponential_(1.7),
    "exponential_ f64": lambda L: L.empty(1000, dtype=L.float64).exponential_(1.7),
    "multinomial with replacement": lambda L: L.multinomial(L.tensor(P2), 40, replacement=True),
    "multinomial with replacement f64": lambda L: L.multinomial(L.tensor(P2, dtype=L.float64), 40, replacement=True),
    "multinomial without replacement": lambda L: L.multinomial(L.tensor(P2[:2]), 3),
    "multinomial one sample": lambda L: L.multinomial(L.tensor(P2), 1, replacement=True),
    "multinomial 1-D": lambda L: L.multinomial(L.tensor(P2[0]), 4),
    "multinomial many categories": lambda L: L.multinomial(L.rand(3, 1000), 200, replacement=True),
    # what models draw when they are built
    "Linear init": lambda L: L.cat([p.reshape(-1) for p in L.nn.Linear(50, 20).parameters()]),
    "Conv2d init": lambda L: L.cat([p.reshape(-1) for p in L.nn.Conv2d(3, 8, 3).parameters()]),
    "Embedding init": lambda L: L.nn.Embedding(100, 16).weight,
    "LSTM init": lambda L: L.cat([p.reshape(-1) for p in L.nn.LSTM(8, 16).parameters()]),
    "kaiming_normal_": lambda L: L.nn.init.kaiming_normal_(L.empty(64, 27)),
    "trunc_normal_": lambda L: L.nn.init.trunc_normal_(L.empty(100), std=0.02),
    "trunc_normal_ redraws": lambda L: L.nn.init.trunc_normal_(L.empty(1000), a=-0.5, b=1.0),
    "trunc_normal_ narrow window": lambda L: L.nn.init.trunc_normal_(L.empty(1000), mean=0.5, std=1.0, a=2.0, b=3.0),
    "xavier_uniform_": lambda L: L.nn.init.xavier_uniform_(L.empty(30, 40)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_draws_as_torch(name):
    _same(CASES[name])


@pytest.mark.parametrize("seed", [0, 1, 2**32 + 5, 2**63 + 11, -3])
def test_seeds(seed):
    _same(lambda L: L.cat([L.rand(20), L.randn(40)]), seed=seed)
    kindle.manual_seed(seed)
    torch.manual_seed(seed)
    assert kindle.initial_seed() == torch.initial_seed()


def test_generator_objects():
    k, t = kindle.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    for draw in (lambda L, g: L.rand(100, generator=g), lambda L, g: L.randn(37, generator=g),
                 lambda L, g: L.randperm(20, generator=g), lambda L, g: L.randint(0, 9, (30,), generator=g),
                 lambda L, g: L.empty(50).normal_(generator=g), lambda L, g: L.multinomial(L.ones(5), 3, generator=g)):
        assert np.array_equal(_bits(draw(kindle, k)), _bits(draw(torch, t)))
    # an unseeded Generator() starts from torch's default seed
    assert kindle.Generator().initial_seed() == torch.Generator().initial_seed() == 67280421310721
    assert np.array_equal(kindle.rand(5, generator=kindle.Generator()).numpy(),
                          torch.rand(5, generator=torch.Generator()).numpy())


def test_state_is_torchs_and_round_trips():
    kindle.manual_seed(5)
    torch.manual_seed(5)
    kindle.randn(3, dtype=kindle.float64)  # leaves a cached normal sample in the state
    torch.randn(3, dtype=torch.float64)
    ks, ts = kindle.get_rng_state(), torch.get_rng_state()
    assert ks.dtype == kindle.uint8 and tuple(ks.shape) == (5056,)
    assert np.array_equal(ks.numpy(), ts.numpy())
    a = kindle.randn(7, dtype=kindle.float64)
    kindle.set_rng_state(ks)
    assert np.array_equal(a.numpy(), kindle.randn(7, dtype=kindle.float64).numpy())
    # a torch state restores into kindle, and a kindle state into torch
    torch.manual_seed(9)
    torch.rand(1000)
    kindle.set_rng_state(kindle.from_numpy(torch.get_rng_state().numpy()))
    assert np.array_equal(kindle.randn(100).numpy(), torch.randn(100).numpy())
    torch.set_rng_state(torch.from_numpy(kindle.get_rng_state().numpy()))
    assert np.array_equal(kindle.rand(10).numpy(), torch.rand(10).numpy())
    g = kindle.Generator().manual_seed(3)
    st = g.get_state()
    x = kindle.rand(10, generator=g)
    assert np.array_equal(x.numpy(), kindle.rand(10, generator=g.set_state(st)).numpy())
    with kindle.random.fork_rng():
        kindle.rand(5)
    with pytest.raises(RuntimeError, match="5056"):
        kindle.set_rng_state(kindle.zeros(16, dtype=kindle.uint8))
    with pytest.raises(TypeError):
        kindle.set_rng_state(kindle.zeros(5056))


def test_thread_count_does_not_change_draws():
    saved = kindle.get_num_threads()
    try:
        out = []
        for threads in (1, 2):
            kindle.set_num_threads(threads)
            kindle.manual_seed(3)
            out.append(np.concatenate([kindle.randn(300001).numpy(), kindle.randn(70001, dtype=kindle.float64).numpy()]))
        assert np.array_equal(out[0].view(np.uint8), out[1].view(np.uint8))
    finally:
        kindle.set_num_threads(saved)


def test_uniform_never_returns_to():
    # Rounding to a 16-bit float can land on `to`; the value is then `from`, as torch returns.
    kindle.manual_seed(0)
    for dt in (kindle.float16, kindle.bfloat16):
        x = kindle.empty(10**6, dtype=dt).uniform_(0, 1)
        assert x.max().item() < 1
    _same(lambda L: L.empty(2 * 10**6).uniform_(0.9, 1.0), seed=1)


def test_dataloader_shuffle_order_is_torchs():
    import torch.utils.data as tdata

    import kindle.utils.data as kdata
    kindle.manual_seed(4)
    torch.manual_seed(4)
    k = [b.tolist() for b in kdata.DataLoader(list(range(50)), batch_size=8, shuffle=True)]
    t = [b.tolist() for b in tdata.DataLoader(list(range(50)), batch_size=8, shuffle=True)]
    assert k == t


def test_default_seed_differs_between_processes():
    code = "import kindle; print(kindle.initial_seed(), kindle.rand(1).item())"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)}
    assert len(outs) == 2


def test_samplers_and_random_split_draw_as_torch():
    import torch.utils.data as tdata  # noqa: F401  (torch.utils.data is not imported with torch)

    def draws(L):
        D = L.utils.data
        return [list(D.RandomSampler(list(range(20)))),
                list(D.RandomSampler(list(range(20)), replacement=True, num_samples=40)),
                list(D.WeightedRandomSampler([0.1, 0.5, 0.4], 10)),
                list(D.WeightedRandomSampler([0.1, 0.5, 0.4, 0.3], 3, replacement=False)),
                list(D.random_split(list(range(20)), [15, 5])[1].indices)]
    kindle.manual_seed(3)
    k = draws(kindle)
    torch.manual_seed(3)
    assert k == draws(torch)
