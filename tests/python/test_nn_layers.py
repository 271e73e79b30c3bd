"""Every kindle.nn layer against torch.nn: the same constructor arguments give the same repr and the
same state_dict keys and shapes; with torch's weights loaded, the same outputs, input gradients,
parameter gradients and updated buffers (float32, atol 1e-5), in training and in eval mode."""
import numpy as np
import pytest

import kindle
import kindle.nn as nn

RTOL, ATOL = 1e-4, 1e-5
_W = np.random.default_rng(7)
CE_W = _W.uniform(0.5, 2.0, 4).astype(np.float32)
POS_W = _W.uniform(0.5, 2.0, 3).astype(np.float32)


# Input specs: ("f", shape) normal floats needing grad; ("p", shape) probabilities in (0.05, 0.95)
# needing grad; ("t", shape) normal floats, no grad; ("tp", shape) probabilities, no grad; ("pos",
# shape) positive floats, no grad; ("sign", shape) +-1; ("i", shape, high) int64 in [0, high).
def f(*s):
    return ("f", s)


def i(high, *s):
    return ("i", s, high)


CASES = [
    # name, factory(lib), inputs, options
    ("Identity", lambda L: L.nn.Identity(3, unused=True), [f(2, 3)], {}),
    ("Linear", lambda L: L.nn.Linear(4, 3), [f(2, 4)], {}),
    ("Linear-nobias-3d", lambda L: L.nn.Linear(4, 3, bias=False), [f(2, 5, 4)], {}),
    ("Bilinear", lambda L: L.nn.Bilinear(3, 4, 2), [f(5, 3), f(5, 4)], {}),
    ("Flatten", lambda L: L.nn.Flatten(), [f(2, 3, 4)], {}),
    ("Flatten-0-1", lambda L: L.nn.Flatten(0, 1), [f(2, 3, 4)], {}),
    ("Unflatten", lambda L: L.nn.Unflatten(1, (2, 3)), [f(4, 6)], {}),
    ("Conv1d", lambda L: L.nn.Conv1d(3, 4, 3, stride=2, padding=1), [f(2, 3, 9)], {}),
    ("Conv1d-same-groups", lambda L: L.nn.Conv1d(4, 4, 3, groups=2, padding="same", dilation=2), [f(2, 4, 8)], {}),
    ("Conv1d-reflect", lambda L: L.nn.Conv1d(3, 2, 3, padding=1, padding_mode="reflect"), [f(2, 3, 7)], {}),
    ("Conv2d", lambda L: L.nn.Conv2d(3, 4, 3, padding=1), [f(2, 3, 6, 6)], {}),
    ("Conv2d-rect", lambda L: L.nn.Conv2d(2, 4, (3, 2), stride=(2, 1), dilation=(1, 2), groups=2, bias=False),
     [f(2, 2, 7, 6)], {}),
    ("Conv2d-circular", lambda L: L.nn.Conv2d(3, 2, 3, padding=1, padding_mode="circular"), [f(1, 3, 5, 5)], {}),
    ("Conv2d-same-replicate", lambda L: L.nn.Conv2d(2, 2, 4, padding="same", padding_mode="replicate"),
     [f(1, 2, 5, 5)], {}),
    ("Conv2d-unbatched", lambda L: L.nn.Conv2d(2, 3, 3), [f(2, 5, 5)], {}),
    ("ConvTranspose1d", lambda L: L.nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1, output_padding=1),
     [f(2, 3, 5)], {}),
    ("ConvTranspose2d", lambda L: L.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, groups=2), [f(2, 4, 4, 4)], {}),
    ("ConvTranspose2d-dil", lambda L: L.nn.ConvTranspose2d(2, 3, (2, 3), dilation=2, bias=False), [f(1, 2, 3, 3)], {}),
    ("Conv3d", lambda L: L.nn.Conv3d(3, 4, 3, padding=1), [f(2, 3, 5, 6, 5)], {}),
    ("Conv3d-rect-groups", lambda L: L.nn.Conv3d(4, 4, (3, 2, 2), stride=(2, 1, 1), dilation=(1, 2, 1), groups=2),
     [f(1, 4, 7, 6, 5)], {}),
    ("Conv3d-same-replicate", lambda L: L.nn.Conv3d(2, 2, 3, padding="same", padding_mode="replicate"),
     [f(1, 2, 4, 5, 4)], {}),
    ("Conv3d-unbatched", lambda L: L.nn.Conv3d(2, 3, 2), [f(2, 4, 4, 4)], {}),
    ("ConvTranspose3d", lambda L: L.nn.ConvTranspose3d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2),
     [f(1, 4, 3, 3, 3)], {}),
    ("MaxPool3d", lambda L: L.nn.MaxPool3d(2), [f(2, 3, 4, 6, 6)], {}),
    ("MaxPool3d-indices", lambda L: L.nn.MaxPool3d(3, 2, 1, return_indices=True, ceil_mode=True), [f(1, 2, 5, 6, 7)],
     {}),
    ("AvgPool3d", lambda L: L.nn.AvgPool3d(3, 2, 1, count_include_pad=False), [f(2, 3, 5, 7, 7)], {}),
    ("AdaptiveAvgPool3d", lambda L: L.nn.AdaptiveAvgPool3d((2, 3, None)), [f(2, 3, 5, 7, 5)], {}),
    ("AdaptiveMaxPool3d", lambda L: L.nn.AdaptiveMaxPool3d(2, return_indices=True), [f(1, 3, 5, 7, 5)], {}),
    ("LPPool3d", lambda L: L.nn.LPPool3d(2, 2), [("pos", (1, 2, 4, 4, 4))], {}),
    ("Dropout3d", lambda L: L.nn.Dropout3d(0.5), [f(2, 3, 2, 2, 2)], {"train": False}),
    ("MaxPool1d", lambda L: L.nn.MaxPool1d(3, 2), [f(2, 3, 9)], {}),
    ("MaxPool2d", lambda L: L.nn.MaxPool2d(2), [f(2, 3, 6, 6)], {}),
    ("MaxPool2d-ceil", lambda L: L.nn.MaxPool2d(3, 2, 1, ceil_mode=True), [f(1, 2, 6, 7)], {}),
    ("MaxPool2d-indices", lambda L: L.nn.MaxPool2d(2, return_indices=True), [f(1, 2, 4, 4)], {}),
    ("AvgPool1d", lambda L: L.nn.AvgPool1d(3, 2, 1), [f(2, 3, 9)], {}),
    ("LPPool1d", lambda L: L.nn.LPPool1d(2, 3, 2), [f(2, 3, 9)], {}),
    ("LPPool2d", lambda L: L.nn.LPPool2d(3, (2, 3), ceil_mode=True), [("pos", (2, 3, 7, 8))], {}),
    ("AvgPool2d", lambda L: L.nn.AvgPool2d(3, 2, 1, count_include_pad=False), [f(2, 3, 7, 7)], {}),
    ("AvgPool2d-divisor", lambda L: L.nn.AvgPool2d(2, divisor_override=3), [f(1, 2, 4, 4)], {}),
    ("AdaptiveAvgPool1d", lambda L: L.nn.AdaptiveAvgPool1d(4), [f(2, 3, 9)], {}),
    ("AdaptiveAvgPool2d", lambda L: L.nn.AdaptiveAvgPool2d((3, None)), [f(2, 3, 7, 5)], {}),
    ("AdaptiveMaxPool1d", lambda L: L.nn.AdaptiveMaxPool1d(2), [f(2, 3, 7)], {}),
    ("AdaptiveMaxPool2d", lambda L: L.nn.AdaptiveMaxPool2d(3), [f(2, 3, 7, 7)], {}),
    ("Upsample-nearest", lambda L: L.nn.Upsample(scale_factor=2), [f(1, 2, 3, 3)], {}),
    ("Upsample-bilinear", lambda L: L.nn.Upsample(size=(5, 4), mode="bilinear", align_corners=False),
     [f(1, 2, 3, 3)], {}),
    ("Upsample-linear", lambda L: L.nn.Upsample(scale_factor=2, mode="linear"), [f(1, 2, 4)], {}),
    ("UpsamplingBilinear2d", lambda L: L.nn.UpsamplingBilinear2d(scale_factor=2), [f(1, 2, 3, 3)], {}),
    ("UpsamplingNearest2d", lambda L: L.nn.UpsamplingNearest2d(size=5), [f(1, 2, 3, 3)], {}),
    ("BatchNorm1d", lambda L: L.nn.BatchNorm1d(3), [f(4, 3)], {}),
    ("BatchNorm1d-3d", lambda L: L.nn.BatchNorm1d(3, momentum=0.3), [f(4, 3, 5)], {}),
    ("BatchNorm2d-cma", lambda L: L.nn.BatchNorm2d(3, momentum=None), [f(2, 3, 4, 4)], {}),
    ("BatchNorm2d-nostats", lambda L: L.nn.BatchNorm2d(3, affine=False, track_running_stats=False),
     [f(2, 3, 4, 4)], {}),
    ("LayerNorm", lambda L: L.nn.LayerNorm((4, 5)), [f(2, 3, 4, 5)], {}),
    ("LayerNorm-noaffine", lambda L: L.nn.LayerNorm(5, elementwise_affine=False), [f(2, 5)], {}),
    ("LayerNorm-nobias", lambda L: L.nn.LayerNorm(5, bias=False, eps=1e-3), [f(3, 5)], {}),
    ("GroupNorm", lambda L: L.nn.GroupNorm(2, 4), [f(2, 4, 3, 3)], {}),
    ("InstanceNorm1d", lambda L: L.nn.InstanceNorm1d(3, affine=True), [f(2, 3, 6)], {}),
    ("InstanceNorm1d-unbatched", lambda L: L.nn.InstanceNorm1d(3), [f(3, 6)], {}),
    ("InstanceNorm2d-stats", lambda L: L.nn.InstanceNorm2d(3, track_running_stats=True), [f(2, 3, 4, 4)], {}),
    ("RMSNorm", lambda L: L.nn.RMSNorm(5), [f(2, 3, 5)], {}),
    ("RMSNorm-eps", lambda L: L.nn.RMSNorm([3, 5], eps=1e-3, elementwise_affine=False), [f(2, 3, 5)], {}),
    ("Dropout", lambda L: L.nn.Dropout(0.3), [f(4, 5)], {"train": False}),
    ("Dropout1d", lambda L: L.nn.Dropout1d(0.3, inplace=True), [f(2, 3, 4)], {"train": False}),
    ("Dropout2d", lambda L: L.nn.Dropout2d(), [f(2, 3, 4, 4)], {"train": False}),
    ("AlphaDropout", lambda L: L.nn.AlphaDropout(0.2), [f(4, 5)], {"train": False}),
    ("Embedding", lambda L: L.nn.Embedding(10, 3, padding_idx=1), [i(10, 2, 4)], {}),
    ("Embedding-maxnorm", lambda L: L.nn.Embedding(10, 3, max_norm=1.0), [i(10, 5)], {}),
    ("EmbeddingBag-sum", lambda L: L.nn.EmbeddingBag(10, 3, mode="sum"), [i(10, 7), ("offsets", [0, 2, 2, 5])], {}),
    ("EmbeddingBag-max", lambda L: L.nn.EmbeddingBag(10, 3, mode="max"), [i(10, 3, 4)], {}),
    ("EmbeddingBag-weights", lambda L: L.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0),
     [i(10, 6), ("offsets", [0, 3]), ("t", (6,))], {}),
    ("Unfold", lambda L: L.nn.Unfold((2, 3), dilation=1, padding=1, stride=2), [f(2, 3, 5, 6)], {}),
    ("Fold", lambda L: L.nn.Fold((4, 5), 2, padding=(0, 1), stride=1), [f(2, 8, 18)], {}),
    ("PixelShuffle", lambda L: L.nn.PixelShuffle(2), [f(1, 8, 3, 3)], {}),
    ("PixelUnshuffle", lambda L: L.nn.PixelUnshuffle(2), [f(1, 2, 4, 4)], {}),
    ("ZeroPad2d", lambda L: L.nn.ZeroPad2d((1, 2, 0, 1)), [f(1, 2, 3, 3)], {}),
    ("ZeroPad1d", lambda L: L.nn.ZeroPad1d(2), [f(1, 2, 3)], {}),
    ("ConstantPad1d", lambda L: L.nn.ConstantPad1d(2, 3.5), [f(1, 2, 4)], {}),
    ("ConstantPad2d", lambda L: L.nn.ConstantPad2d((1, 0, 2, 1), -1.0), [f(1, 2, 3, 3)], {}),
    ("ReflectionPad1d", lambda L: L.nn.ReflectionPad1d((1, 2)), [f(1, 2, 4)], {}),
    ("ReflectionPad2d", lambda L: L.nn.ReflectionPad2d(1), [f(1, 2, 3, 3)], {}),
    ("ReplicationPad1d", lambda L: L.nn.ReplicationPad1d((1, 2)), [f(1, 2, 4)], {}),
    ("ReplicationPad2d", lambda L: L.nn.ReplicationPad2d((2, 0, 1, 1)), [f(1, 2, 3, 3)], {}),
    ("CircularPad1d", lambda L: L.nn.CircularPad1d(1), [f(1, 2, 4)], {}),
    ("CircularPad2d", lambda L: L.nn.CircularPad2d((1, 1, 2, 0)), [f(1, 2, 3, 3)], {}),
    ("CosineSimilarity", lambda L: L.nn.CosineSimilarity(dim=1), [f(3, 5), f(3, 5)], {}),
    ("PairwiseDistance", lambda L: L.nn.PairwiseDistance(p=1.0, keepdim=True), [f(3, 5), f(3, 5)], {}),
    # activations
    ("ReLU", lambda L: L.nn.ReLU(), [f(3, 4)], {}),
    ("ReLU-inplace", lambda L: L.nn.ReLU(inplace=True), [("t", (3, 4))], {}),
    ("ReLU6", lambda L: L.nn.ReLU6(), [f(3, 4)], {"scale": 5.0}),
    ("LeakyReLU", lambda L: L.nn.LeakyReLU(0.2), [f(3, 4)], {}),
    ("ELU", lambda L: L.nn.ELU(alpha=0.5), [f(3, 4)], {}),
    ("SELU", lambda L: L.nn.SELU(), [f(3, 4)], {}),
    ("CELU", lambda L: L.nn.CELU(0.7), [f(3, 4)], {}),
    ("GELU", lambda L: L.nn.GELU(), [f(3, 4)], {}),
    ("GELU-tanh", lambda L: L.nn.GELU("tanh"), [f(3, 4)], {}),
    ("SiLU", lambda L: L.nn.SiLU(), [f(3, 4)], {}),
    ("Mish", lambda L: L.nn.Mish(), [f(3, 4)], {}),
    ("Hardtanh", lambda L: L.nn.Hardtanh(-0.5, 0.5), [f(3, 4)], {}),
    ("Hardswish", lambda L: L.nn.Hardswish(), [f(3, 4)], {"scale": 4.0}),
    ("Hardsigmoid", lambda L: L.nn.Hardsigmoid(), [f(3, 4)], {"scale": 4.0}),
    ("Softplus", lambda L: L.nn.Softplus(beta=2, threshold=5), [f(3, 4)], {"scale": 3.0}),
    ("Softsign", lambda L: L.nn.Softsign(), [f(3, 4)], {}),
    ("Tanhshrink", lambda L: L.nn.Tanhshrink(), [f(3, 4)], {}),
    ("Threshold", lambda L: L.nn.Threshold(0.1, 20.0), [f(3, 4)], {}),
    ("LogSigmoid", lambda L: L.nn.LogSigmoid(), [f(3, 4)], {}),
    ("Sigmoid", lambda L: L.nn.Sigmoid(), [f(3, 4)], {}),
    ("Tanh", lambda L: L.nn.Tanh(), [f(3, 4)], {}),
    ("Softmax", lambda L: L.nn.Softmax(dim=1), [f(3, 4)], {}),
    ("LogSoftmax", lambda L: L.nn.LogSoftmax(dim=-1), [f(2, 3, 4)], {}),
    ("Softmin", lambda L: L.nn.Softmin(dim=0), [f(3, 4)], {}),
    ("Softmax2d", lambda L: L.nn.Softmax2d(), [f(2, 3, 2, 2)], {}),
    ("GLU", lambda L: L.nn.GLU(), [f(3, 4)], {}),
    ("GLU-dim0", lambda L: L.nn.GLU(0), [f(4, 3)], {}),
    ("PReLU", lambda L: L.nn.PReLU(), [f(3, 4)], {}),
    ("PReLU-channels", lambda L: L.nn.PReLU(3, init=0.1), [f(2, 3, 4)], {}),
    # losses
    ("MSELoss", lambda L: L.nn.MSELoss(), [f(3, 4), ("t", (3, 4))], {}),
    ("L1Loss-sum", lambda L: L.nn.L1Loss(reduction="sum"), [f(3, 4), ("t", (3, 4))], {}),
    ("SmoothL1Loss", lambda L: L.nn.SmoothL1Loss(beta=0.5), [f(3, 4), ("t", (3, 4))], {}),
    ("HuberLoss-none", lambda L: L.nn.HuberLoss(reduction="none", delta=0.7), [f(3, 4), ("t", (3, 4))], {}),
    ("CrossEntropyLoss", lambda L: L.nn.CrossEntropyLoss(weight=L.tensor(CE_W), label_smoothing=0.1),
     [f(5, 4), i(4, 5)], {}),
    ("CrossEntropyLoss-probs", lambda L: L.nn.CrossEntropyLoss(), [f(5, 4), ("tp", (5, 4))], {}),
    ("CrossEntropyLoss-2d", lambda L: L.nn.CrossEntropyLoss(ignore_index=2, reduction="sum"),
     [f(2, 4, 3, 3), i(4, 2, 3, 3)], {}),
    ("NLLLoss", lambda L: L.nn.NLLLoss(ignore_index=1), [f(6, 4), i(4, 6)], {}),
    ("BCELoss", lambda L: L.nn.BCELoss(weight=L.tensor(POS_W)), [("p", (4, 3)), ("tp", (4, 3))], {}),
    ("BCEWithLogitsLoss", lambda L: L.nn.BCEWithLogitsLoss(pos_weight=L.tensor(POS_W)),
     [f(4, 3), ("tp", (4, 3))], {}),
    ("KLDivLoss", lambda L: L.nn.KLDivLoss(reduction="batchmean"), [f(3, 4), ("tp", (3, 4))], {}),
    ("KLDivLoss-logtarget", lambda L: L.nn.KLDivLoss(reduction="sum", log_target=True), [f(3, 4), ("t", (3, 4))],
     {}),
    ("PoissonNLLLoss", lambda L: L.nn.PoissonNLLLoss(), [f(3, 4), ("pos", (3, 4))], {}),
    ("PoissonNLLLoss-full", lambda L: L.nn.PoissonNLLLoss(log_input=False, full=True),
     [("p", (3, 4)), ("pos", (3, 4))], {}),
    ("GaussianNLLLoss", lambda L: L.nn.GaussianNLLLoss(), [f(3, 4), ("t", (3, 4)), ("pos", (3, 4))], {}),
    ("MarginRankingLoss", lambda L: L.nn.MarginRankingLoss(0.2), [f(5), f(5), ("sign", (5,))], {}),
    ("HingeEmbeddingLoss", lambda L: L.nn.HingeEmbeddingLoss(), [f(5), ("sign", (5,))], {}),
    ("CosineEmbeddingLoss", lambda L: L.nn.CosineEmbeddingLoss(0.1), [f(4, 3), f(4, 3), ("sign", (4,))], {}),
    ("MultiMarginLoss", lambda L: L.nn.MultiMarginLoss(p=2, margin=0.7), [f(4, 5), i(5, 4)], {}),
    ("MultiMarginLossWeighted", lambda L: L.nn.MultiMarginLoss(weight=L.tensor(CE_W.tolist() + [1.5]),
                                                               reduction="sum"), [f(4, 5), i(5, 4)], {}),
    ("MultiLabelMarginLoss", lambda L: L.nn.MultiLabelMarginLoss(),
     [f(3, 4), ("lab", [[3, 0, -1, 1], [1, 2, 3, 0], [2, -1, 0, 0]])], {}),
    ("TripletMarginWithDistanceLoss", lambda L: L.nn.TripletMarginWithDistanceLoss(margin=0.5, swap=True),
     [f(4, 3), f(4, 3), f(4, 3)], {}),
    ("TripletMarginWithDistanceLossL1", lambda L: L.nn.TripletMarginWithDistanceLoss(
        distance_function=lambda a, b: (a - b).abs().sum(-1), reduction="none"), [f(4, 3), f(4, 3), f(4, 3)], {}),
    ("TripletMarginLoss", lambda L: L.nn.TripletMarginLoss(margin=0.5, p=1, swap=True),
     [f(4, 3), f(4, 3), f(4, 3)], {}),
]


