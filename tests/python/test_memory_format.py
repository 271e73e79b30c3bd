"""Memory formats: channels_last / channels_last_3d strides as torch lays them out (contiguous,
clone's preserve_format, to, factories, Module.to), is_contiguous(memory_format=), and that ops on
such tensors give the same values as on row-major ones."""
import pytest

import kindle

torch = pytest.importorskip("torch")


def pair(shape):
    t = torch.randn(*shape)
    return kindle.from_numpy(t.numpy().copy()), t


@pytest.mark.parametrize("shape,fmt", [((2, 3, 4, 5), "channels_last"), ((2, 3, 4, 5, 6), "channels_last_3d"),
                                       ((1, 3, 1, 1), "channels_last"), ((2, 1, 4, 5), "channels_last")])
def test_layouts_match_torch(shape, fmt):
    k, t = pair(shape)
    kf, tf = getattr(kindle, fmt), getattr(torch, fmt)
    kc, tc = k.contiguous(memory_format=kf), t.contiguous(memory_format=tf)
    assert kc.stride() == tc.stride()
    assert kc.is_contiguous(memory_format=kf) == tc.is_contiguous(memory_format=tf)
    assert kc.is_contiguous() == tc.is_contiguous()
    assert k.is_contiguous(memory_format=kf) == t.is_contiguous(memory_format=tf)
    assert (kc.numpy() == tc.numpy()).all()
    assert kc.clone().stride() == tc.clone().stride()  # preserve_format
    assert kc.clone(memory_format=kindle.contiguous_format).stride() == tc.clone(
        memory_format=torch.contiguous_format).stride()
    assert k.to(memory_format=kf).stride() == t.to(memory_format=tf).stride()
    assert k.to(kindle.float64, memory_format=kf).stride() == t.to(torch.float64, memory_format=tf).stride()
    assert kc.contiguous().stride() == tc.contiguous().stride()
    assert kindle.empty(*shape, memory_format=kf).stride() == torch.empty(*shape, memory_format=tf).stride()
    for name in ("empty_like", "zeros_like", "ones_like", "randn_like"):
        assert getattr(kindle, name)(k, memory_format=kf).stride() == getattr(torch, name)(t, memory_format=tf).stride()
        assert getattr(kindle, name)(kc).stride() == getattr(torch, name)(tc).stride()  # preserve_format
    assert (kc + 1).stride() == (tc + 1).stride() and kindle.relu(kc).stride() == torch.relu(tc).stride()


def test_ops_on_channels_last_inputs():
    k, t = pair((2, 3, 8, 8))
    kc = k.contiguous(memory_format=kindle.channels_last).requires_grad_()
    conv = kindle.nn.Conv2d(3, 4, 3, padding=1)
    ref = conv(k)
    out = conv(kc)
    assert kindle.allclose(out, ref, atol=1e-5)
    out.sum().backward()
    assert kc.grad is not None and kc.grad.shape == kc.shape
    assert kindle.allclose((kc * 2 + 1).detach(), k * 2 + 1)


def test_module_to_channels_last():
    m = kindle.nn.Sequential(kindle.nn.Conv2d(3, 4, 3), kindle.nn.BatchNorm2d(4))
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    m.to(memory_format=kindle.channels_last)
    tm.to(memory_format=torch.channels_last)
    assert m[0].weight.stride() == tm[0].weight.stride()
    assert m[0].bias.stride() == tm[0].bias.stride()
    assert m[0].weight.is_leaf and m[0].weight.requires_grad


def test_memory_format_errors():
    x = kindle.ones(2, 3)
    with pytest.raises(RuntimeError, match="rank 4"):
        x.contiguous(memory_format=kindle.channels_last)
    with pytest.raises(RuntimeError, match="rank 4"):
        kindle.zeros(2, 3, memory_format=kindle.channels_last)
    with pytest.raises(RuntimeError, match="preserve"):
        x.contiguous(memory_format=kindle.preserve_format)
    with pytest.raises(TypeError, match="memory_format"):
        x.contiguous(memory_format="channels_last")
    assert not x.is_contiguous(memory_format=kindle.channels_last)
    z = kindle.zeros(1, 2, 3, 4, memory_format=kindle.channels_last, requires_grad=True)
    assert z.is_leaf and z.requires_grad
