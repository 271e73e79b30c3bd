"""Inference fusions for kindle.compile: a traced model's eval-mode convolution, batch norm and
clamping activation (ReLU, ReLU6, Hardtanh) run as one convolution; a batch norm that is not
after a convolution runs with its activation, and the concatenation feeding it, as one pass.

An eval-mode batch norm after a convolution is an affine map per output channel, so it folds
into the convolution's weight and bias (w * s, (b - mean) * s + beta, with s = gamma /
sqrt(var + eps)); a following ReLU/ReLU6/Hardtanh is a clamp the convolution applies to each
block of its output while the block is still in cache. Eager, the three are three passes over
the activation (MobileNet-v2 at batch 8 spent 45 of its 130 ms in batch norm and ReLU6), which
is what torch.compile's generated code saves; here they are one.

DenseNet's layers start with torch.cat(features, 1) -> BatchNorm2d -> ReLU, and the concatenation
is used by nothing else: eager, that is three passes over the growing feature stack (copy,
normalise, clamp in place); fused, one pass reads the parts and writes the normalised result
(_cat_batch_norm_clamp), with batch_norm's own arithmetic.

The folded weights are cached and recomputed when any of the tensors they were made from
changes (a new tensor, or an in-place update: the version counter). The fused graph only runs
where it means the same as the original: the model in eval mode, gradients off (see
_compile.OptimizedModule); everything else calls the original module.
"""
import math

from . import _C
from .nn import functional as F
from .nn.modules.activation import Hardtanh, ReLU, ReLU6
from .nn.modules.batchnorm import BatchNorm2d
from .nn.modules.conv import Conv2d
from .nn.modules.module import Module

__all__ = ["fuse_for_inference"]


def _clamp_bounds_of(mod):
    """(lo, hi) for a clamping activation module without hooks, else None."""
    if _has_hooks(mod):
        return None
    if type(mod) is ReLU:
        return 0.0, math.inf
    if type(mod) in (ReLU6, Hardtanh):
        return float(mod.min_val), float(mod.max_val)
    return None


def _has_hooks(mod):
    return bool(mod._forward_hooks or mod._forward_pre_hooks or mod._forward_hooks_with_kwargs
                or mod._forward_pre_hooks_with_kwargs)


def _fusable_conv(mod):
    return (type(mod) is Conv2d and mod.padding_mode == "zeros" and not isinstance(mod.padding, str)
            and not _has_hooks(mod))


def _foldable_bn(mod, channels):
    return (type(mod) is BatchNorm2d and mod.track_running_stats and mod.running_mean is not None
            and mod.num_features == channels and not _has_hooks(mod))


class ConvBNAct(Module):
    """conv -> batch norm (eval, optional) -> clamp (optional), as one convolution. Holds the
    original modules by reference (not as submodules: their parameters stay the model's)."""

    def __init__(self, conv, bn=None, bounds=None, act=None):
        super().__init__()
        object.__setattr__(self, "_conv", conv)
        object.__setattr__(self, "_bn", bn)
        object.__setattr__(self, "_act", act)  # the activation module, None for a function (F.relu)
        self.lo, self.hi = bounds if bounds is not None else (-math.inf, math.inf)
        self.clamps = bounds
        self._key = None
        self._folded = None

    def _as_written(self, x):
        """The original modules in turn: where one of them is back in training mode or has had a
        hook registered since the graph was traced."""
        y = self._conv(x)
        if self._bn is not None:
            y = self._bn(y)
        return _activate(self, y)

    def _sources(self):
        """The tensors the folded weights come from, read from the modules' own dicts (the
        attribute lookups cost more than the rest of a small layer's call)."""
        cp, bp, bb = self._conv._parameters, self._bn._parameters, self._bn._buffers
        return (cp["weight"], cp.get("bias"), bp.get("weight"), bp.get("bias"), bb.get("running_mean"),
                bb.get("running_var"))

    def _weights(self):
        conv, bn = self._conv, self._bn
        if bn is None:
            return conv.weight, conv.bias
        ts = self._sources()
        key = self._key
        if (key is not None and key[2] == bn.eps and all(a is b for a, b in zip(ts, key[0]))
                and key[1] == tuple(t._version for t in ts if t is not None)):
            return self._folded
        w, cb, gamma, beta, mean, var = (t.detach() if t is not None else None for t in ts)
        scale = (var.double() + bn.eps).rsqrt()
        if gamma is not None:
            scale = scale * gamma.double()
        shift = -mean.double() * scale
        if cb is not None:
            shift = shift + cb.double() * scale
        if beta is not None:
            shift = shift + beta.double()
        self._folded = ((w.double() * scale.reshape(-1, 1, 1, 1)).to(w.dtype), shift.to(w.dtype))
        self._key = (ts, tuple(t._version for t in ts if t is not None), bn.eps)
        return self._folded

    def changed(self):
        """Whether a module has had a hook registered since tracing, or is back in training."""
        conv, bn, act = self._conv, self._bn, self._act
        return (_has_hooks(conv) or (bn is not None and (bn.training or _has_hooks(bn)))
                or (act is not None and _has_hooks(act)))

    def forward(self, x, out=None, out_channel=0):
        """With `out`: writes channels [out_channel, out_channel + O) of it (see ConvCat)."""
        if self.changed():
            return self._as_written(x)
        conv = self._conv
        w, b = self._weights()
        if self.clamps is None and out is None:
            return F.conv2d(x, w, b, conv.stride, conv.padding, conv.dilation, conv.groups)
        return _C._nn._conv2d_clamp(x, w, b, conv.stride, conv.padding, conv.dilation, conv.groups, self.lo, self.hi,
                                    out, out_channel)

    def extra_repr(self):
        return f"{self._conv!r}, bn={self._bn is not None}, clamp=({self.lo}, {self.hi})"


