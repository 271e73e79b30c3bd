"""kindle.nn.functional checks the op database (opdb_nn.py) cannot express:

- the random ops (dropout, dropout1d, dropout2d, alpha_dropout): no elementwise reference, so
  their statistics (fraction dropped, the 1/(1-p) scaling, whole channels for the 1d/2d variants,
  alpha_dropout's mean/variance and its two affine constants), reproducibility under
  kindle.manual_seed, and gradients (grad_output * mask / (1-p)); their deterministic cases
  (p=0, p=1, training=False) are opdb samples;
- batch_norm / instance_norm over several training steps: outputs and running statistics against
  torch after each step (single steps are opdb samples with `mutates`);
- signatures: every function has torch.nn.functional's parameters, in order, with its defaults;
- arguments of torch.nn.functional that kindle does not support yet (one test each).
"""
import inspect
import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

import kindle  # noqa: E402
import kindle.nn.functional as KF  # noqa: E402
import torch.nn.functional as TF  # noqa: E402
from common import compare, to_numpy  # noqa: E402

RANDOM_OPS = ("dropout", "dropout1d", "dropout2d", "alpha_dropout")


def _kt(a, dtype="float32", requires_grad=False):
    t = kindle.tensor(np.asarray(a, dtype=np.float64)).to(getattr(kindle, dtype))
    return t.requires_grad_() if requires_grad else t


def _call(name, x, p, **kw):
    kw.setdefault("training", True)
    return getattr(KF, name)(x, p, **kw)


# ---------------------------------------------------------------------------------------------
# dropout statistics

# input shapes: enough elements (or channels) for tight bounds; the channel dims for the 1d/2d
# variants (dims the mask is constant over)
_SHAPES = {"dropout": ((200, 300), ()), "dropout1d": ((100, 200, 6), (2,)),
           "dropout2d": ((50, 200, 3, 2), (2, 3)), "alpha_dropout": ((200, 300), ())}


def _binomial_bound(p, n):
    """Six standard deviations of the fraction of n Bernoulli(p) draws."""
    return 6 * np.sqrt(p * (1 - p) / n) + 1e-12


@pytest.mark.parametrize("name", ["dropout", "dropout1d", "dropout2d"])
@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_statistics(name, p, dtype):
    """About a fraction p of the elements (whole channels for dropout1d/2d) is zeroed, the rest
    is scaled by exactly 1/(1-p); the result keeps the input's shape and dtype."""
    shape, chan_dims = _SHAPES[name]
    rng = np.random.default_rng(1)
    xn = rng.uniform(0.5, 2.0, size=shape)                       # no zeros in the input
    kindle.manual_seed(0)
    y = _call(name, _kt(xn, dtype), p)
    assert tuple(y.shape) == shape and str(y.dtype).endswith(dtype)
    yn = to_numpy(y).astype(np.float64)
    kept = yn != 0
    # kept elements: x / (1 - p) within the dtype's rounding
    rtol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(yn[kept], xn[kept] / (1 - p), rtol=rtol, err_msg=f"{name}: kept values are not x/(1-p)")
    if chan_dims:
        # the mask is constant over the channel's spatial dims
        per_chan = kept.reshape(kept.shape[:2] + (-1,))
        mixed = (per_chan.any(-1) & ~per_chan.all(-1)).sum()
        assert mixed == 0, f"{name}: {mixed} channels are partly dropped (the mask must cover whole channels)"
        n = per_chan.shape[0] * per_chan.shape[1]
        frac = 1 - per_chan[..., 0].mean()
    else:
        n = kept.size
        frac = 1 - kept.mean()
    assert abs(frac - p) < _binomial_bound(p, n), f"{name}: dropped fraction {frac:.4f}, expected {p} (n={n})"


