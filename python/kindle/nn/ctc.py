"""F.ctc_loss (Graves et al. 2006): the forward (alpha) recursion in log space over the blank-
extended targets, vectorised over the batch and the target positions, one step per time frame.
The gradient is torch's: with respect to log_probs it is exp(log_probs) minus the alignment
occupancy (the gradient through a log_softmax that produced them, as torch's kernel returns),
the occupancy coming from autograd through the recursion."""
from .. import _C
from ..autograd import Function, grad as _grad
from ..autograd.grad_mode import enable_grad

_NEG_INF = float("-inf")


def _logsumexp3(a, b, c):
    """log(e^a + e^b + e^c) elementwise, -inf where all are -inf, with finite gradients there."""
    m = _C.maximum(_C.maximum(a, b), c)
    finite = m != _NEG_INF
    m0 = _C.where(finite, m, _C.zeros_like(m))
    s = (a - m0).exp() + (b - m0).exp() + (c - m0).exp()
    s = _C.where(finite, s, _C.ones_like(s))
    return _C.where(finite, m0 + s.log(), _C.full_like(m, _NEG_INF))


def _ctc_nll(log_probs, targets, input_lengths, target_lengths, blank):
    """Per-sample negative log-likelihoods; log_probs (T, N, C); targets (N, S) padded."""
    T, N, _ = log_probs.shape
    S = targets.shape[1] if targets.dim() == 2 else 0
    L = 2 * S + 1
    dev = log_probs.device  # (lengths given as Python lists are CPU tensors: they join log_probs' device)
    input_lengths, target_lengths, targets = input_lengths.to(dev), target_lengths.to(dev), targets.to(dev)
    ext = _C.full((N, L), blank, dtype=_C.int64, device=dev)
    if S:
        ext[:, 1::2] = targets
    # s may come from s - 2 when it is a label different from the label two back
    skip = _C.zeros((N, L), dtype=_C.bool, device=dev)
    if S > 1:
        skip[:, 3::2] = ext[:, 3::2] != ext[:, 1:-2:2]
    pos = _C.arange(L, device=dev)
    valid = pos.unsqueeze(0) < (2 * target_lengths + 1).unsqueeze(1)  # positions of each sample's targets
    neg = _C.full((N, L), _NEG_INF, dtype=log_probs.dtype, device=dev)
    pad2 = _C.full((N, 2), _NEG_INF, dtype=log_probs.dtype, device=dev)
    idx = ext.unsqueeze(0).expand(T, N, L)
    emit = log_probs.gather(2, idx)  # (T, N, L): log p(ext[s] at time t)
    alpha = _C.where(pos.unsqueeze(0) < 2, emit[0], neg)
    alpha = _C.where(valid, alpha, neg)
    final = _C.where((input_lengths == 1).unsqueeze(1), alpha, neg) if T else neg
    for t in range(1, T):
        shifted = _C.cat([pad2, alpha], 1)
        a1 = shifted[:, 1:L + 1]
        a2 = _C.where(skip, shifted[:, 0:L], neg)
        alpha = _logsumexp3(alpha, a1, a2) + emit[t]
        alpha = _C.where(valid, alpha, neg)
        final = _C.where((input_lengths == t + 1).unsqueeze(1), alpha, final)
    last = (2 * target_lengths).unsqueeze(1)
    end1 = final.gather(1, last).squeeze(1)
    end2 = final.gather(1, (last - 1).clamp(min=0)).squeeze(1)
    none = _C.full_like(end2, _NEG_INF)
    end2 = _C.where(target_lengths > 0, end2, none)
    return -_logsumexp3(end1, end2, none)