class CatBNAct(Module):
    """torch.cat(parts, 1) (or one tensor) -> eval batch norm -> clamp (optional), as one pass."""

    def __init__(self, bn, bounds=None, act=None):
        super().__init__()
        object.__setattr__(self, "_bn", bn)
        object.__setattr__(self, "_act", act)
        self.lo, self.hi = bounds if bounds is not None else (-math.inf, math.inf)
        self.clamps = bounds
        self._key = None
        self._invstd = None

    def forward(self, parts):
        bn, act = self._bn, self._act
        if bn.training or _has_hooks(bn) or (act is not None and _has_hooks(act)):  # as written
            return _activate(self, bn(_C.cat(parts, 1) if len(parts) > 1 else parts[0]))
        bb, bp = bn._buffers, bn._parameters
        var = bb["running_var"]
        key = self._key
        if key is None or key[0] is not var or key[1] != var._version or key[2] != bn.eps:
            self._invstd = (var.detach() + bn.eps).rsqrt()  # as batch_norm computes it
            self._key = (var, var._version, bn.eps)  # (the tensor itself: an id could be reused)
        return _C._nn._cat_batch_norm_clamp(parts, bb["running_mean"].detach(), self._invstd, bp.get("weight"),
                                           bp.get("bias"), self.lo, self.hi)

    def extra_repr(self):
        return f"{self._bn!r}, clamp=({self.lo}, {self.hi})"


class ConvCat(Module):
    """torch.cat([f(x) for each fused convolution f], 1) with each convolution writing its own
    channels of the result (SqueezeNet's Fire modules concatenate two convolutions' outputs): no
    copy. Falls back to the calls and the cat where shapes or dtypes do not allow it."""

    def __init__(self, parts):
        super().__init__()
        object.__setattr__(self, "_parts", list(parts))

    def forward(self, xs):
        parts = self._parts
        x0 = xs[0]
        shape = None
        if (x0.dtype in (_C.float32, _C.float64) and x0.device.type == "cpu"
                and not any(p.changed() for p in parts)):
            shape = _out_shape(parts[0]._conv, x0)
            for p, x in zip(parts, xs):
                if x.dtype != x0.dtype or x.device != x0.device or _out_shape(p._conv, x) != shape:
                    shape = None
                    break
        if shape is None:
            return _C.cat([p(x) for p, x in zip(parts, xs)], 1)
        n, _, oh, ow = shape
        out = _C.empty((n, sum(p._conv.out_channels for p in parts), oh, ow), dtype=x0.dtype)
        channel = 0
        for p, x in zip(parts, xs):
            p(x, out, channel)
            channel += p._conv.out_channels
        return out


def _out_shape(conv, x):
    if x.dim() != 4 or x.shape[1] != conv.in_channels:
        return None
    hw = [(x.shape[2 + i] + 2 * conv.padding[i] - conv.dilation[i] * (conv.kernel_size[i] - 1) - 1) // conv.stride[i] + 1
          for i in range(2)]
    return (x.shape[0], conv.out_channels, hw[0], hw[1])


def _cat_parts(node):
    """The list a call of torch.cat(list, 1) concatenates, else None."""
    if (getattr(node, "op", None) != "call_function" or node.target is not _C.cat or not node.args
            or not isinstance(node.args[0], (list, tuple)) or not set(node.kwargs) <= {"dim"} or len(node.args) > 2):
        return None
    dim = node.kwargs.get("dim", node.args[1] if len(node.args) == 2 else 0)
    return list(node.args[0]) if dim == 1 else None


