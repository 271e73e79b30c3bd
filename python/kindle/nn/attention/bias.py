"""torch.nn.attention.bias: causal attention biases that F.scaled_dot_product_attention takes as
attn_mask (CausalBias, made by causal_upper_left / causal_lower_right).

Kindle has one attention kernel: an upper-left bias (or any causal bias of a square score
matrix) runs as is_causal=True, a lower-right one with its boolean mask materialised, which is
what torch's math backend computes."""
import warnings
from enum import IntEnum, auto

from ... import _C
from .. import functional as F

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    """UPPER_LEFT: tril(ones(L, S)), the causal mask of is_causal=True. LOWER_RIGHT: the
    triangle aligned to the lower-right corner, tril(ones(L, S), diagonal=S - L) (the last query
    sees every key). The two agree when L == S."""

    UPPER_LEFT = auto()
    LOWER_RIGHT = auto()


class CausalBias(_C.Tensor):
    """A causal (triangular) attention bias of a (seq_len_q, seq_len_kv) score matrix, kept as its
    variant and sizes; F.scaled_dot_product_attention(q, k, v, attn_mask=bias) applies it."""

    def __init__(self, variant, seq_len_q, seq_len_kv):
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        super().__init__()
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when seq_len_q > seq_len_kv!",
                          stacklevel=2)

    def _upper_left(self, device):
        return _C.ones(self.seq_len_q, self.seq_len_kv, device=device, dtype=_C.bool).tril()

    def _lower_right(self, device):
        diagonal_offset = self.seq_len_kv - self.seq_len_q
        return _C.ones(self.seq_len_q, self.seq_len_kv, device=device, dtype=_C.bool).tril(diagonal_offset)

    def _materialize(self, device=None):
        """The bias as a boolean mask (True: attend) on `device` (default cpu)."""
        if device is None:
            device = "cpu"
        if self.variant == CausalVariant.UPPER_LEFT:
            return self._upper_left(device)
        if self.variant == CausalVariant.LOWER_RIGHT:
            return self._lower_right(device)
        return None

    @staticmethod
    def _dispatch(query, key, value, attn_mask, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if attn_mask.seq_len_q == attn_mask.seq_len_kv or attn_mask.variant == CausalVariant.UPPER_LEFT:
            return F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=dropout_p,
                                                  is_causal=True, scale=scale, enable_gqa=enable_gqa)
        if attn_mask.variant == CausalVariant.LOWER_RIGHT:
            return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask._materialize(query.device),
                                                  dropout_p=dropout_p, is_causal=False, scale=scale,
                                                  enable_gqa=enable_gqa)
        raise ValueError(f"CausalBias.variant must be a CausalVariant type, but found: {attn_mask.variant}")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if func is F.scaled_dot_product_attention:
            return cls._dispatch(*args, **kwargs)
        return super().__torch_function__(func, types, args, kwargs)

    def __repr__(self):
        return self._materialize().__repr__()


def causal_upper_left(*size):
    """CausalBias(UPPER_LEFT, L, S): tril(ones(L, S)), as is_causal=True."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.UPPER_LEFT, seq_len_q, seq_len_kv)


def causal_lower_right(*size):
    """CausalBias(LOWER_RIGHT, L, S): tril(ones(L, S), diagonal=S - L)."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.LOWER_RIGHT, seq_len_q, seq_len_kv)