@pytest.mark.parametrize("name,shape,const_dims", [
    ("dropout1d", (40, 50), (1,)),             # unbatched (C, L): the mask is per channel
    ("dropout2d", (40, 50, 4), (2,)),           # torch: 3-d input to dropout2d is (N, C, L) (with a warning)
    ("dropout2d", (40, 5, 2, 2), (2, 3)),
])
def test_dropout_channel_layout(name, shape, const_dims):
    """The dims over which the channel mask is constant are torch's for each input rank."""
    kindle.manual_seed(3)
    kept = to_numpy(_call(name, _kt(np.ones(shape)), 0.5)) != 0
    lead = kept.shape[:len(shape) - len(const_dims)]
    per_chan = kept.reshape(lead + (-1,))
    assert not (per_chan.any(-1) & ~per_chan.all(-1)).any(), f"{name}{shape}: the mask is not constant over dims {const_dims}"
    # and not constant over more dims than that (each leading position gets its own draw)
    assert 0 < per_chan[..., 0].mean() < 1
    if len(lead) == 2:
        assert (per_chan[..., 0] != per_chan[:1, :, 0]).any(), f"{name}{shape}: the mask does not vary over dim 0"
        assert (per_chan[..., 0] != per_chan[:, :1, 0]).any(), f"{name}{shape}: the mask does not vary over dim 1"


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_alpha_dropout_statistics(p):
    """alpha_dropout keeps zero mean and unit variance of a standard normal input; dropped
    elements become one constant and all values are a*x + b with torch's a and b (checked on a zero
    input, where torch's two output values are deterministic)."""
    rng = np.random.default_rng(2)
    xn = rng.standard_normal((300, 400))
    kindle.manual_seed(0)
    yn = to_numpy(KF.alpha_dropout(_kt(xn, "float64"), p, True))
    assert abs(yn.mean()) < 0.02 and abs(yn.var() - 1) < 0.03, f"mean {yn.mean():.4f}, var {yn.var():.4f}"
    # the two affine constants, from a zero input: kept -> b, dropped -> a * alpha' + b
    kindle.manual_seed(0)
    k0 = np.unique(to_numpy(KF.alpha_dropout(_kt(np.zeros((200, 300)), "float64"), p, True)))
    t0 = np.unique(TF.alpha_dropout(torch.zeros(200, 300, dtype=torch.float64), p, True).numpy())
    assert k0.shape == t0.shape == (2,), (k0, t0)
    np.testing.assert_allclose(k0, t0, rtol=1e-12)
    # the dropped fraction
    kindle.manual_seed(0)
    z = to_numpy(KF.alpha_dropout(_kt(np.zeros((200, 300)), "float64"), p, True))
    dropped = np.isclose(z, t0.min())
    assert abs(dropped.mean() - p) < _binomial_bound(p, z.size)


@pytest.mark.parametrize("name", RANDOM_OPS)
def test_dropout_reproducible_under_manual_seed(name):
    shape = _SHAPES[name][0]
    x = _kt(np.ones(shape))
    kindle.manual_seed(123)
    a = to_numpy(_call(name, x, 0.5))
    kindle.manual_seed(123)
    b = to_numpy(_call(name, x, 0.5))
    c = to_numpy(_call(name, x, 0.5))             # the generator moved on: another mask
    kindle.manual_seed(124)
    d = to_numpy(_call(name, x, 0.5))
    assert np.array_equal(a, b), f"{name}: the same seed gave different masks"
    assert not np.array_equal(a, c), f"{name}: two calls in a row gave the same mask"
    assert not np.array_equal(a, d), f"{name}: seeds 123 and 124 gave the same mask"


