"""torch.nn.attention.flex_attention for Kindle: attention with a user score_mod / mask_mod.

torch runs flex_attention eagerly (what it does on CPU without torch.compile) by materialising
the full [B, H, L, S] score matrix and applying the mods to every score; the block structure of
a BlockMask is not consulted there, only its mask_mod. Kindle does the same with ordinary tensor
ops, so the result is differentiable through Kindle's autograd (query, key, value and any
tensor a mod captures), which torch's CPU path refuses (it raises NotImplementedError when an
input requires grad).

Mods are called once with broadcastable index tensors (b: [B,1,1,1], h: [1,H,1,1],
q_idx: [1,1,L,1], kv_idx: [1,1,1,S], int64 as torch's eager path makes them) instead of being
vmapped per score: elementwise mods, index arithmetic and `bias[b, h, q_idx, kv_idx]` style
gathers give the same values that way at a fraction of the cost. A mod that does not survive
broadcasting (e.g. chained indexing `bias[q_idx][kv_idx]`) falls back to kindle.func.vmap.
"""
import inspect
import itertools
import math
import warnings
from typing import Callable, NamedTuple, Optional, TypedDict

import kindle as _k

from ... import _C

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions", "create_block_mask",
           "create_mask", "or_masks", "and_masks", "noop_mask"]

Tensor = _C.Tensor
_score_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
_mask_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]

# torch's debugging switch: with it set, torch skips its internal compile and its "unfused"
# warning. Kindle never compiles here; the flag only silences that warning, as in torch.
_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = False

_DEFAULT_SPARSE_BLOCK_SIZE = 128
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30
_BACKENDS = ("AUTO", "TRITON", "FLASH", "TRITON_DECODE")
_SUPPORTED_DEVICES = {"cuda", "cpu", "xpu", "hpu", "mps"}

_WARNINGS_SHOWN = set()


def _warn_once(warning_id, message, category=UserWarning):
    # torch shows each of these once per process (and never while compiling)
    if warning_id not in _WARNINGS_SHOWN:
        if not _k.compiler.is_compiling():
            warnings.warn(message, category, stacklevel=3)
        _WARNINGS_SHOWN.add(warning_id)


class FlexKernelOptions(TypedDict, total=False):
    """Tuning knobs of torch's fused kernels. Kindle validates the ones torch validates and
    otherwise ignores them: its eager implementation has nothing to tune."""

    num_warps: int
    num_stages: int
    BLOCK_M: int
    BLOCK_N: int
    PRESCALE_QK: bool
    ROWS_GUARANTEED_SAFE: bool
    BLOCKS_ARE_CONTIGUOUS: bool
    WRITE_DQ: bool
    FORCE_USE_FLEX_ATTENTION: bool
    USE_TMA: bool
    BACKEND: str


class AuxRequest(NamedTuple):
    """Which auxiliary outputs flex_attention should return (return_aux=...)."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """Auxiliary outputs of flex_attention; a field is None when it was not requested."""

    lse: Optional[Tensor] = None
    max_scores: Optional[Tensor] = None


def noop_mask(batch, head, token_q, token_kv):
    """The mask_mod that keeps every score."""
    # positional size: Kindle's Tensor.new_ones does not take size= as a keyword
    return batch.new_ones((), dtype=_k.bool, device=batch.device)


def _sliced_mask_mod_error(batch, head, token_q, token_kv):
    """mask_mod of a sliced BlockMask: slicing cannot know how to re-index the original."""
    raise RuntimeError(
        "Cannot use mask_mod from a sliced BlockMask. When you slice a BlockMask using [], the mask_mod "
        "attribute is reset. You must set it from the original BlockMask's mask_mod.")


def _positional_arity(fn):
    """Number of required positional parameters, which is how torch tells a score_mod (5) from
    a mask_mod (4)."""
    code = getattr(fn, "__code__", None)
    if code is not None:
        return code.co_argcount - len(getattr(fn, "__defaults__", None) or ())
    return sum(1 for p in inspect.signature(fn).parameters.values() if p.default is inspect.Parameter.empty)


def _mod_kind(fn):
    n = _positional_arity(fn)
    if n not in (4, 5):
        raise AssertionError(f"Expected 4 or 5 positional args, got {n}")
    return "score" if n == 5 else "mask"


def or_masks(*mask_mods):
    """A mask_mod keeping a score when any of `mask_mods` keeps it."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b, h, q_idx, kv_idx):
        result = b.new_zeros((), dtype=_k.bool)
        for m in mask_mods:
            result = result | m(b, h, q_idx, kv_idx)
        return result

    return or_mask


