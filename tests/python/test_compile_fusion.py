"""kindle.compile's inference fusions (python/kindle/_fusion.py) and the fused convolution op
(_conv2d_clamp): the same results as the model run as written, and the original path wherever
the fused one would not mean the same (training, gradients, hooks, changed modules)."""
import itertools
import math

import pytest

import kindle
import kindle.nn as nn
import kindle.nn.functional as F

_clamp = kindle._C._nn._conv2d_clamp


def _fused_count(cm, kind=None):
    graph = cm._inference[1]
    if graph is None:  # not traceable: runs as written
        return 0
    return sum(1 for n in graph.graph.nodes if n.op == "call_module" and n.target.startswith("_fused")
               and (kind is None or type(graph.get_submodule(n.target)).__name__ == kind))


# Shapes that reach each of conv2d's forward paths: 1x1 on a large plane (the image as its own
# columns, in bands), 3x3 im2col bands, small planes in column tiles (several images per tile),
# Winograd, the direct large-kernel path, depthwise at strides 1 and 2, grouped, dilated, strided.
CONV_CASES = [
    # (N, C, H, W, O, k, stride, padding, dilation, groups)
    (2, 16, 40, 40, 24, 1, 1, 0, 1, 1),
    (2, 5, 33, 31, 7, 3, 1, 1, 1, 1),
    (3, 8, 6, 5, 16, 3, 1, 1, 1, 1),
    (4, 32, 7, 7, 20, 1, 1, 0, 1, 1),
    (1, 32, 24, 24, 32, 3, 1, 1, 1, 1),
    (1, 8, 30, 30, 8, 9, 1, 4, 1, 1),
    (2, 12, 17, 19, 12, 3, 1, 1, 1, 12),
    (2, 12, 18, 20, 24, 3, 2, 1, 1, 12),
    (2, 12, 14, 14, 18, 3, 2, 0, 1, 3),
    (1, 6, 20, 20, 10, 3, 1, 2, 2, 1),
    (0, 4, 5, 5, 3, 1, 1, 0, 1, 1),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("dtype", [kindle.float32, kindle.float64])
def test_conv2d_clamp_is_conv2d_then_clamp_bit_for_bit(case, dtype):
    N, C, H, W, O, k, s, p, d, g = case
    gen = kindle.Generator().manual_seed(hash(case) % 1000)
    x = kindle.randn(N, C, H, W, generator=gen, dtype=dtype) * 3
    w = kindle.randn(O, C // g, k, k, generator=gen, dtype=dtype)
    b = kindle.randn(O, generator=gen, dtype=dtype)
    for bias, (lo, hi) in itertools.product((None, b), ((0.0, math.inf), (0.0, 6.0), (-1.5, 0.5), (2.0, 2.0))):
        want = F.conv2d(x, w, bias, s, p, d, g).clamp(lo, hi)
        got = _clamp(x, w, bias, (s, s), (p, p), (d, d), g, lo, hi)
        assert got.dtype == dtype and got.shape == want.shape
        assert kindle.equal(got, want), (case, bias is not None, lo, hi)


@pytest.mark.parametrize("case", [c for c in CONV_CASES if c[0] > 0])
@pytest.mark.parametrize("dtype", [kindle.float32, kindle.float64])
def test_conv2d_clamp_writes_a_channel_slice_of_out(case, dtype):
    N, C, H, W, O, k, s, p, d, g = case
    gen = kindle.Generator().manual_seed(hash(case) % 1000 + 1)
    x = kindle.randn(N, C, H, W, generator=gen, dtype=dtype)
    w = kindle.randn(O, C // g, k, k, generator=gen, dtype=dtype)
    b = kindle.randn(O, generator=gen, dtype=dtype)
    want = F.conv2d(x, w, b, s, p, d, g).clamp(0.0, 6.0)
    out = kindle.full((N, O + 5, want.shape[2], want.shape[3]), 123.0, dtype=dtype)
    got = _clamp(x, w, b, (s, s), (p, p), (d, d), g, 0.0, 6.0, out, 3)
    assert got.data_ptr() == out.data_ptr()
    assert kindle.equal(out[:, 3:3 + O], want)
    assert (out[:, :3] == 123).all() and (out[:, 3 + O:] == 123).all()


def test_conv2d_clamp_out_checks_and_other_dtypes():
    x, w = kindle.randn(2, 4, 6, 6), kindle.randn(3, 4, 3, 3)
    for bad in (kindle.empty(2, 5, 4, 4, dtype=kindle.float64), kindle.empty(2, 5, 5, 4), kindle.empty(2, 2, 4, 4),
                kindle.empty(2, 4, 4, 5).transpose(2, 3), kindle.empty(3, 5, 4, 4)):
        with pytest.raises(RuntimeError):
            _clamp(x, w, None, (1, 1), (0, 0), (1, 1), 1, 0.0, 6.0, bad, 0)
    with pytest.raises(RuntimeError):
        _clamp(x, w, None, (1, 1), (0, 0), (1, 1), 1, 0.0, 6.0, kindle.empty(2, 5, 4, 4), 3)
    out = kindle.zeros(2, 5, 4, 4, dtype=kindle.bfloat16)
    _clamp(x.bfloat16(), w.bfloat16(), None, (1, 1), (0, 0), (1, 1), 1, 0.0, 6.0, out, 1)
    assert kindle.equal(out[:, 1:4], F.conv2d(x.bfloat16(), w.bfloat16()).clamp(0.0, 6.0))
    assert (out[:, 0] == 0).all() and (out[:, 4] == 0).all()


def test_conv2d_clamp_keeps_nan_and_takes_any_layout_and_dtype():
    x = kindle.randn(2, 4, 9, 9)
    x[0, 1, 4, 4] = math.nan
    w = kindle.randn(6, 4, 3, 3)
    got = _clamp(x, w, None, (1, 1), (1, 1), (1, 1), 1, 0.0, 6.0)
    want = F.conv2d(x, w, None, 1, 1).clamp(0.0, 6.0)
    assert kindle.equal(got.isnan(), want.isnan()) and got.isnan().any()
    assert kindle.equal(got.nan_to_num(), want.nan_to_num())
    # non-contiguous input (channels-last storage), float16 and bfloat16, an unbatched input
    xc = x.nan_to_num().contiguous(memory_format=kindle.channels_last)
    assert kindle.equal(_clamp(xc, w, None, (1, 1), (1, 1), (1, 1), 1, 0.0, 6.0),
                        F.conv2d(xc, w, None, 1, 1).clamp(0.0, 6.0))
    for dt in (kindle.float16, kindle.bfloat16):
        got = _clamp(x.nan_to_num().to(dt), w.to(dt), None, (1, 1), (1, 1), (1, 1), 1, 0.0, 6.0)
        assert got.dtype == dt
        assert kindle.equal(got, F.conv2d(x.nan_to_num().to(dt), w.to(dt), None, 1, 1).clamp(0.0, 6.0))
    x3 = kindle.randn(4, 9, 9)
    assert kindle.equal(_clamp(x3, w, None, (1, 1), (1, 1), (1, 1), 1, -1.0, 1.0),
                        F.conv2d(x3, w, None, 1, 1).clamp(-1.0, 1.0))


def test_conv2d_clamp_refuses_what_it_cannot_do():
    x, w = kindle.randn(1, 4, 5, 5), kindle.randn(6, 4, 3, 3)
    with pytest.raises(RuntimeError, match="inference-only"):
        _clamp(x, w.requires_grad_(), None, (1, 1), (0, 0), (1, 1), 1, 0.0, 6.0)
    with kindle.no_grad():
        assert _clamp(x, w, None, (1, 1), (0, 0), (1, 1), 1, 0.0, 6.0).shape == (1, 6, 3, 3)
    w = w.detach()
    with pytest.raises(RuntimeError, match="min <= max"):
        _clamp(x, w, None, (1, 1), (0, 0), (1, 1), 1, 6.0, 0.0)
    with pytest.raises(RuntimeError, match="bias"):
        _clamp(x, w, kindle.zeros(5), (1, 1), (0, 0), (1, 1), 1, 0.0, 6.0)
    with pytest.raises(RuntimeError):
        _clamp(x, kindle.randn(6, 3, 3, 3), None, (1, 1), (0, 0), (1, 1), 1, 0.0, 6.0)


# ---- kindle.compile


class ConvBNReLU6(nn.Sequential):
    def __init__(self, cin, cout, k=3, stride=1, groups=1):
        super().__init__(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class Block(nn.Module):
    """torchvision's BasicBlock shape: explicit calls, a functional ReLU, a residual, a
    downsample Sequential of conv + batch norm (no activation)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=True)
        self.bn2 = nn.BatchNorm2d(cout, affine=False)
        self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.down(x))


def _net():
    kindle.manual_seed(0)
    net = nn.Sequential(
        ConvBNReLU6(3, 8, stride=2), ConvBNReLU6(8, 8, groups=8), Block(8, 16, 2),
        nn.Conv2d(16, 16, 1), nn.Hardtanh(-0.5, 2.0),
        nn.Conv2d(16, 12, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(12, 5))
    # Running statistics and affine parameters away from the identity, so folding them matters.
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            with kindle.no_grad():
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                if m.affine:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.2, 0.2)
    return net


def _close(a, b):
    assert a.shape == b.shape
    assert kindle.allclose(a, b, rtol=1e-5, atol=1e-5), (a - b).abs().max().item()


def _compiled_matches(net, x, fused):
    """kindle.compile(net) in eval mode without gradients: the eager output, `fused` fusions."""
    net.eval()
    cm = kindle.compile(net)
    with kindle.no_grad():
        want = net(x)
        _close(cm(x), want)
        assert _fused_count(cm) == fused
        _close(cm(x), want)  # the folded weights come from the cache the second time
    return cm, want


def test_compile_fuses_conv_batchnorm_and_activation_in_inference():
    x = kindle.randn(3, 3, 32, 32)
    # conv+bn+relu6 twice, conv1+bn1+relu, conv2+bn2, down's conv+bn, conv+hardtanh, conv+relu
    cm, want = _compiled_matches(_net(), x, 7)
    with kindle.inference_mode():
        _close(cm(x), want)
    # float64 model, the same structure
    net64 = _net().double().eval()
    with kindle.no_grad():
        _close(kindle.compile(net64)(x.double()), net64(x.double()))


def test_compile_runs_as_written_in_training_with_gradients_or_another_backend():
    net = _net()
    cm = kindle.compile(net)
    x = kindle.randn(2, 3, 16, 16)
    y = cm(x)  # training mode: batch statistics, running stats updated, gradients
    y.sum().backward()
    assert net[0][0].weight.grad is not None and cm._inference is None
    net.eval()
    y = cm(x)  # eval with gradients on: the original path, still differentiable
    assert y.requires_grad and cm._inference is None
    with kindle.no_grad():
        _close(cm(x), net(x))
        assert cm._inference is not None
        eager = kindle.compile(net, backend="eager")
        _close(eager(x), net(x))
        assert eager._inference is None


def test_compile_follows_updated_weights_statistics_and_replaced_modules():
    net = _net().eval()
    cm = kindle.compile(net)
    x = kindle.randn(2, 3, 16, 16)
    with kindle.no_grad():
        cm(x)
        net[0][0].weight.mul_(1.5)              # in place: the version counter moves
        net[0][1].running_var.fill_(0.25)
        _close(cm(x), net(x))
        net[0][1].running_mean = kindle.ones(8)  # a new buffer tensor
        _close(cm(x), net(x))
        net[2].bn1.eps = 0.5
        _close(cm(x), net(x))
        net[5] = nn.Conv2d(16, 12, 5, padding=2)  # a replaced child: traced again
        _close(cm(x), net(x))
        del net[6]
        _close(cm(x), net(x))
        net[1][1].train()                          # one batch norm back in training mode
        _close(cm(x), net(x))
    opt = kindle.optim.SGD(net.parameters(), lr=0.1)
    net.train()
    cm(x).sum().backward()
    opt.step()
    net.eval()
    with kindle.no_grad():
        _close(cm(x), net(x))


def test_compile_does_not_fuse_what_would_change_the_meaning():
    seen = []
    kindle.manual_seed(1)

    class TwoUses(nn.Module):  # the convolution's output is also returned: no folding
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.bn = nn.BatchNorm2d(4)
            self.act = nn.ReLU()

        def forward(self, x):
            y = self.conv(x)
            return self.act(self.bn(y)), y

    class MyBN(nn.BatchNorm2d):
        pass

    nets = {
        "two uses": TwoUses(),
        "bn subclass": nn.Sequential(nn.Conv2d(3, 4, 3), MyBN(4)),
        "reflect padding": nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"), nn.ReLU()),
        "no running stats": nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, track_running_stats=False)),
        "hooked conv": nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()),
        "leaky relu": nn.Sequential(nn.Conv2d(3, 4, 3), nn.LeakyReLU(0.1)),
    }
    nets["hooked conv"][0].register_forward_hook(lambda m, i, o: seen.append(o.shape))
    x = kindle.randn(2, 3, 8, 8)
    with kindle.no_grad():
        for name, net in nets.items():
            net.eval()
            cm = kindle.compile(net)
            got, want = cm(x), net(x)
            if isinstance(want, tuple):
                for a, b in zip(got, want):
                    _close(a, b)
            else:
                _close(got, want)
            assert _fused_count(cm, "ConvBNAct") == 0, name
    # (the batch norm and ReLU after the twice-used convolution still run as one pass)
    cm = kindle.compile(nets["two uses"])
    with kindle.no_grad():
        cm(x)
    assert _fused_count(cm, "CatBNAct") == 1
    assert len(seen) == 2  # the hook ran in the compiled call too


def test_compile_hooks_and_untraceable_models_run_as_written():
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.relu = nn.ReLU()

        def forward(self, x):
            if x.sum() > 0:  # data-dependent: the tracer cannot follow it
                return self.relu(self.conv(x))
            return self.conv(x)

    net = Branchy().eval()
    cm = kindle.compile(net)
    with kindle.no_grad():
        for sign in (1, -1):
            x = kindle.rand(1, 3, 6, 6) * sign
            _close(cm(x), net(x))
    assert cm._inference[1] is None
    calls = []
    net2 = _net().eval()
    cm2 = kindle.compile(net2)
    handle = net2.register_forward_hook(lambda m, i, o: calls.append(1))
    with kindle.no_grad():
        cm2(kindle.randn(1, 3, 16, 16))
    assert calls == [1]
    handle.remove()
    gh = nn.modules.module.register_module_forward_hook(lambda m, i, o: calls.append(2))
    try:
        with kindle.no_grad():
            cm2(kindle.randn(1, 3, 16, 16))
    finally:
        gh.remove()
    # every module's call, none fused away (and the OptimizedModule's own call)
    assert calls.count(2) == len(list(net2.modules())) + 1
    with kindle.no_grad():  # keyword arguments: as written
        _close(cm2(input=kindle.ones(1, 3, 16, 16)), net2(kindle.ones(1, 3, 16, 16)))


def test_modules_children_changes_advance_the_structure_epoch():
    from kindle.nn.modules.module import structure_epoch
    seq = nn.Sequential(nn.ReLU(), nn.ReLU())
    plain = nn.Module()
    ml = nn.ModuleList([nn.ReLU()])
    md = nn.ModuleDict({"a": nn.ReLU()})
    changes = [
        lambda: setattr(plain, "extra", nn.Tanh()),
        lambda: seq.append(nn.ReLU()),
        lambda: seq.insert(0, nn.Tanh()),
        lambda: seq.__delitem__(0),
        lambda: seq.__setitem__(0, nn.Sigmoid()),
        lambda: delattr(plain, "extra"),
        lambda: ml.insert(0, nn.Tanh()),
        lambda: ml.pop(0),
        lambda: ml.extend([nn.Tanh()]),
        lambda: md.__setitem__("b", nn.Tanh()),
        lambda: md.pop("a"),
        lambda: md.clear(),
        lambda: md.update({"c": nn.ReLU()}),
        lambda: plain.register_module("r", nn.ReLU()),
    ]
    for change in changes:
        before = structure_epoch()
        change()
        assert structure_epoch() != before, change
    before = structure_epoch()
    seq(kindle.ones(2))
    assert structure_epoch() == before


# ---- cat -> batch norm -> clamp

_cat_bn = kindle._C._nn._cat_batch_norm_clamp


def _bn_reference(parts, mean, var, w, b, eps, lo, hi):
    return F.batch_norm(kindle.cat(parts, 1), mean, var, w, b, False, 0.1, eps).clamp(lo, hi)


@pytest.mark.parametrize("dtype", [kindle.float32, kindle.float64])
@pytest.mark.parametrize("spatial", [(5, 7), (), (9,), (2, 3, 4)])
def test_cat_batch_norm_clamp_is_cat_then_batch_norm_then_clamp(dtype, spatial):
    gen = kindle.Generator().manual_seed(7)
    widths = (3, 1, 8)
    parts = [kindle.randn(2, c, *spatial, generator=gen, dtype=dtype) * 2 + 1 for c in widths]
    parts[1] = kindle.randn(2, *spatial, 1, generator=gen, dtype=dtype).movedim(-1, 1)  # non-contiguous
    C = sum(widths)
    mean = kindle.randn(C, generator=gen, dtype=dtype)
    var = kindle.rand(C, generator=gen, dtype=dtype) + 0.5
    w, b = kindle.randn(C, generator=gen, dtype=dtype), kindle.randn(C, generator=gen, dtype=dtype)
    for (lo, hi), affine, eps in itertools.product(((0.0, math.inf), (0.0, 6.0), (-math.inf, math.inf)),
                                                   (True, False), (1e-5, 0.1)):
        ww, bb = (w, b) if affine else (None, None)
        want = _bn_reference(parts, mean, var, ww, bb, eps, lo, hi)
        got = _cat_bn(parts, mean, (var + eps).rsqrt(), ww, bb, lo, hi)
        assert got.dtype == dtype and got.shape == want.shape
        assert kindle.equal(got, want), (lo, hi, affine, eps)
    one = _cat_bn(parts[2:], mean[:8], (var[:8] + 1e-5).rsqrt(), None, None, 0.0, math.inf)
    assert kindle.equal(one, _bn_reference(parts[2:], mean[:8], var[:8], None, None, 1e-5, 0.0, math.inf))


def test_cat_batch_norm_clamp_keeps_nan_and_refuses_bad_input():
    x = kindle.randn(1, 2, 3, 3)
    x[0, 0, 1, 1] = math.nan
    m, s = kindle.zeros(2), kindle.ones(2)
    got = _cat_bn([x], m, s, None, None, 0.0, 6.0)
    assert got[0, 0, 1, 1].isnan() and got.nan_to_num().min() >= 0 and got.nan_to_num().max() <= 6
    y = kindle.randn(1, 3, 3, 4)
    with pytest.raises(RuntimeError, match="alike"):
        _cat_bn([x, y], kindle.zeros(5), kindle.ones(5), None, None, 0.0, 6.0)
    with pytest.raises(RuntimeError, match="alike"):
        _cat_bn([x, x.double()], kindle.zeros(4), kindle.ones(4), None, None, 0.0, 6.0)
    with pytest.raises(RuntimeError, match="should contain 4 elements"):
        _cat_bn([x, x], kindle.zeros(2), kindle.ones(4), None, None, 0.0, 6.0)
    with pytest.raises(RuntimeError, match="min <= max"):
        _cat_bn([x], m, s, None, None, 1.0, 0.0)
    with pytest.raises(RuntimeError, match="at least one"):
        _cat_bn([], m, s, None, None, 0.0, 6.0)
    with pytest.raises(RuntimeError, match="inference-only"):
        _cat_bn([x.requires_grad_()], m, s, None, None, 0.0, 6.0)
    with kindle.no_grad():
        assert _cat_bn([x], m, s, None, None, 0.0, 6.0).shape == x.shape


class DenseLayer(nn.Module):
    def __init__(self, cin, growth):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(cin, 4 * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(4 * growth)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False)

    def forward(self, inputs):
        x = kindle.cat(inputs, 1)
        return self.conv2(self.relu2(self.norm2(self.conv1(self.relu1(self.norm1(x))))))


class Dense(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.layers = nn.ModuleList([DenseLayer(8 + 4 * i, 4) for i in range(3)])
        self.norm = nn.BatchNorm2d(20)
        self.norm_alone = nn.BatchNorm2d(20)

    def forward(self, x):
        feats = [self.stem(x)]
        for layer in self.layers:
            feats.append(layer(feats))
        y = F.relu(self.norm(kindle.cat(feats, dim=1)))
        return self.norm_alone(y)  # a lone batch norm: nothing to fuse it with


def test_compile_fuses_cat_batch_norm_relu():
    kindle.manual_seed(3)
    net = Dense()
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            with kindle.no_grad():
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    x = kindle.randn(2, 3, 10, 10)
    # per layer: conv1+norm2+relu2 and cat+norm1+relu1; then cat+norm+relu at the end
    cm, _ = _compiled_matches(net, x, 7)
    with kindle.no_grad():
        gm = cm._inference[1]
        assert not any(n.target is kindle.cat for n in gm.graph.nodes if n.op == "call_function")
        net.norm.running_var.mul_(2)  # in place: the cached invstd follows
        _close(cm(x), net(x))
        net.layers[1].norm1.train()
        _close(cm(x), net(x))


def test_compile_sees_hooks_added_later_and_autocast():
    net = _net().eval()
    cm = kindle.compile(net)
    x = kindle.randn(2, 3, 16, 16)
    seen = []
    with kindle.no_grad():
        want = net(x)
        cm(x)
        assert _fused_count(cm) == 7
        # hooks registered after the graph was traced still fire: the fused module calls its
        # modules in turn while they have hooks
        h1 = net[0][0].register_forward_hook(lambda m, i, o: seen.append("conv"))
        h2 = net[4].register_forward_pre_hook(lambda m, i: seen.append("hardtanh"))
        h3 = net[2].bn1.register_forward_hook(lambda m, i, o: seen.append("bn1"))
        _close(cm(x), want)
        assert sorted(seen) == ["bn1", "conv", "hardtanh"]
        for h in (h1, h2, h3):
            h.remove()
        seen.clear()
        _close(cm(x), want)
        assert seen == []
        # under autocast the model runs as written: the same dtypes as eager
        with kindle.autocast("cpu", dtype=kindle.bfloat16):
            got, ref = cm(x), net(x)
        assert got.dtype == ref.dtype
        assert kindle.equal(got, ref)


class Fire(nn.Module):
    """SqueezeNet's Fire module, as torchvision writes it."""

    def __init__(self, cin, squeeze, e1, e3):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze, e1, 1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze, e3, 3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return kindle.cat([self.expand1x1_activation(self.expand1x1(x)),
                           self.expand3x3_activation(self.expand3x3(x))], 1)


def test_compile_writes_concatenated_convolutions_in_place():
    kindle.manual_seed(5)
    # 16 and 32 channels on 12x12: the 3x3 expansion takes the Winograd path, the 1x1 the GEMM one
    net = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(inplace=True), Fire(16, 16, 32, 32),
                        Fire(64, 16, 24, 40), nn.MaxPool2d(3, 2, ceil_mode=True), Fire(64, 8, 8, 8))
    x = kindle.randn(2, 3, 26, 26)
    # conv+relu, then per Fire: squeeze+relu and the two expansions written into one tensor
    cm, want = _compiled_matches(net, x, 7)
    assert _fused_count(cm, "ConvCat") == 3
    seen = []
    with kindle.no_grad():
        h = net[2].expand3x3.register_forward_hook(lambda m, i, o: seen.append(o.shape))
        _close(cm(x), want)
        assert seen == [(2, 32, 12, 12)]
        h.remove()
        x2 = kindle.randn(1, 3, 30, 30)  # another input size: the same graph
        _close(cm(x2), net(x2))
    net64 = nn.Sequential(Fire(4, 4, 4, 4)).double()
    _compiled_matches(net64, kindle.randn(1, 4, 5, 5, dtype=kindle.float64), 2)