@pytest.mark.parametrize("name", RANDOM_OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_gradient(name, dtype):
    """d(dropout(x))/dx = mask / (1 - p) (alpha_dropout: a * mask), applied to grad_output."""
    p = 0.4
    shape = {"dropout": (20, 30), "dropout1d": (10, 20, 3), "dropout2d": (10, 20, 2, 2), "alpha_dropout": (20, 30)}[name]
    rng = np.random.default_rng(4)
    xn, gn = rng.uniform(0.5, 2.0, size=shape), rng.standard_normal(shape)
    x = _kt(xn, dtype, requires_grad=True)
    kindle.manual_seed(0)
    y = _call(name, x, p)
    y.backward(_kt(gn, dtype))
    assert x.grad is not None, f"{name}: no gradient"
    yn, grad = to_numpy(y.detach()).astype(np.float64), to_numpy(x.grad).astype(np.float64)
    if name == "alpha_dropout":
        # y = a*x + b where kept, a*alpha' + b where dropped: the kept entries give a
        t0 = np.unique(TF.alpha_dropout(torch.zeros(100, dtype=torch.float64), p, True).numpy())
        dropped_value = t0.min()
        kept = ~np.isclose(yn, dropped_value, rtol=1e-5, atol=1e-6)
        a = (yn[kept] - t0.max()) / xn[kept]
        expected = np.where(kept, gn * a.mean(), 0.0)
        assert np.allclose(a, a.mean(), rtol=1e-5), "alpha_dropout: kept values are not one affine map of x"
    else:
        kept = yn != 0
        expected = np.where(kept, gn / (1 - p), 0.0)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(grad, expected, rtol=rtol, atol=1e-6, err_msg=f"{name}: gradient is not mask/(1-p) * grad")


@pytest.mark.parametrize("name", RANDOM_OPS)
def test_dropout_inplace_training(name):
    """inplace=True in training mode writes the dropped result into the input and returns it."""
    shape = _SHAPES[name][0]
    x = _kt(np.ones(shape))
    kindle.manual_seed(5)
    y = _call(name, x, 0.5, inplace=True)
    assert y is x, f"{name}(inplace=True) did not return its input"
    kindle.manual_seed(5)
    ref = _call(name, _kt(np.ones(shape)), 0.5)
    assert np.array_equal(to_numpy(x), to_numpy(ref)), f"{name}(inplace=True) wrote other values than the out-of-place op"


# ---------------------------------------------------------------------------------------------
# normalisation with running statistics over several steps

def _both(a):
    return kindle.tensor(np.array(a)), torch.tensor(np.array(a))


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4)])
@pytest.mark.parametrize("momentum", [0.1, 0.5])
def test_batch_norm_running_stats_steps(shape, momentum):
    """Three training steps then an eval step: the outputs and the running mean/var (unbiased
    batch variance, exponential average with `momentum`) follow torch's after every step."""
    rng = np.random.default_rng(6)
    c = shape[1]
    km, tm = _both(rng.uniform(-1, 1, c))
    kv, tv = _both(rng.uniform(0.5, 2, c))
    kw, tw = _both(rng.uniform(0.5, 1.5, c))
    kb, tb = _both(rng.uniform(-0.5, 0.5, c))
    errs = []
    for step in range(4):
        training = step < 3
        kx, tx = _both(rng.standard_normal(shape) * (step + 1) + step)
        ky = KF.batch_norm(kx, km, kv, kw, kb, training, momentum, 1e-5)
        ty = TF.batch_norm(tx, tm, tv, tw, tb, training, momentum, 1e-5)
        errs += compare(ky, ty, path=f"step {step} out") + compare(km, tm, path=f"step {step} running_mean") \
            + compare(kv, tv, path=f"step {step} running_var")
    assert not errs, errs


@pytest.mark.parametrize("shape", [(2, 3, 5), (3, 2, 3, 3)])
def test_instance_norm_running_stats_steps(shape):
    """instance_norm with running stats: per-instance statistics averaged over the batch update
    the running stats (as torch); then use_input_stats=False normalises with them."""
    rng = np.random.default_rng(7)
    c = shape[1]
    km, tm = _both(rng.uniform(-1, 1, c))
    kv, tv = _both(rng.uniform(0.5, 2, c))
    errs = []
    for step in range(3):
        use = step < 2
        kx, tx = _both(rng.standard_normal(shape) + step)
        ky = KF.instance_norm(kx, km, kv, use_input_stats=use, momentum=0.3)
        ty = TF.instance_norm(tx, tm, tv, use_input_stats=use, momentum=0.3)
        errs += compare(ky, ty, path=f"step {step} out") + compare(km, tm, path=f"step {step} running_mean") \
            + compare(kv, tv, path=f"step {step} running_var")
    assert not errs, errs


# ---------------------------------------------------------------------------------------------
# signatures

def _public():
    return sorted(n for n, f in vars(KF).items() if not n.startswith("_") and inspect.isfunction(f)
                  and f.__module__ == KF.__name__)


def _torch_params(name):
    """[(name, default)] of torch.nn.functional.<name>; from the docstring for builtins."""
    f = getattr(TF, name)
    try:
        params = list(inspect.signature(f).parameters.values())
        if [p.kind for p in params] == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
            f = getattr(TF, name + "_with_indices")      # boolean_dispatch (max_pool2d, ...)
            params = list(inspect.signature(f).parameters.values())
        return [(p.name, p.default if p.default is not inspect.Parameter.empty else "<required>") for p in params]
    except (TypeError, ValueError):
        doc = " ".join((f.__doc__ or "").split())
        m = re.match(rf"{name}\((.*?)\)\s*->", doc)
        assert m, f"cannot read torch.nn.functional.{name}'s signature"
        out = []
        for a in m.group(1).split(","):
            a = a.strip()
            if a in ("", "*"):
                continue
            n, _, d = a.partition("=")
            out.append((n.strip(), eval(d) if d else "<required>"))  # noqa: S307 (torch's own docstring)
        return out