def _inputs(specs, seed, scale):
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        kind = spec[0]
        if kind == "i":
            out.append((rng.integers(0, spec[2], spec[1]).astype(np.int64), False))
        elif kind in ("offsets", "lab"):  # fixed int64 values
            out.append((np.array(spec[1], dtype=np.int64), False))
        elif kind == "sign":
            out.append((rng.choice([-1.0, 1.0], spec[1]).astype(np.float32), False))
        elif kind in ("p", "tp"):
            out.append((rng.uniform(0.05, 0.95, spec[1]).astype(np.float32), kind == "p"))
        elif kind == "pos":
            out.append((rng.uniform(0.2, 3.0, spec[1]).astype(np.float32), False))
        else:
            out.append(((rng.standard_normal(spec[1]) * scale).astype(np.float32), kind == "f"))
    return out


def _leaf(lib, a, requires_grad):
    t = lib.tensor(a.copy())
    return t.requires_grad_() if requires_grad else t


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _np(t):
    return t.detach().numpy()


def _copy_torch_state(km, tm):
    sd = {k: kindle.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()}
    km.load_state_dict(sd)


def _run(lib, module, arrays, seed):
    leaves = [_leaf(lib, a, rg) for a, rg in arrays]
    outs = _as_tuple(module(*leaves))
    rng = np.random.default_rng(seed + 1)
    loss = None
    for o in outs:
        if o.is_floating_point() and o.requires_grad:
            w = lib.tensor(rng.standard_normal(tuple(o.shape)).astype(np.float32))
            term = (o * w).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    grads = [None if not rg else (None if t.grad is None else t.grad.numpy()) for t, (_, rg) in zip(leaves, arrays)]
    pgrads = {n: (None if p.grad is None else p.grad.numpy()) for n, p in module.named_parameters()}
    state = {k: v.detach().numpy() for k, v in module.state_dict().items()}
    leaf_vals = [_np(t) for t in leaves]  # in-place modules change their inputs
    return [_np(o) for o in outs], grads, pgrads, state, leaf_vals