def and_masks(*mask_mods):
    """A mask_mod keeping a score when all of `mask_mods` keep it."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b, h, q_idx, kv_idx):
        result = b.new_ones((), dtype=_k.bool)
        for m in mask_mods:
            result = result & m(b, h, q_idx, kv_idx)
        return result

    return and_mask


# ---------------------------------------------------------------------------------------------
# Applying mods over the [B, H, L, S] grid

def _call_mod(fn, score, shape, device):
    """fn applied at every (b, h, q, kv) of `shape`: a tensor broadcastable to `shape` (score_mod
    when `score` is given, else mask_mod). Broadcasting first; vmap when the mod needs per-score
    (0-d) index tensors, as torch's vmap gives it."""
    B, H, L, S = shape
    grids = (_k.arange(B, device=device).view(B, 1, 1, 1), _k.arange(H, device=device).view(1, H, 1, 1),
             _k.arange(L, device=device).view(1, 1, L, 1), _k.arange(S, device=device).view(1, 1, 1, S))
    args = grids if score is None else (score,) + grids
    first_error = None
    try:
        out = fn(*args)
        if not isinstance(out, Tensor):
            out = _k.tensor(out, device=device)
        if out.dim() <= 4 and all(o in (1, s) for o, s in zip(reversed(out.shape), reversed(shape))):
            return out
    except Exception as e:  # noqa: BLE001  (retried under vmap; re-raised if that fails too)
        first_error = e
    try:
        from ...func import vmap
        mapped = fn
        for dim in (3, 2, 1, 0):  # innermost level maps kv_idx, outermost the batch
            in_dims = tuple(0 if i == dim else None for i in range(4))
            mapped = vmap(mapped, in_dims=in_dims if score is None else (0,) + in_dims, out_dims=0)
        flat = tuple(g.reshape(-1) for g in grids)
        return mapped(*(flat if score is None else (score,) + flat))
    except Exception:
        if first_error is not None:
            raise first_error from None
        raise


def _check_mod_callable(score_mod):
    # torch's tracer rejects these with a RuntimeError subclass before running anything
    if not callable(score_mod):
        raise RuntimeError(f"flex_attention: score_mod must be callable, got {type(score_mod).__name__}")
    try:
        inspect.signature(score_mod).bind(*range(5))
    except TypeError as e:
        raise RuntimeError(f"flex_attention: score_mod must take (score, b, h, q_idx, kv_idx): {e}") from None
    except ValueError:  # builtins without a signature: let the call decide
        pass


# ---------------------------------------------------------------------------------------------
# Block-sparse layout helpers (the numbers torch's BlockMask holds)

def _ordered_to_dense(num_blocks, indices, num_cols):
    """[..., rows, num_cols] int32 0/1 from the first num_blocks[..., r] entries of each row."""
    entries = indices.shape[-1]
    used = _k.arange(entries, device=indices.device) < num_blocks.unsqueeze(-1)
    # unused slots scatter into one spare column that is dropped afterwards
    cols = _k.where(used, indices.long(), num_cols)
    dense = _k.zeros(*indices.shape[:-1], num_cols + 1, dtype=_k.int32, device=indices.device)
    dense.scatter_(-1, cols, 1)
    return dense[..., :num_cols].contiguous()


def _dense_to_ordered(dense):
    dense = dense.to(_k.int32)
    num_blocks = dense.sum(dim=-1).to(_k.int32)
    # stable descending sort lists the present blocks first, in column order, as torch does
    indices = _k.argsort(dense, dim=-1, descending=True, stable=True).to(_k.int32)
    return num_blocks.contiguous(), indices.contiguous()


def _transpose_ordered(num_blocks, indices):
    dense = _ordered_to_dense(num_blocks, indices, indices.shape[-1])
    return _dense_to_ordered(dense.transpose(-2, -1))


def _adjust_num_blocks_and_indices(num_blocks, indices, new_rows, new_cols):
    indices = indices[:, :, :new_rows, :new_cols]
    num_blocks = num_blocks[:, :, :new_rows]
    num_blocks = _k.where(num_blocks < new_cols, num_blocks, new_cols)
    num_blocks = (indices < num_blocks[:, :, :, None]).sum(dim=-1).to(_k.int32)
    return num_blocks, indices


