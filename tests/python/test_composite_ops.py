"""Forms of the composite ops (csrc/ops/composite.cpp) that the op database's one-entry-per-name
layout cannot hold: repeat_interleave(repeats) alone, float_power with a Python-number base,
the trapz and cross defaults, meshgrid's default indexing."""
import warnings

import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")


def _same(k, t):
    assert tuple(k.shape) == tuple(t.shape)
    assert str(k.dtype).rsplit(".", 1)[-1] == str(t.dtype).rsplit(".", 1)[-1]
    np.testing.assert_allclose(np.asarray(k.tolist(), dtype=float), np.asarray(t.tolist(), dtype=float), rtol=1e-6)


@pytest.mark.parametrize("reps", [[2, 0, 3], [0, 0], [1], [], [4, 1, 0, 2, 0]])
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_repeat_interleave_of_repeats_alone(reps, dtype):
    _same(kindle.repeat_interleave(kindle.tensor(reps, dtype=getattr(kindle, dtype))),
          torch.repeat_interleave(torch.tensor(reps, dtype=getattr(torch, dtype))))


def test_repeat_interleave_refuses_what_torch_refuses():
    for bad in ([[1, 2]], [1.0, 2.0], [-1, 2]):
        with pytest.raises(RuntimeError):
            torch.repeat_interleave(torch.tensor(bad))
        with pytest.raises(RuntimeError):
            kindle.repeat_interleave(kindle.tensor(bad))


@pytest.mark.parametrize("base", [2, 0.5, -3])
def test_float_power_with_a_number_base(base):
    e = [[0.5, 1.0, -2.0], [3.0, 0.0, 1.5]]
    _same(kindle.float_power(base, kindle.tensor(e)), torch.float_power(base, torch.tensor(e)))


def test_cross_default_dim_is_the_first_of_size_3():
    a, b = [[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]], [[0.5, 1.0], [2.0, -1.0], [1.0, 3.0]]
    with warnings.catch_warnings():  # torch warns (once per process) that dim should be given
        warnings.simplefilter("ignore")
        t = torch.cross(torch.tensor(a), torch.tensor(b))
    _same(kindle.cross(kindle.tensor(a), kindle.tensor(b)), t)


def test_meshgrid_default_indexing_is_ij():
    k = kindle.meshgrid(kindle.tensor([1, 2]), kindle.tensor([3, 4, 5]))
    with warnings.catch_warnings():  # torch warns (once per process) that indexing should be given
        warnings.simplefilter("ignore")
        t = torch.meshgrid(torch.tensor([1, 2]), torch.tensor([3, 4, 5]))
    for a, b in zip(k, t):
        _same(a, b)


def test_median_gradient_is_shared_by_ties():
    x = kindle.tensor([1.0, 2.0, 2.0, 3.0, 2.0], requires_grad=True)
    x.median().backward()
    assert x.grad.tolist() == pytest.approx([0, 1 / 3, 1 / 3, 0, 1 / 3])


def test_histc_counts_outside_values_nowhere():
    x = [0.0, 0.5, 1.0, 1.5, 2.0, -1.0, 3.0, float("nan")]
    _same(kindle.histc(kindle.tensor(x), 4, 0, 2), torch.histc(torch.tensor(x), 4, 0, 2))
