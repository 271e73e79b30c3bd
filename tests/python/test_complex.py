"""Complex tensors against torch: dtypes and promotion, creation, views that share storage,
printing, NumPy/DLPack, checkpoints, and autograd's convention. The op-by-op kernels are in the
op database (test_ops.py: every op on complex64/complex128 matches torch or refuses cleanly;
test_autograd_ops.py: complex128 gradcheck and gradients against torch)."""
import io
import warnings
import itertools

import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128"]


def test_dtype_objects():
    assert kindle.cfloat is kindle.complex64 and kindle.cdouble is kindle.complex128
    assert kindle.complex64.is_complex and not kindle.complex64.is_floating_point
    assert kindle.complex128.itemsize == 16 and kindle.complex64.itemsize == 8
    assert not kindle.float32.is_complex
    with pytest.raises(TypeError):
        kindle.zeros(2, dtype=kindle.complex32)


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, ["complex64", "complex128"])))
def test_promote_types_matches_torch(a, b):
    k = kindle.promote_types(getattr(kindle, a), getattr(kindle, b))
    t = torch.promote_types(getattr(torch, a), getattr(torch, b))
    if str(t) == "torch.complex32":
        pytest.skip("complex32")
    assert str(k).split(".")[-1] == str(t).split(".")[-1]