def _activate(fused, y):
    """A fused module's activation applied as written: its module (hooks and all), or the clamp
    that stands for a functional ReLU."""
    if fused._act is not None:
        return fused._act(y)
    return y if fused.clamps is None else y.clamp(fused.lo, fused.hi)


def _replace(gm, nodes, module, args, index):
    """Puts one call of `module` (a new submodule of gm) with `args` in place of `nodes` (in graph
    order; the last one's users get the new call) and erases them."""
    name = f"_fused_{index}"
    while hasattr(gm, name):
        name += "_"
    gm.add_submodule(name, module)
    with gm.graph.inserting_after(nodes[-1]):
        new = gm.graph.call_module(name, args)
    nodes[-1].replace_all_uses_with(new)
    for n in reversed(nodes):
        gm.graph.erase_node(n)


def _only_user(node):
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _module_of(gm, node):
    if node.op != "call_module":
        return None
    return gm.get_submodule(node.target)


def _act_bounds(gm, node):
    """(lo, hi) if the node is a clamping activation applied to its first argument."""
    mod = _module_of(gm, node)
    if mod is not None:
        return _clamp_bounds_of(mod)
    if node.op == "call_function" and node.target in (F.relu, _C.relu, F.relu6) and len(node.args) == 1:
        return (0.0, 6.0) if node.target is F.relu6 else (0.0, math.inf)
    if node.op == "call_method" and node.target in ("relu", "relu_") and len(node.args) == 1 and not node.kwargs:
        return 0.0, math.inf
    return None


def fuse_for_inference(gm):
    """Rewrites the GraphModule `gm` in place: each Conv2d whose only user is an eval-foldable
    BatchNorm2d and/or a clamping activation becomes one ConvBNAct call; then each remaining
    BatchNorm2d fed by a cat along dim 1 used only by it, or followed by a clamping activation,
    one CatBNAct call; then each cat along dim 1 of fused convolutions used only by it, one
    ConvCat call. Returns how many."""
    graph = gm.graph
    fused = 0
    for node in list(graph.nodes):
        conv = _module_of(gm, node)
        if conv is None or not _fusable_conv(conv) or len(node.args) != 1 or node.kwargs:
            continue
        chain = [node]
        bn = None
        nxt = _only_user(node)
        bn_mod = _module_of(gm, nxt) if nxt is not None else None
        if bn_mod is not None and _foldable_bn(bn_mod, conv.out_channels) and nxt.args == (node,) and not nxt.kwargs:
            bn = bn_mod
            chain.append(nxt)
            nxt = _only_user(nxt)
        bounds = None
        if nxt is not None and nxt.args and nxt.args[0] is chain[-1]:
            bounds = _act_bounds(gm, nxt)
            if bounds is not None:
                chain.append(nxt)
        if len(chain) == 1:
            continue
        act_mod = _module_of(gm, chain[-1]) if bounds is not None else None
        _replace(gm, chain, ConvBNAct(conv, bn, bounds, act_mod), (node.args[0],), fused)
        fused += 1
    for node in list(graph.nodes):
        bn = _module_of(gm, node)
        if bn is None or type(bn) is not BatchNorm2d or len(node.args) != 1 or node.kwargs:
            continue
        if not _foldable_bn(bn, bn.num_features) or bn.running_mean.dtype not in (_C.float32, _C.float64):
            continue
        src = node.args[0]
        parts = _cat_parts(src) if _only_user(src) is node else None
        act = _only_user(node)
        bounds = _act_bounds(gm, act) if act is not None and act.args and act.args[0] is node else None
        if parts is None and bounds is None:
            continue
        chain = ([src] if parts is not None else []) + [node] + ([act] if bounds is not None else [])
        _replace(gm, chain, CatBNAct(bn, bounds, _module_of(gm, act) if bounds is not None else None),
                 (parts if parts is not None else [src],), fused)
        fused += 1
    for node in list(graph.nodes):
        parts = _cat_parts(node)
        if not parts or len(parts) < 2 or len(set(parts)) != len(parts):
            continue
        mods = [_module_of(gm, p) if hasattr(p, "op") else None for p in parts]
        if not all(isinstance(m, ConvBNAct) and _only_user(p) is node for m, p in zip(mods, parts)):
            continue
        _replace(gm, parts + [node], ConvCat(mods), ([p.args[0] for p in parts],), fused)
        fused += 1
    if fused:
        gm.recompile()
    return fused