class _CTCLoss(Function):
    @staticmethod
    def forward(ctx, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
        nll = _ctc_nll(log_probs.detach(), targets, input_lengths, target_lengths, blank)
        ctx.save_for_backward(log_probs, targets, input_lengths, target_lengths, nll)
        ctx.blank, ctx.zero_infinity = blank, zero_infinity
        if zero_infinity:
            nll = _C.where(nll == float("inf"), _C.zeros_like(nll), nll)
        return nll

    @staticmethod
    def backward(ctx, g):
        log_probs, targets, input_lengths, target_lengths, nll = ctx.saved_tensors
        with enable_grad():
            lp = log_probs.detach().requires_grad_()
            loss = _ctc_nll(lp, targets, input_lengths, target_lengths, ctx.blank)
            (occ,) = _grad(loss, lp, g)  # minus the occupancy, weighted by g
        T = log_probs.shape[0]
        in_time = (_C.arange(T, device=log_probs.device).unsqueeze(1)
                   < input_lengths.to(log_probs.device).unsqueeze(0)).unsqueeze(2)  # (T, N, 1)
        out = log_probs.detach().exp() * g.reshape(1, -1, 1) + occ
        out = _C.where(in_time, out, _C.zeros_like(out))
        infinite = (nll == float("inf")).reshape(1, -1, 1)
        if ctx.zero_infinity:
            out = _C.where(infinite, _C.zeros_like(out), out)
        else:  # the gradient of an infinite loss is undefined: NaN over the sample's frames, as torch's
            out = _C.where(infinite & in_time, _C.full_like(out, float("nan")), out)
        return out, None, None, None, None, None


def _as_lengths(x, n, name):
    if isinstance(x, _C.Tensor):
        t = x.to(_C.int64).reshape(-1)
    else:
        t = _C.tensor(list(x), dtype=_C.int64)
    if t.numel() != n:
        raise RuntimeError(f"ctc_loss: expected {name} to have one entry per batch element ({n}), got {t.numel()}")
    return t


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",  # noqa: C901
             zero_infinity=False):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not log_probs.is_floating_point():
        raise RuntimeError(f"ctc_loss: expected log_probs to be a floating point tensor, got {log_probs.dtype}")
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        if targets.dim() == 1:
            targets = targets.unsqueeze(0)
    if log_probs.dim() != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs to be a 2-D or 3-D tensor (T, N, C), got "
                           f"{list(log_probs.shape)}")
    T, N, C = log_probs.shape
    if not 0 <= blank < C:
        raise RuntimeError(f"ctc_loss: blank must be in label range, got blank={blank} for {C} classes")
    il = _as_lengths(input_lengths, N, "input_lengths")
    tl = _as_lengths(target_lengths, N, "target_lengths")
    if targets.is_floating_point():
        raise RuntimeError(f"ctc_loss: expected targets to be an integer tensor, got {targets.dtype}")
    if bool((il > T).any()) or bool((il < 0).any()):
        raise RuntimeError(f"ctc_loss: Expected input_lengths to have value at most {T}, but got value "
                           f"{int(il.max())}")
    if targets.dim() == 1:  # concatenated targets: pad them to (N, max target length)
        if int(tl.sum()) != targets.numel():
            raise RuntimeError(f"ctc_loss: the sum of target_lengths ({int(tl.sum())}) must equal the number of "
                               f"targets ({targets.numel()})")
        smax = int(tl.max()) if N else 0
        padded = _C.full((N, smax), blank, dtype=_C.int64, device=targets.device)
        start = 0
        for b in range(N):
            n = int(tl[b])
            padded[b, :n] = targets[start:start + n]
            start += n
        targets = padded
    else:
        if targets.dim() != 2 or targets.shape[0] != N:
            raise RuntimeError(f"ctc_loss: expected targets of shape (N, S) with N={N}, got {list(targets.shape)}")
        if N and bool((tl > targets.shape[1]).any()):
            raise RuntimeError(f"ctc_loss: Expected tensor to have size at least {int(tl.max())} at dimension 1, "
                               f"but got size {targets.shape[1]} for argument #2 'targets'")
        targets = targets.to(_C.int64)
    losses = _CTCLoss.apply(log_probs, targets, il, tl, blank, zero_infinity)
    if reduction == "none":
        return losses.squeeze(0) if unbatched else losses
    if reduction == "sum":
        return losses.sum()
    return (losses / tl.clamp(min=1).to(losses.dtype)).mean()
