"""F.ctc_loss: the core's op (csrc/nn/ctc.cpp, shared with the C++ front end); lengths given as
Python sequences become int64 tensors here."""
from .. import _C


def _as_lengths(x):
    return x if isinstance(x, _C.Tensor) else _C.tensor([int(v) for v in x], dtype=_C.int64)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    return _C._nn.ctc_loss(log_probs, targets, _as_lengths(input_lengths), _as_lengths(target_lengths), blank,
                           reduction, zero_infinity)