@pytest.mark.parametrize("name", _public())
def test_signature_matches_torch(name):
    """kindle.nn.functional.<name> has torch.nn.functional.<name>'s parameters (names, order,
    defaults), so that every call valid for torch is valid for kindle."""
    assert hasattr(TF, name), f"torch.nn.functional has no {name}"
    kp = [(p.name, p.default if p.default is not inspect.Parameter.empty else "<required>")
          for p in inspect.signature(getattr(KF, name)).parameters.values()]
    tp = _torch_params(name)
    assert kp == tp, f"\n kindle: {kp}\n torch:  {tp}"


# ---------------------------------------------------------------------------------------------
# torch.nn.functional arguments kindle does not support yet

def _t(lib, shape, seed=0, low=-2.0, high=2.0):
    return lib.tensor(np.random.default_rng(seed).uniform(low, high, size=shape))


_ARGUMENT_CASES = {
    "mse_loss(weight=)": lambda F, L: F.mse_loss(_t(L, (3, 4)), _t(L, (3, 4), 1), weight=_t(L, (3, 4), 2, 0, 2)),
    "l1_loss(weight=)": lambda F, L: F.l1_loss(_t(L, (3, 4)), _t(L, (3, 4), 1), weight=_t(L, (3, 4), 2, 0, 2)),
    "huber_loss(weight=)": lambda F, L: F.huber_loss(_t(L, (3, 4)), _t(L, (3, 4), 1), weight=_t(L, (3, 4), 2, 0, 2)),
    "interpolate(mode='bicubic')": lambda F, L: F.interpolate(_t(L, (1, 2, 4, 5)), size=(6, 7), mode="bicubic"),
    "interpolate(mode='bicubic', align_corners=True)":
        lambda F, L: F.interpolate(_t(L, (1, 2, 4, 5)), scale_factor=2, mode="bicubic", align_corners=True),
    "interpolate(mode='area')": lambda F, L: F.interpolate(_t(L, (1, 2, 6, 6)), size=(4, 3), mode="area"),
    "interpolate(mode='nearest-exact')": lambda F, L: F.interpolate(_t(L, (1, 2, 4, 5)), size=(7, 3), mode="nearest-exact"),
    "interpolate(mode='trilinear')": lambda F, L: F.interpolate(_t(L, (1, 2, 3, 4, 5)), size=(4, 5, 6), mode="trilinear"),
    "interpolate(5-d, mode='nearest')": lambda F, L: F.interpolate(_t(L, (1, 2, 3, 4, 5)), scale_factor=2),
    "interpolate(antialias=True)":
        lambda F, L: F.interpolate(_t(L, (1, 2, 8, 8)), size=(3, 3), mode="bilinear", antialias=True),
    "embedding(scale_grad_by_freq=True)":
        lambda F, L: F.embedding(L.tensor([0, 2, 2]), _t(L, (4, 3)), scale_grad_by_freq=True),
    "embedding_bag(mode='max')":
        lambda F, L: F.embedding_bag(L.tensor([0, 2, 4, 1, 3]), _t(L, (6, 3)), L.tensor([0, 0, 2]), mode="max"),
    "embedding_bag(max_norm=)":
        lambda F, L: F.embedding_bag(L.tensor([0, 2, 4, 1]), _t(L, (6, 3)), L.tensor([0, 2]), max_norm=1.0),
    "scaled_dot_product_attention(enable_gqa=True)":
        lambda F, L: F.scaled_dot_product_attention(_t(L, (1, 4, 3, 2)), _t(L, (1, 2, 3, 2), 1), _t(L, (1, 2, 3, 2), 2),
                                                    enable_gqa=True),
}


@pytest.mark.parametrize("case", list(_ARGUMENT_CASES))
def test_torch_arguments_supported(case):
    """Arguments torch.nn.functional accepts: kindle computes what torch computes."""
    f = _ARGUMENT_CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = f(TF, torch)
        try:
            actual = f(KF, kindle)
        except Exception as e:  # noqa: BLE001
            pytest.fail(f"kindle raised {type(e).__name__}: {e}")
    errs = compare(actual, expected, _TOL)
    assert not errs, errs


class _Tol:
    """compare()'s `op`: the inputs are float64, the results compared to 1e-7 (float32: 1e-5)."""

    def tolerance(self, dtype):
        return (1e-7, 1e-7) if dtype == "float64" else (1e-5, 1e-5)