def _assert_close(a, b, what):
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    if a.dtype.kind in "iub":
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=what)


def _compare_runs(kr, tr, tag):
    for name, ka, ta in zip(("outputs", "input grads", "inputs after"), (kr[0], kr[1], kr[4]), (tr[0], tr[1], tr[4])):
        assert len(ka) == len(ta), f"{tag} {name}"
        for j, (x, y) in enumerate(zip(ka, ta)):
            assert (x is None) == (y is None), f"{tag} {name}[{j}]"
            if x is not None:
                _assert_close(x, y, f"{tag} {name}[{j}]")
    assert kr[2].keys() == tr[2].keys()
    for n in kr[2]:
        assert (kr[2][n] is None) == (tr[2][n] is None), f"{tag} grad of {n}"
        if kr[2][n] is not None:
            _assert_close(kr[2][n], tr[2][n], f"{tag} grad of {n}")
    assert list(kr[3]) == list(tr[3])
    for n in kr[3]:
        _assert_close(kr[3][n], tr[3][n], f"{tag} state {n}")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_layer_matches_torch(case):
    torch = pytest.importorskip("torch")
    name, factory, specs, opts = case
    torch.manual_seed(0)
    tm = factory(torch)
    km = factory(kindle)
    assert repr(km) == repr(tm)
    ksd, tsd = km.state_dict(), tm.state_dict()
    assert list(ksd) == list(tsd)
    for k in tsd:
        assert tuple(ksd[k].shape) == tuple(tsd[k].shape) and str(ksd[k].dtype)[7:] == str(tsd[k].dtype)[6:], k
    assert [n for n, _ in km.named_parameters()] == [n for n, _ in tm.named_parameters()]
    _copy_torch_state(km, tm)
    arrays = _inputs(specs, seed=len(name), scale=opts.get("scale", 1.0))
    modes = ["train", "eval"] if opts.get("train", True) else ["eval"]
    for mode in modes:
        km.train(mode == "train")
        tm.train(mode == "train")
        km.zero_grad()
        tm.zero_grad()
        _compare_runs(_run(kindle, km, arrays, 3), _run(torch, tm, arrays, 3), f"{name} ({mode})")