def _dq_write_order(bm, descending):
    """Per (kv block, q block) rank of the q block among those of its row, in the order the
    FLASH backward schedules them (torch's compute_dq_write_order metadata)."""
    if bm.q_num_blocks is None or bm.q_indices is None:
        raise ValueError("BlockMask must have q_num_blocks and q_indices to compute dq_write_order")
    pairs = [(bm.kv_num_blocks, bm.kv_indices)]
    if bm.full_kv_num_blocks is not None:
        pairs.append((bm.full_kv_num_blocks, bm.full_kv_indices))
    shapes = [t.shape[:2] for t in (bm.kv_indices, bm.q_indices, bm.full_kv_indices, bm.full_q_indices)
              if t is not None]
    B, H = _k.broadcast_shapes(*shapes)
    num_m, num_n = bm.kv_indices.shape[2], bm.q_indices.shape[2]
    dense = None
    for nb, idx in pairs:
        d = _ordered_to_dense(nb.expand(B, H, *nb.shape[2:]), idx.expand(B, H, *idx.shape[2:]), num_n)
        dense = d if dense is None else (dense + d).clamp(max=1)
    cumsum = dense.cumsum(dim=-1)
    rank = (cumsum - dense).to(_k.int32)
    if descending:
        rank = (cumsum[..., -1:] - 1 - rank).to(_k.int32)
    dev = dense.device

    def gather(q_idx):
        b = _k.arange(B, device=dev)[:, None, None, None]
        h = _k.arange(H, device=dev)[None, :, None, None]
        n = _k.arange(q_idx.shape[2], device=dev)[None, None, :, None]
        return rank[b, h, q_idx.long().clamp(0, num_m - 1), n].to(_k.int32)

    full = None
    if bm.full_kv_num_blocks is not None and bm.full_q_indices is not None:
        full = gather(bm.full_q_indices)
    return gather(bm.q_indices), full