_TOL = _Tol()


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_keeps_precision_when_the_mean_dwarfs_the_spread(training):
    """(x - mean) * scale + b, not x * scale + (b - mean * scale): the folded form cancels two
    large terms and was 5-8x less accurate than torch in float32."""
    rng = np.random.default_rng(0)
    x = (3 + 0.1 * rng.standard_normal((16, 8, 12, 12))).astype(np.float32)
    rm = x.mean((0, 2, 3)).astype(np.float32)
    rv = x.var((0, 2, 3)).astype(np.float32)

    def run(lib, dtype):
        stats = (None, None) if training else (lib.tensor(rm).to(dtype), lib.tensor(rv).to(dtype))
        return lib.nn.functional.batch_norm(lib.tensor(x).to(dtype), *stats, training=training).double().numpy()
    ref = run(torch, torch.float64)
    k_err = np.abs(run(kindle, kindle.float32) - ref).max()
    t_err = np.abs(run(torch, torch.float32) - ref).max()
    assert k_err <= 2 * t_err + 1e-7, (k_err, t_err)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("kernel,stride,padding", [(2, 2, 0), (3, 1, 1), (2, 1, 0), (3, 2, 1)])
def test_max_pool2d_nan_and_tie_order_as_torch(dtype, kernel, stride, padding):
    # The window's winner as PyTorch's kernels pick it (a NaN or a larger value replaces the best:
    # the last NaN wins, else the first largest), for values and indices, at widths that exercise
    # the vectorized 2x2 path (8 and 4 outputs a row) and its scalar tail.
    rng = np.random.default_rng(kernel * 10 + stride)
    for width in (8, 9, 16, 17, 24, 33):
        x = rng.standard_normal((2, 3, 6, width)).astype(np.float32)
        x[rng.random(x.shape) < 0.1] = np.nan
        x[rng.random(x.shape) < 0.2] = 1.0
        kt = kindle.tensor(x).to(getattr(kindle, dtype))
        tt = torch.tensor(x).to(getattr(torch, dtype))
        kv, ki = KF.max_pool2d(kt, kernel, stride, padding, return_indices=True)
        tv, ti = TF.max_pool2d(tt, kernel, stride, padding, return_indices=True)
        assert np.array_equal(kv.float().numpy(), tv.float().numpy(), equal_nan=True), width
        assert np.array_equal(ki.numpy(), ti.numpy()), width


def _pool_configs():
    rng = np.random.default_rng(7)
    configs = [((1, 2, 111, 111), 3, 2, 0, 1, True), ((2, 3, 56, 57), 3, 2, 1, 1, False),
               ((1, 2, 27, 27), 3, 2, 0, 1, True), ((1, 1, 40, 41), 3, 1, 1, 1, False),
               ((1, 1, 33, 50), 5, 3, 2, 1, True), ((1, 2, 30, 45), 3, 2, 1, 2, False),
               ((1, 1, 20, 19), (2, 3), (2, 1), (1, 1), 1, True), ((1, 1, 9, 70), 4, 4, 2, 1, True)]
    for _ in range(24):
        k = int(rng.integers(1, 5))
        d = int(rng.integers(1, 3))
        p = int(rng.integers(0, k // 2 + 1))
        h, w = int(rng.integers(max(k * d, 3), 30)), int(rng.integers(max(k * d, 3), 70))
        configs.append(((1, 2, h, w), k, int(rng.integers(1, 4)), p, d, bool(rng.integers(0, 2))))
    return configs


@pytest.mark.parametrize("cfg", _pool_configs())
def test_max_pool2d_vector_windows_match_torch(cfg):
    # max_pool2d's vectorised general windows (interior columns by loads, borders by masked
    # gathers): values and indices as torch's, with ties, NaN and -inf in the data.
    shape, k, s, p, d, ceil = cfg
    rng = np.random.default_rng(abs(hash(str(cfg))) % 2**32)
    x = rng.integers(-3, 4, size=shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[rng.integers(0, flat.size, size=max(1, flat.size // 50))] = np.nan
    flat[rng.integers(0, flat.size, size=max(1, flat.size // 50))] = -np.inf
    for dt in ("float32", "float64"):  # float64 runs the scalar loop: the same rule
        xt = torch.tensor(x.astype(dt))
        kv, ki = KF.max_pool2d(kindle.tensor(x.astype(dt)), k, s, p, d, ceil, return_indices=True)
        tv, ti = TF.max_pool2d(xt, k, s, p, d, ceil, return_indices=True)
        np.testing.assert_array_equal(to_numpy(ki), ti.numpy())
        np.testing.assert_array_equal(to_numpy(kv), tv.numpy())