def test_batchnorm_running_stats_over_steps():
    torch = pytest.importorskip("torch")
    for momentum in (0.1, None):
        km, tm = nn.BatchNorm1d(3, momentum=momentum), torch.nn.BatchNorm1d(3, momentum=momentum)
        rng = np.random.default_rng(3)
        for _ in range(4):
            x = (rng.standard_normal((6, 3)) * 2 + 1).astype(np.float32)
            km(kindle.from_numpy(x))
            tm(torch.from_numpy(x))
        for key in ("running_mean", "running_var", "num_batches_tracked"):
            _assert_close(getattr(km, key).numpy(), getattr(tm, key).numpy(), key)
        km.eval()
        tm.eval()
        x = rng.standard_normal((2, 3)).astype(np.float32)
        _assert_close(_np(km(kindle.from_numpy(x))), tm(torch.from_numpy(x)).detach().numpy(), "eval output")


def test_conv_transpose_output_size():
    torch = pytest.importorskip("torch")
    km, tm = nn.ConvTranspose2d(2, 3, 3, stride=2), torch.nn.ConvTranspose2d(2, 3, 3, stride=2)
    _copy_torch_state(km, tm)
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    ko = km(kindle.from_numpy(x), output_size=[10, 10])
    to = tm(torch.from_numpy(x), output_size=[10, 10])
    assert ko.shape == (1, 3, 10, 10)
    _assert_close(_np(ko), to.detach().numpy(), "output_size")
    with pytest.raises(ValueError, match="requested an output size of \\[12, 12\\]"):
        km(kindle.from_numpy(x), output_size=[12, 12])


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", [
    (1, 0, 1, 2, 1),  # an output padding of a whole stride (the dilation allows it)
    (2, 0, 3, 4, 1), (2, 1, 1, 3, 2), (3, 2, 2, 1, 1), (2, 1, 1, 1, 1), (1, 1, 0, 1, 4)])