class BlockMask:
    """Block-sparse description of an attention mask (torch's format).

    (kv_num_blocks, kv_indices) list, per Q_BLOCK_SIZE row of blocks, the KV blocks that are
    partially kept; (full_kv_num_blocks, full_kv_indices) those kept entirely; the q_* pairs are
    the same lists transposed (per KV block). BLOCK_SIZE is (Q_BLOCK_SIZE, KV_BLOCK_SIZE),
    seq_lengths (Q_LEN, KV_LEN), mask_mod the element-level mask. Kindle's flex_attention, like
    torch's eager one, evaluates mask_mod on every score and does not read the block lists."""

    _TENSOR_ATTRS = ["kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices", "q_num_blocks",
                     "q_indices", "full_q_num_blocks", "full_q_indices", "dq_write_order", "dq_write_order_full",
                     "dq_kv_order"]

    def __init__(self, seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, q_num_blocks,
                 q_indices, full_q_num_blocks, full_q_indices,
                 BLOCK_SIZE=(_DEFAULT_SPARSE_BLOCK_SIZE, _DEFAULT_SPARSE_BLOCK_SIZE), mask_mod=noop_mask, *,
                 dq_write_order=None, dq_write_order_full=None, dq_kv_order=None, dq_kv_order_spt=None):
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if kv_num_blocks is None:
            raise AssertionError("kv_num_blocks must be provided")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError("full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        if (full_q_num_blocks is None) != (full_q_indices is None):
            raise AssertionError("full_q_num_blocks and full_q_indices must be both provided or omitted")
        if dq_write_order_full is not None and dq_write_order is None:
            raise ValueError("dq_write_order_full requires dq_write_order")
        self.seq_lengths = seq_lengths
        self.kv_num_blocks = kv_num_blocks
        self.kv_indices = kv_indices
        self.full_kv_num_blocks = full_kv_num_blocks
        self.full_kv_indices = full_kv_indices
        self.q_num_blocks = q_num_blocks
        self.q_indices = q_indices
        self.full_q_num_blocks = full_q_num_blocks
        self.full_q_indices = full_q_indices
        self.dq_write_order = dq_write_order
        self.dq_write_order_full = dq_write_order_full
        self.dq_kv_order = dq_kv_order
        self.dq_kv_order_spt = dq_kv_order_spt
        self.BLOCK_SIZE = BLOCK_SIZE
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks, kv_indices, full_kv_num_blocks=None, full_kv_indices=None,
                       BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE, mask_mod=None, seq_lengths=None,
                       compute_q_blocks=True, *, dq_write_order=None, dq_write_order_full=None, dq_kv_order=None):
        """A BlockMask from its KV-side lists; the Q-side lists are derived by transposing. Without
        seq_lengths the lengths are the block counts times BLOCK_SIZE; without mask_mod every score
        inside the listed blocks is kept (noop_mask)."""
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError("full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        q_num_blocks = q_indices = full_q_num_blocks = full_q_indices = None
        if compute_q_blocks:
            q_num_blocks, q_indices = _transpose_ordered(kv_num_blocks, kv_indices)
            if full_kv_num_blocks is not None:
                full_q_num_blocks, full_q_indices = _transpose_ordered(full_kv_num_blocks, full_kv_indices)
        if isinstance(BLOCK_SIZE, int):
            BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE)
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * BLOCK_SIZE[0], kv_indices.shape[-1] * BLOCK_SIZE[1])
        if dq_kv_order is not None and not isinstance(dq_kv_order, (bool, Tensor)):
            raise ValueError("dq_kv_order must be a bool, Tensor, or None")
        return cls(seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, q_num_blocks,
                   q_indices, full_q_num_blocks, full_q_indices, BLOCK_SIZE=BLOCK_SIZE,
                   mask_mod=mask_mod if mask_mod is not None else noop_mask, dq_write_order=dq_write_order,
                   dq_write_order_full=dq_write_order_full,
                   dq_kv_order=dq_kv_order if isinstance(dq_kv_order, Tensor) else None,
                   dq_kv_order_spt=dq_kv_order if isinstance(dq_kv_order, bool) else None)

    def as_tuple(self, flatten=True):
        """The fields in torch's order; flatten=True spreads seq_lengths and BLOCK_SIZE."""
        seq = tuple(self.seq_lengths) if flatten else (self.seq_lengths,)
        block = tuple(self.BLOCK_SIZE) if flatten else (self.BLOCK_SIZE,)
        return (*seq, *(getattr(self, a) for a in self._TENSOR_ATTRS), self.dq_kv_order_spt, *block,
                self.mask_mod)

    @property
    def shape(self):
        return tuple(self.kv_indices.shape[:-2]) + tuple(self.seq_lengths)

    def numel(self):
        """Elements of the mask, sparsity not accounted for."""
        return math.prod(self.shape)

    def sparsity(self):
        """Percentage of the mask lying in blocks that are skipped entirely."""
        computed = self.kv_num_blocks.sum().item()
        if self.full_kv_num_blocks is not None:
            computed += self.full_kv_num_blocks.sum().item()
        return 100 * (1 - computed * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1] / self.numel())

    def to_dense(self):
        """The block-level mask, [..., Q blocks, KV blocks] int32 (1: the block is computed)."""
        dense = _ordered_to_dense(self.kv_num_blocks, self.kv_indices, self.kv_indices.shape[-1])
        if self.full_kv_num_blocks is not None:
            dense = dense | _ordered_to_dense(self.full_kv_num_blocks, self.full_kv_indices,
                                              self.full_kv_indices.shape[-1])
        return dense

    def to_string(self, grid_size=(20, 20), limit=4):
        """A picture of the block mask per (batch, head): full, partial and empty cells. grid_size=-1
        draws every block."""
        dense = self.to_dense()
        *batch_dims, rows, cols = dense.shape
        if isinstance(grid_size, int):
            max_rows = max_cols = grid_size
        else:
            max_rows, max_cols = grid_size
        # a grid size of -1 makes the ceil-division negative, i.e. one cell per block
        row_step = max(1, -(-rows // max_rows))
        col_step = max(1, -(-cols // max_cols))

        def draw(batch_idx):
            mask = dense
            for i in batch_idx:
                mask = mask[i]
            text = f"{batch_idx}\n"
            for r in range(0, rows, row_step):
                for c in range(0, cols, col_step):
                    frac = mask[r:r + row_step, c:c + col_step].float().mean().item()
                    text += ("█" if frac == 1 else " " if frac == 0 else "░") * 2
                text += "\n"
            return text

        parts = []
        for n, batch_idx in enumerate(itertools.product(*[range(i) for i in batch_dims])):
            if n == limit:
                parts += ["...", "To print out more, set BlockMask.to_string(limit=N)",
                          "You can also index (BlockMask[batch, head]) to choose a specific batch or head"]
                break
            parts.append(draw(batch_idx))
        return "\n".join(parts)

    def __str__(self):
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n{self.to_string().strip()}\n)"

    def __repr__(self):
        def shape_of(t):
            return t.shape if t is not None else None

        name = getattr(self.mask_mod, "__name__", self.mask_mod)
        return (f"BlockMask(\n    kv_num_blocks={self.kv_num_blocks.shape},\n    kv_indices={self.kv_indices.shape},\n"
                f"    full_kv_num_blocks={shape_of(self.full_kv_num_blocks)},\n"
                f"    full_kv_indices={shape_of(self.full_kv_indices)},\n"
                f"    q_num_blocks={shape_of(self.q_num_blocks)},\n    q_indices={shape_of(self.q_indices)},\n"
                f"    full_q_num_blocks={shape_of(self.full_q_num_blocks)},\n"
                f"    full_q_indices={shape_of(self.full_q_indices)},\n    BLOCK_SIZE={self.BLOCK_SIZE},\n"
                f"    shape={self.shape},\n    sparsity={self.sparsity():.2f}%,\n    mask_mod={name}\n)")

    def _rebuilt(self, kv, full, seq_lengths, mask_mod):
        """from_kv_blocks on new KV lists, carrying the dq_* settings over as torch does."""
        bm = BlockMask.from_kv_blocks(kv[0], kv[1], full[0], full[1], BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=mask_mod,
                                      seq_lengths=seq_lengths, compute_q_blocks=self.q_indices is not None)
        bm.dq_kv_order_spt = self.dq_kv_order_spt
        if self.dq_write_order is not None:
            bm.dq_write_order, bm.dq_write_order_full = _dq_write_order(bm, bm.dq_kv_order_spt)
        return bm

    def __getitem__(self, index):
        """The mask of some batches / heads / Q-block rows (indexing kv_num_blocks' leading dims).
        Integers keep their dimension; the slice's mask_mod raises (it cannot know the offsets)."""
        if self.dq_kv_order is not None:
            raise NotImplementedError("Slicing BlockMask with tensor dq_kv_order is not supported yet.")
        index = index if isinstance(index, tuple) else (index,)
        index = (*index, slice(None), slice(None), slice(None))[:3]
        # an integer keeps its dimension (as a one-element slice) so the result stays a BlockMask
        index = tuple((slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1)) if isinstance(i, int) else i
                      for i, n in zip(index, self.kv_num_blocks.shape[:3]))
        full = (None, None)
        if self.full_kv_num_blocks is not None:
            full = (self.full_kv_num_blocks[index], self.full_kv_indices[index])
        return self._rebuilt((self.kv_num_blocks[index], self.kv_indices[index]), full, self.seq_lengths,
                             _sliced_mask_mod_error)

    def _adjust(self, new_q_len, new_kv_len):
        """The mask cropped to its upper-left (new_q_len, new_kv_len) corner."""
        if self.dq_kv_order is not None:
            raise NotImplementedError("Adjusting BlockMask with tensor dq_kv_order is not supported yet.")
        rows = -(-new_q_len // self.BLOCK_SIZE[0])
        cols = -(-new_kv_len // self.BLOCK_SIZE[1])
        kv = _adjust_num_blocks_and_indices(self.kv_num_blocks, self.kv_indices, rows, cols)
        full = (None, None)
        if self.full_kv_num_blocks is not None:
            full = _adjust_num_blocks_and_indices(self.full_kv_num_blocks, self.full_kv_indices, rows, cols)
        return self._rebuilt(kv, full, (new_q_len, new_kv_len), self.mask_mod)

    def to(self, device):
        """A new BlockMask with its tensors on `device`."""
        moved = {a: (None if getattr(self, a) is None else getattr(self, a).to(device)) for a in self._TENSOR_ATTRS}
        return BlockMask(self.seq_lengths, **moved, BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=self.mask_mod,
                         dq_kv_order_spt=self.dq_kv_order_spt)


def _default_device(device):
    if device is not None:
        return device
    return _k.accelerator.current_accelerator() or "cpu"


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None):
    """The dense [B, H, Q_LEN, KV_LEN] bool mask of a mask_mod, or of a score_mod (kept where it
    does not give -inf). B/H None mean 1."""
    device = _default_device(device)
    B = 1 if B is None else B
    H = 1 if H is None else H
    shape = (B, H, Q_LEN, KV_LEN)
    if _mod_kind(mod_fn) == "score":
        out = _call_mod(mod_fn, _k.zeros(*shape, device=device), shape, device)
        return _k.where(_k.isneginf(out), False, True).expand(*shape).contiguous()
    return _call_mod(mod_fn, None, shape, device).expand(*shape).contiguous()


def _mask_to_blocks(mask, q_block, kv_block, separate_full_blocks):
    """Per block: (int8 partially kept, int8 fully kept or None)."""
    while mask.dim() < 4:
        mask = mask.unsqueeze(0)
    pad_kv = -mask.shape[-1] % kv_block
    pad_q = -mask.shape[-2] % q_block
    if pad_kv or pad_q:
        mask = _k.nn.functional.pad(mask, (0, pad_kv, 0, pad_q))
    B, H, Q, KV = mask.shape
    kept = mask.view(B, H, Q // q_block, q_block, KV // kv_block, kv_block).sum(dim=(3, 5))
    if not separate_full_blocks:
        return (kept > 0).to(_k.int8), None
    whole = q_block * kv_block
    return ((kept > 0) & (kept < whole)).to(_k.int8), (kept == whole).to(_k.int8)


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None, BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                      _compile=False, separate_full_blocks=True, compute_dq_write_order=False, dq_kv_order=True):
    """The BlockMask of `mask_mod` over (B, H, Q_LEN, KV_LEN) (B/H None: one mask for all);
    BLOCK_SIZE is an int or (Q_BLOCK_SIZE, KV_BLOCK_SIZE). The padding of the last partial blocks
    counts as masked, so those blocks are partial."""
    device = _default_device(device)
    if _mod_kind(mask_mod) != "mask":
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    B = 1 if B is None else B
    H = 1 if H is None else H
    q_block, kv_block = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else BLOCK_SIZE
    if _compile:
        warnings.warn(
            "_compile flag on create_block_mask was originally added to work around a torch.compile limitation. "
            "That limitation has since been addressed. So, to compile create_block_mask, we suggest doing "
            "torch.compile(create_block_mask). This still works for now, but will be removed in the future.",
            DeprecationWarning, stacklevel=2)
    if not isinstance(dq_kv_order, bool):
        raise ValueError("dq_kv_order must be a bool when using create_block_mask")
    mask = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    partial, full = _mask_to_blocks(mask, q_block, kv_block, separate_full_blocks)
    partial = _dense_to_ordered(partial)
    full = _dense_to_ordered(full) if full is not None else (None, None)
    bm = BlockMask.from_kv_blocks(partial[0], partial[1], full[0], full[1], BLOCK_SIZE=(q_block, kv_block),
                                  mask_mod=mask_mod, seq_lengths=(Q_LEN, KV_LEN))
    if compute_dq_write_order:
        bm.dq_write_order, bm.dq_write_order_full = _dq_write_order(bm, dq_kv_order)
        bm.dq_kv_order_spt = dq_kv_order
    return bm


# ---------------------------------------------------------------------------------------------
# flex_attention

def _validate_inputs(query, key, value, enable_gqa, block_mask):
    """torch's checks, in torch's order (so the first failing one names the same problem)."""
    if query.is_nested or key.is_nested or value.is_nested:
        raise NotImplementedError("flex_attention does not support NestedTensor inputs. "
                                  "Convert inputs to dense tensors before calling flex_attention.")
    if query.device != key.device or query.device != value.device:
        raise ValueError(f"Expected query, key, and value to have the same device type, but got query.device: "
                         f"{query.device}, key.device: {key.device}, and value.device: {value.device} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise ValueError(f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                         f"{query.dim()}, key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if query.size(-1) != key.size(-1):
        raise ValueError(f"Expect query and key/value to have the same embedding dimension but got "
                         f"E={query.size(-1)} and E={key.size(-1)}.")
    if query.device.type not in _SUPPORTED_DEVICES:
        raise ValueError("FlexAttention is only supported on CUDA, CPU, HPU, or MPS devices. "
                         f"Found input tensors on {query.device.type} device.")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    Hq, Hkv = query.size(1), key.size(1)
    if not enable_gqa and Hq != Hkv:
        raise ValueError(f"Expect query and key/value to have the same number of heads but got Hq={Hq} and "
                         f"Hkv={Hkv}. Try setting enable_gqa=True for GQA.")
    if enable_gqa and Hq % Hkv != 0:
        raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA but got Hq={Hq} "
                         f"and Hkv={Hkv}.")
    if query.size(0) != key.size(0):
        if block_mask is None:
            raise ValueError(f"Expect query and key/value to have the same batch size, or non-none block_mask, "
                             f"but got block_mask=None, Bq={query.size(0)}, and Bkv={key.size(0)}.")
        if block_mask.kv_num_blocks.size(0) != query.size(0):
            raise ValueError(f"Expect query and key/value to have the same batch size, or block_mask and query to "
                             f"have the same batch size, but got Bq={query.size(0)}, Bkv={key.size(0)}, "
                             f"B_block_mask={block_mask.kv_num_blocks.size(0)}.")


def _validate_block_mask(block_mask, query, key):
    if block_mask.mask_mod is _sliced_mask_mod_error:
        raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
    if tuple(block_mask.BLOCK_SIZE[:2]) != (_LARGE_SPARSE_BLOCK_SIZE, _LARGE_SPARSE_BLOCK_SIZE):
        mq, mkv = block_mask.shape[-2], block_mask.shape[-1]
        L, S = query.size(-2), key.size(-2)
        if L > mq or S > mkv:
            raise ValueError(
                f"block_mask was created for block_mask.shape={block_mask.shape} but got q_len={L} and kv_len={S}. "
                "As the block mask was created for a smaller length than you're using it for, you likely need to "
                "create a new block mask.")
        if (L < mq and S <= mkv) or (L <= mq and S < mkv):
            raise ValueError(
                f"block_mask was created for block_mask.shape={block_mask.shape} but got q_len={L} and kv_len={S}. "
                "As the block mask was created for a larger length than you're using it for, you can either 1. "
                "create a new block mask with the correct length, or 2. 'adjust' the existing block mask to the "
                "correct length by calling block_mask._adjust(q_len, kv_len). This essentially 'crops' the block "
                "mask to the upper left corner, which does not work for all mask_mods!")
    if query.device != block_mask.kv_num_blocks.device:
        raise RuntimeError(f"Expect q/k/v and block_mask to be on the same device but got {query.device} and "
                           f"{block_mask.kv_num_blocks.device}.")


def _check_kernel_options(kernel_options, on_cpu, want_max):
    opts = dict(kernel_options or {})
    if "BACKEND" in opts and opts.get("FORCE_USE_FLEX_ATTENTION", False):
        raise RuntimeError("BACKEND cannot be combined with legacy FORCE_USE_FLEX_ATTENTION. BACKEND supersedes the "
                           "legacy knob; please drop FORCE_USE_FLEX_ATTENTION and only specify the desired BACKEND.")
    if "BACKEND" in opts and opts["BACKEND"] not in _BACKENDS:
        raise ValueError(f"Invalid BACKEND value '{opts['BACKEND']}'. Must be one of {_BACKENDS}")
    for internal in ("OUTPUT_LOGSUMEXP", "OUTPUT_MAX"):
        if internal in opts:
            raise AssertionError(f"{internal} must not be in kernel_options")
    if want_max and opts.get("BACKEND") == "FLASH":
        raise NotImplementedError("Returning max scores is not supported with BACKEND='FLASH'. "
                                  "Use return_aux=AuxRequest(lse=True) or omit max_scores.")
    if want_max and on_cpu:
        raise NotImplementedError("Returning max scores is not supported on CPU/MPS.")


def _attend(query, key, value, score_mod, mask_mod, scale, want_lse, want_max):
    """Output, lse and max scores of the materialised attention (torch's eager math)."""
    B, Hq, L, E = query.shape
    Bkv, Hkv, S = key.shape[:3]
    if not (B == Bkv or (B > 1 and Bkv == 1)):
        raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={B} and Bkv={Bkv}")
    if value.size(0) not in (1, B) or value.size(1) != Hkv or value.size(2) != S:
        raise RuntimeError(f"flex_attention: value of shape {tuple(value.shape)} does not match key of shape "
                           f"{tuple(key.shape)} (expected [{B} or 1, {Hkv}, {S}, Ev])")
    if S == 0:  # torch's reduction over the (empty) key dimension fails the same way
        raise IndexError("max(): Expected reduction dim 3 to have non-zero size.")
    G = Hq // Hkv
    # float32 softmax for half types (and float64 kept), as torch's eager path
    work = _k.float64 if query.dtype == _k.float64 else _k.float32
    # GQA without repeating K/V: the G query heads of one kv head are stacked along the rows
    q = query.to(work).reshape(B, Hkv, G * L, E)
    scores = (q @ key.to(work).transpose(-2, -1)).reshape(B, Hq, L, S) * scale
    shape = (B, Hq, L, S)
    if score_mod is not None or mask_mod is not None:
        post = scores if score_mod is None else _call_mod(score_mod, scores, shape, scores.device)
        keep = None if mask_mod is None else _call_mod(mask_mod, None, shape, scores.device)
        if keep is not None or not post.is_floating_point():
            if keep is None:
                keep = _k.ones((), dtype=_k.bool, device=scores.device)
            post = _k.where(keep, post, _k.tensor(-math.inf, dtype=work, device=scores.device))
        if tuple(post.shape) != shape:
            post = post.expand(*shape)
    else:
        post = scores
    # rows with every score -inf: probabilities 0 and lse -inf. They are computed on zeros so
    # that neither the forward nor the backward sees exp(-inf - -inf).
    dead = (post == -math.inf).all(dim=-1, keepdim=True)
    any_dead = bool(dead.any())
    safe = post.masked_fill(dead, 0.0) if any_dead else post
    probs = _k.softmax(safe, dim=-1)
    if any_dead:
        probs = probs.masked_fill(dead, 0.0)
    probs = probs.to(query.dtype).reshape(B, Hkv, G * L, S)
    out = (probs @ value.to(query.dtype)).reshape(B, Hq, L, value.size(-1))
    lse = max_scores = None
    if want_lse:
        lse = safe.logsumexp(dim=-1)
        if any_dead:
            lse = lse.masked_fill(dead.squeeze(-1), -math.inf)
    if want_max:
        max_scores = post.max(dim=-1)[0]
    return out, lse, max_scores


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                   return_lse=False, kernel_options=None, *, return_aux=None):
    """Attention whose scores q·kᵀ·scale pass through score_mod(score, b, h, q_idx, kv_idx) and
    are masked (-inf) where block_mask.mask_mod(b, h, q_idx, kv_idx) is False.

    query [B, Hq, L, E], key [B, Hkv, S, E], value [B, Hkv, S, Ev] -> [B, Hq, L, Ev]. scale
    defaults to 1/sqrt(E); enable_gqa lets Hq be a multiple of Hkv (q head h reads kv head
    h // (Hq // Hkv)). return_aux=AuxRequest(lse=True) adds AuxOutput(lse=[B, Hq, L]) (natural
    log, float32 for half inputs); return_lse=True is the deprecated spelling returning (out, lse).
    Rows whose scores are all masked give output 0 and lse -inf. kernel_options are validated and
    otherwise ignored. Differentiable in query, key, value and tensors the mods capture.
    """
    _validate_inputs(query, key, value, enable_gqa, block_mask)
    mask_mod = None
    if block_mask is not None:
        _validate_block_mask(block_mask, query, key)
        mask_mod = None if block_mask.mask_mod is noop_mask else block_mask.mask_mod
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is deprecated, please use "
                         "return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        _warn_once("deprecated_return_lse", "return_lse is deprecated and will be removed in v2.10. Please use "
                   "return_aux=AuxRequest(lse=True) instead.", FutureWarning)
    want_lse = return_lse or (return_aux is not None and return_aux.lse)
    want_max = return_aux is not None and return_aux.max_scores
    on_cpu = "cpu" in (query.device.type, key.device.type, value.device.type)
    _check_kernel_options(kernel_options, on_cpu, want_max)
    if not _FLEX_ATTENTION_DISABLE_COMPILE_DEBUG:
        # torch warns on its eager path too; Kindle's implementation is that same unfused one
        _warn_once("flex_attention_performance",
                   "flex_attention called without torch.compile() - this will use an unfused implementation that "
                   "materializes the full scores matrix instead of generating a fused kernel.\n\n"
                   "SOLUTION: Use torch.compile(flex_attention)(...)\n\n"
                   "If you want to debug your score_mod/mask_mod, you can set:\n"
                   "torch.nn.attention.flex_attention._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = True\n\n"
                   "This will allow you to use print statements or breakpoints. Note: This doesn't work with the "
                   "backwards pass and may produce incorrect results.")
    if score_mod is not None:  # torch's tracer finds a bad score_mod only after all the checks above
        _check_mod_callable(score_mod)
    out, lse, max_scores = _attend(query, key, value, score_mod, mask_mod, scale, want_lse, want_max)
    # torch hands back None, not an empty tensor, for statistics with no elements
    lse = lse if lse is not None and lse.numel() > 0 else None
    max_scores = max_scores if max_scores is not None and max_scores.numel() > 0 else None
    if return_aux is not None:
        return out, AuxOutput(lse=lse, max_scores=max_scores)
    if return_lse:
        return out, lse
    return out