@pytest.mark.parametrize("tensor_dtype", ["bool", "int64", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("other", [1j, 2, 2.5, "c64_0d", "c128_0d", "c128"])
def test_result_type_with_scalars_and_0d_matches_torch(tensor_dtype, other):
    def make(lib):
        x = lib.ones(3, dtype=getattr(lib, tensor_dtype))
        o = {"c64_0d": lib.tensor(1j, dtype=lib.complex64), "c128_0d": lib.tensor(1j, dtype=lib.complex128),
             "c128": lib.ones(3, dtype=lib.complex128)}.get(other, other) if isinstance(other, str) else other
        return (x * o).dtype
    assert str(make(kindle)).split(".")[-1] == str(make(torch)).split(".")[-1]
    for default in (kindle.float64,):
        kindle.set_default_dtype(default)
        torch.set_default_dtype(torch.float64)
        try:
            assert str(make(kindle)).split(".")[-1] == str(make(torch)).split(".")[-1]
        finally:
            kindle.set_default_dtype(kindle.float32)
            torch.set_default_dtype(torch.float32)


def test_complex_half_is_refused():
    with pytest.raises(NotImplementedError, match="complex32"):
        kindle.ones(2, dtype=kindle.float16) * 1j


def test_creation_and_python_values():
    x = kindle.tensor([1, 2.5, 1j, 3 - 4j])
    assert x.dtype == kindle.complex64
    assert x.tolist() == [1 + 0j, 2.5 + 0j, 1j, 3 - 4j]
    assert x[3].item() == 3 - 4j and isinstance(x[3].item(), complex)
    assert complex(x[2]) == 1j
    assert kindle.full((2,), 1 + 2j).dtype == kindle.complex64
    assert kindle.zeros(2, dtype=kindle.cdouble).tolist() == [0j, 0j]
    r = kindle.randn(20000, dtype=kindle.complex64)
    assert abs(r.real.var().item() - 0.5) < 0.03 and abs(r.imag.var().item() - 0.5) < 0.03
    assert kindle.ones(3).to(kindle.complex64).tolist() == [1 + 0j] * 3
    assert (kindle.arange(3) * 1j).tolist() == [0j, 1j, 2j]


def test_views_share_storage_and_track_versions():
    z = kindle.tensor([1 + 2j, 3 + 4j], dtype=kindle.complex128)
    r = kindle.view_as_real(z)
    assert r.shape == (2, 2) and r.stride() == (2, 1) and r.dtype == kindle.float64
    r[0, 1] = 9
    assert z[0].item() == 1 + 9j
    z.real[1] = -1
    assert z.tolist() == [1 + 9j, -1 + 4j]
    z.imag = kindle.zeros(2, dtype=kindle.float64)
    assert z.tolist() == [1 + 0j, -1 + 0j]
    back = kindle.view_as_complex(r)
    back[1] = 5j
    assert z[1].item() == 5j
    col = kindle.randn(4, 3, dtype=kindle.complex64)[:, 1]
    assert col.real.stride() == (6,) and col.imag.storage_offset() == 3
    with pytest.raises(RuntimeError, match="stride 1"):
        kindle.view_as_complex(kindle.zeros(2, 4)[:, ::2])
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        kindle.ones(2).imag  # noqa: B018


@pytest.mark.parametrize("values", [
    [1 + 2j, 3 - 4j], [1.5 + 2j, -3.25 - 4j], [1e-5 + 1j, 2e6 - 1j], [0j], [float("nan") + 1j, complex(1, float("inf"))],
    [[1 + 1j, 2 - 2j], [3 + 0.5j, -4j]],
])
def test_printing_matches_torch(values):
    for dt in ("complex64", "complex128"):
        k = repr(kindle.tensor(values, dtype=getattr(kindle, dt)))
        t = repr(torch.tensor(values, dtype=getattr(torch, dt)))
        assert k.replace("kindle.", "torch.") == t


def test_numpy_and_dlpack_round_trips():
    a = (np.arange(6) + 1j * np.arange(6)[::-1]).reshape(2, 3)
    for dt in (np.complex64, np.complex128):
        x = kindle.from_numpy(a.astype(dt))
        assert str(x.dtype).endswith("complex64" if dt == np.complex64 else "complex128")
        assert np.array_equal(x.numpy(), a.astype(dt))
        x.numpy()[0, 0] = 7j
        assert x[0, 0].item() == 7j  # shared memory
    t = torch.tensor(a)
    k = kindle.from_dlpack(t)
    assert k.dtype == kindle.complex128 and np.array_equal(k.numpy(), a)
    assert np.array_equal(torch.from_dlpack(kindle.tensor(a)).numpy(), a)


def test_checkpoints_hold_complex_tensors(tmp_path):
    z64 = kindle.randn(3, 2, dtype=kindle.complex64)
    z128 = kindle.randn(2, dtype=kindle.complex128)
    p = tmp_path / "c64.safetensors"
    kindle.save({"z": z64}, p)  # a plain safetensors file (C64)
    from safetensors.numpy import load_file
    assert np.array_equal(load_file(str(p))["z"], z64.numpy())
    assert kindle.equal(kindle.load(p)["z"], z64)
    p = tmp_path / "both.pt"
    kindle.save({"a": z64, "b": z128}, p)  # complex128 has no safetensors name: torch's zip layout
    back = kindle.load(p)
    assert kindle.equal(back["a"], z64) and kindle.equal(back["b"], z128)
    t = torch.load(p, weights_only=True)
    assert t["b"].dtype == torch.complex128 and t["b"].numpy().tolist() == z128.numpy().tolist()
    buf = io.BytesIO()
    torch.save({"w": torch.tensor([1 + 2j, -3j], dtype=torch.complex128)}, buf)
    buf.seek(0)
    assert kindle.load(buf)["w"].tolist() == [1 + 2j, -3j]


def test_autograd_convention_matches_torch():
    """The gradient of a real loss with respect to a complex input is the conjugate Wirtinger
    derivative (d/dx + i d/dy), as torch computes it, through views, mixed real/complex math and
    a complex matmul."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 2))
    grads = []
    for lib in (kindle, torch):
        x = lib.tensor(a, requires_grad=True)
        w = lib.tensor(b, requires_grad=True)
        y = (x * x.conj() + x.exp()) @ w.to(lib.complex128)
        loss = y.abs().sum() + lib.view_as_real(y).pow(2).sum() + y.angle().sum()
        loss.backward()
        grads.append((x.grad.resolve_conj().numpy(), w.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], atol=1e-10)
    np.testing.assert_allclose(grads[0][1], grads[1][1], atol=1e-10)
    z = kindle.randn(3, dtype=kindle.complex128, requires_grad=True)
    with pytest.raises(NotImplementedError, match="derivative for 'xlogy' is not implemented for complex"):
        kindle.xlogy(z, z)  # a formula not written for complex refuses, never a wrong gradient
    for f in (kindle.special.ndtr, kindle.special.logit, lambda x: kindle.special.multigammaln(x, 2)):
        with pytest.raises(NotImplementedError, match="not implemented for 'ComplexDouble'"):
            f(z.detach())  # (a cast to real would drop the imaginary parts: torch refuses too)


def test_complex_parameters_train():
    """A complex linear map fitted with Adam, as torch steps complex parameters (real views)."""
    rng = np.random.default_rng(4)
    target = rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2))
    x = rng.standard_normal((16, 2)) + 1j * rng.standard_normal((16, 2))
    finals = []
    for lib in (kindle, torch):
        w = lib.zeros(2, 2, dtype=lib.complex128, requires_grad=True)
        opt = lib.optim.Adam([w], lr=0.05)
        for _ in range(50):
            opt.zero_grad()
            loss = (lib.tensor(x) @ w - lib.tensor(x) @ lib.tensor(target)).abs().pow(2).mean()
            loss.backward()
            opt.step()
        finals.append(w.detach().numpy())
    np.testing.assert_allclose(finals[0], finals[1], atol=1e-9)


def test_rotary_embedding_as_llama_writes_it():
    """LLaMA's rotary embedding, unchanged: polar, view_as_complex of a reshaped float tensor,
    a broadcast complex product, view_as_real(...).flatten(3), type_as; values and gradients."""
    def run(lib):
        def precompute_freqs_cis(dim, end, theta=10000.0):
            freqs = 1.0 / (theta ** (lib.arange(0, dim, 2)[: (dim // 2)].float() / dim))
            t = lib.arange(end, device=freqs.device)
            freqs = lib.outer(t, freqs).float()
            return lib.polar(lib.ones_like(freqs), freqs)

        def reshape_for_broadcast(freqs_cis, x):
            shape = [d if i == 1 or i == x.ndim - 1 else 1 for i, d in enumerate(x.shape)]
            return freqs_cis.view(*shape)

        def apply_rotary_emb(xq, xk, freqs_cis):
            xq_ = lib.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
            xk_ = lib.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
            freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
            xq_out = lib.view_as_real(xq_ * freqs_cis).flatten(3)
            xk_out = lib.view_as_real(xk_ * freqs_cis).flatten(3)
            return xq_out.type_as(xq), xk_out.type_as(xk)

        rng = np.random.default_rng(0)
        xq = lib.tensor(rng.standard_normal((2, 10, 4, 16)).astype(np.float32), requires_grad=True)
        xk = lib.tensor(rng.standard_normal((2, 10, 4, 16)).astype(np.float32), requires_grad=True)
        q, k = apply_rotary_emb(xq, xk, precompute_freqs_cis(16, 10))
        (q * k).sum().backward()
        return q.detach().numpy(), xq.grad.numpy(), xk.grad.numpy()
    for a, b in zip(run(kindle), run(torch)):
        np.testing.assert_allclose(a, b, atol=2e-6)


def test_fnet_mixing():
    """FNet's token mixing: the real part of a 2-d FFT over the sequence and hidden dims."""
    x = np.random.default_rng(1).standard_normal((2, 8, 6)).astype(np.float32)
    outs = []
    for lib in (kindle, torch):
        t = lib.tensor(x, requires_grad=True)
        y = lib.fft.fft(lib.fft.fft(t, dim=-1), dim=-2).real
        y.pow(2).mean().backward()
        outs.append((y.detach().numpy(), t.grad.numpy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0], atol=1e-4)
    np.testing.assert_allclose(outs[0][1], outs[1][1], atol=1e-5)


def test_casting_complex_to_real_warns_as_torch():
    z = kindle.tensor([1 + 2j])
    for cast in (lambda t: t.to(kindle.float32), lambda t: t.float(), lambda t: t.double()):
        with pytest.warns(UserWarning, match="discards the imaginary part"):
            assert cast(z).tolist() == [1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        z.to(kindle.complex128)
        kindle.ones(2).double()