def test_conv_transpose2d_geometries_with_gradients(stride, padding, output_padding, dilation, groups):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    x = torch.randn(2, 8, 5, 6, requires_grad=True)
    w = torch.randn(8, 3, 3, 4, requires_grad=True)
    b = torch.randn(3 * groups, requires_grad=True)
    args = dict(stride=stride, padding=padding, output_padding=output_padding, dilation=dilation, groups=groups)
    out = torch.nn.functional.conv_transpose2d(x, w, b, **args)
    kx, kw, kb = (kindle.tensor(t.detach().numpy(), requires_grad=True) for t in (x, w, b))
    ko = kindle.nn.functional.conv_transpose2d(kx, kw, kb, **args)
    assert ko.shape == out.shape
    g = torch.randn_like(out)
    (out * g).sum().backward()
    (ko * kindle.tensor(g.numpy())).sum().backward()
    for got, want in [(ko, out), (kx.grad, x.grad), (kw.grad, w.grad), (kb.grad, b.grad)]:
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)


def test_embedding_from_pretrained():
    w = kindle.randn(5, 3)
    e = nn.Embedding.from_pretrained(w)
    assert not e.weight.requires_grad and e.num_embeddings == 5 and e.embedding_dim == 3
    np.testing.assert_array_equal(_np(e(kindle.tensor([4, 0]))), w.numpy()[[4, 0]])
    assert nn.Embedding.from_pretrained(w, freeze=False, padding_idx=-1).padding_idx == 4
    b = nn.EmbeddingBag.from_pretrained(w, mode="sum")
    np.testing.assert_allclose(_np(b(kindle.tensor([[1, 2]]))), w.numpy()[[1, 2]].sum(0, keepdims=True), rtol=1e-6)
    assert not b.weight.requires_grad
    with pytest.raises(AssertionError, match="2-dimensional"):
        nn.Embedding.from_pretrained(kindle.zeros(3))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)


def test_dropout_training_statistics():
    kindle.manual_seed(0)
    x = kindle.ones(200, 50)
    d = nn.Dropout(0.3)
    y = d(x).numpy()
    assert abs((y == 0).mean() - 0.3) < 0.03
    np.testing.assert_allclose(y[y != 0], 1 / 0.7, rtol=1e-6)
    d.eval()
    assert d(x) is x
    kindle.manual_seed(1)
    a = nn.Dropout2d(0.5)(kindle.ones(4, 30, 3, 3)).numpy()
    assert np.all((a == 0).all(axis=(2, 3)) | (a != 0).all(axis=(2, 3)))  # whole channels
    # Dropout3d draws its channel mask as torch does: a seed gives torch's channels
    torch = pytest.importorskip("torch")
    kindle.manual_seed(2)
    torch.manual_seed(2)
    b = nn.Dropout3d(0.4)(kindle.ones(3, 20, 2, 3, 2)).numpy()
    np.testing.assert_array_equal(b, torch.nn.Dropout3d(0.4)(torch.ones(3, 20, 2, 3, 2)).numpy())
    assert np.all((b == 0).all(axis=(2, 3, 4)) | (b != 0).all(axis=(2, 3, 4)))


def test_layer_argument_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv1d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(2, 2, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="num_channels \\(5\\) must be divisible by num_groups \\(2\\)"):
        nn.GroupNorm(2, 5)
    with pytest.raises(ValueError, match="expected 4D input \\(got 3D input\\)"):
        nn.BatchNorm2d(3)(kindle.randn(2, 3, 4))
    with pytest.raises(ValueError, match="expected 2D or 3D input \\(got 4D input\\)"):
        nn.InstanceNorm1d(3)(kindle.randn(1, 2, 3, 4))
    with pytest.raises(ValueError, match="expected input's size at dim=1 to match num_features \\(3\\)"):
        nn.InstanceNorm1d(3, affine=True)(kindle.randn(2, 4, 5))
    with pytest.raises(AssertionError, match="max_val \\(0.0\\) must be greater than min_val \\(1.0\\)"):
        nn.Hardtanh(1.0, 0.0)
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        nn.Unflatten(1, (2, 2.0))
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D"):
        nn.Softmax2d()(kindle.randn(3, 4))
    with pytest.raises(RuntimeError):
        nn.Linear(3, 2)(kindle.randn(4, 5))  # shape mismatch from the op, as in torch


def test_legacy_loss_reduction_arguments():
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        m = nn.MSELoss(size_average=False)
    assert m.reduction == "sum"
    with pytest.warns(UserWarning):
        assert nn.L1Loss(reduce=False).reduction == "none"


def test_module_dtype_argument_and_double_forward():
    torch = pytest.importorskip("torch")
    km = nn.Linear(3, 2, dtype=kindle.float64)
    assert km.weight.dtype == kindle.float64 and km.bias.dtype == kindle.float64
    tm = torch.nn.Linear(3, 2, dtype=torch.float64)
    km.load_state_dict({k: kindle.from_numpy(v.numpy().copy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 3))
    np.testing.assert_allclose(_np(km(kindle.from_numpy(x))), tm(torch.from_numpy(x)).detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_matches_torch(reduction, zero_infinity):
    """Values and gradients (through log_softmax and at a log_probs leaf) against torch: padded and
    concatenated targets, repeated labels, empty targets, unequal input lengths, and an input too
    short for its target (infinite loss: NaN gradient, or zero with zero_infinity)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    T, N, C, S = 12, 5, 6, 5
    logits = rng.standard_normal((T, N, C))
    tg = rng.integers(1, C, (N, S))
    tg[1, 2] = tg[1, 1]
    il, tl = [12, 10, 7, 12, 2], [5, 3, 4, 0, 4]
    kx, tx = kindle.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
    kl = nn.CTCLoss(reduction=reduction, zero_infinity=zero_infinity)(kx.log_softmax(2), kindle.tensor(tg), il, tl)
    tloss = torch.nn.CTCLoss(reduction=reduction, zero_infinity=zero_infinity)(tx.log_softmax(2), torch.tensor(tg),
                                                                                il, tl)
    np.testing.assert_allclose(kl.detach().numpy(), tloss.detach().numpy(), rtol=1e-10)
    g = rng.standard_normal(tuple(tloss.shape))
    kl.backward(kindle.tensor(g))
    tloss.backward(torch.tensor(g))
    np.testing.assert_allclose(kx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12, equal_nan=True)
    lpk = kindle.tensor(torch.tensor(logits).log_softmax(2).numpy(), requires_grad=True)
    lpt = torch.tensor(logits).log_softmax(2).requires_grad_()
    flat = np.concatenate([tg[b, :tl[b]] for b in range(N)])
    a = kindle.nn.functional.ctc_loss(lpk, kindle.tensor(flat), kindle.tensor(il), kindle.tensor(tl),
                                      reduction=reduction, zero_infinity=zero_infinity)
    b = torch.nn.functional.ctc_loss(lpt, torch.tensor(flat), torch.tensor(il), torch.tensor(tl), reduction=reduction,
                                     zero_infinity=zero_infinity)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10)
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_allclose(lpk.grad.numpy(), lpt.grad.numpy(), rtol=1e-9, atol=1e-12, equal_nan=True)


def test_ctc_loss_unbatched_and_errors():
    torch = pytest.importorskip("torch")
    lp = np.log(np.full((6, 4), 0.25))
    k = nn.functional.ctc_loss(kindle.tensor(lp), kindle.tensor([1, 2]), [6], [2])
    t = torch.nn.functional.ctc_loss(torch.tensor(lp), torch.tensor([1, 2]), [6], [2])
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=1e-10)
    with pytest.raises(ValueError):
        nn.functional.ctc_loss(kindle.tensor(lp), kindle.tensor([1, 2]), [6], [2], reduction="avg")
    with pytest.raises(RuntimeError, match="input_lengths"):
        nn.functional.ctc_loss(kindle.tensor(lp), kindle.tensor([1, 2]), [7], [2])
    with pytest.raises(RuntimeError, match="blank"):
        nn.functional.ctc_loss(kindle.tensor(lp), kindle.tensor([1, 2]), [6], [2], blank=4)


@pytest.mark.parametrize("nd,shape,kernel,out", [(2, (2, 3, 9, 11), 3, (4, 5)), (2, (2, 7, 7), (2, 3), (5, 3)),
                                                 (2, (1, 2, 6, 6), 2, 1), (3, (2, 2, 7, 8, 9), 2, (3, 4, 5))])
def test_fractional_max_pool_matches_torch(nd, shape, kernel, out):
    """Given the same _random_samples, the windows, values, indices and gradients are torch's; drawn
    from a seed, the samples are torch's too."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    planes = (shape[0], shape[1]) if len(shape) == nd + 2 else (1, shape[0])
    smp = rng.uniform(0, 1, planes + (nd,))
    kf = getattr(nn.functional, f"fractional_max_pool{nd}d")
    tf = getattr(torch.nn.functional, f"fractional_max_pool{nd}d")
    kx, tx = kindle.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    kv, ki = kf(kx, kernel, output_size=out, return_indices=True, _random_samples=kindle.tensor(smp))
    tv, ti = tf(tx, kernel, output_size=out, return_indices=True, _random_samples=torch.tensor(smp))
    np.testing.assert_array_equal(kv.detach().numpy(), tv.detach().numpy())
    np.testing.assert_array_equal(ki.numpy(), ti.numpy())
    g = rng.standard_normal(tuple(tv.shape))
    kv.backward(kindle.tensor(g))
    tv.backward(torch.tensor(g))
    np.testing.assert_allclose(kx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    kindle.manual_seed(4)
    torch.manual_seed(4)
    x32 = rng.standard_normal(shape).astype(np.float32)
    km = getattr(nn, f"FractionalMaxPool{nd}d")(kernel, output_ratio=0.5)
    tm = getattr(torch.nn, f"FractionalMaxPool{nd}d")(kernel, output_ratio=0.5)
    np.testing.assert_array_equal(km(kindle.tensor(x32)).numpy(), tm(torch.tensor(x32)).numpy())
    with pytest.raises(ValueError):
        getattr(nn, f"FractionalMaxPool{nd}d")(kernel)
    with pytest.raises(RuntimeError, match="too large"):
        kf(kindle.tensor(x), kernel, output_size=(20,) * nd)


def test_inplace_relu6_and_hardtanh_chain_like_torch():
    """ReLU6(inplace=True) is one in-place op (hardtanh_), and further in-place ops on the same
    tensor still backpropagate, as in torch; a leaf that requires grad is refused."""
    torch = pytest.importorskip("torch")
    x = (np.random.default_rng(5).standard_normal((2, 3, 5, 5)) * 4).astype(np.float32)
    grads = []
    for lib in (kindle, torch):
        a = lib.tensor(x, requires_grad=True)
        b = a * 2
        out = lib.nn.ReLU6(inplace=True)(b)
        assert out is b
        lib.nn.functional.hardtanh(b, -1.0, 1.0, inplace=True)
        b.mul_(3)
        (b * b).sum().backward()
        grads.append((b.detach().numpy(), a.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0])
    np.testing.assert_allclose(grads[0][1], grads[1][1])
    with pytest.raises(RuntimeError, match="leaf"):
        nn.ReLU6(inplace=True)(kindle.ones(3, requires_grad=True))
