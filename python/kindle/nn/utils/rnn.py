"""torch.nn.utils.rnn: padding and packing variable-length sequences.

A PackedSequence stores the steps of a batch of sequences sorted by decreasing length, time
major: for each step t, the batch_sizes[t] sequences still running. Everything here is index
bookkeeping (slices, cat, stack, index_select), so gradients flow through to the inputs."""
from collections import namedtuple

from ... import _C

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


def invert_permutation(permutation):
    """The inverse of an index permutation (None for None)."""
    if permutation is None:
        return None
    order = permutation.tolist()
    inverse = [0] * len(order)
    for i, p in enumerate(order):
        inverse[p] = i
    return _C.tensor(inverse, dtype=_C.int64, device=permutation.device)


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """(data, batch_sizes, sorted_indices, unsorted_indices), as made by pack_padded_sequence or
    pack_sequence; not meant to be built by hand."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # torch accepts (data, batch_sizes) as the first argument
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._with_data(data)

    def cpu(self, *args, **kwargs):
        return self._with_data(self.data.cpu(*args, **kwargs))

    def double(self):
        return self.to(dtype=_C.float64)

    def float(self):  # noqa: A003
        return self.to(dtype=_C.float32)

    def half(self):
        return self.to(dtype=_C.float16)

    def long(self):
        return self.to(dtype=_C.int64)

    def int(self):  # noqa: A003
        return self.to(dtype=_C.int32)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _runs(batch_sizes):
    """(start step, stop step, batch size) for each run of equal batch sizes."""
    runs, t = [], 0
    while t < len(batch_sizes):
        stop = t
        while stop < len(batch_sizes) and batch_sizes[stop] == batch_sizes[t]:
            stop += 1
        runs.append((t, stop, batch_sizes[t]))
        t = stop
    return runs


def _padded_to_packed(padded, batch_sizes):
    """(T, B, *) sorted by decreasing length -> packed data (sum of lengths, *)."""
    sizes = batch_sizes.tolist() if isinstance(batch_sizes, _C.Tensor) else list(batch_sizes)
    rest = tuple(padded.shape[2:])
    pieces = [padded[t0:t1, :b].reshape((-1,) + rest) for t0, t1, b in _runs(sizes)]
    return pieces[0] if len(pieces) == 1 else _C.cat(pieces, 0)


def _packed_to_padded(data, batch_sizes, padding_value=0.0):
    """Packed data -> ((T, B, *) padded with padding_value, lengths in sorted order)."""
    sizes = batch_sizes.tolist() if isinstance(batch_sizes, _C.Tensor) else list(batch_sizes)
    batch = sizes[0]
    rest = tuple(data.shape[1:])
    pieces, offset = [], 0
    for t0, t1, b in _runs(sizes):
        block = data[offset:offset + (t1 - t0) * b].reshape((t1 - t0, b) + rest)
        offset += (t1 - t0) * b
        if b < batch:
            block = _C.cat([block, data.new_full((t1 - t0, batch - b) + rest, padding_value)], 1)
        pieces.append(block)
    padded = pieces[0] if len(pieces) == 1 else _C.cat(pieces, 0)
    lengths = [sum(1 for s in sizes if s > i) for i in range(batch)]
    return padded, lengths


def _lengths_list(lengths):
    if isinstance(lengths, _C.Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"pack_padded_sequence: expected a 1-D lengths tensor, got {lengths.dim()}-D")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """Packs a padded batch (T, B, *) (or (B, T, *) with batch_first) of sequences of the given
    lengths. enforce_sorted=True requires lengths in decreasing order; otherwise the batch is
    sorted here and the permutation recorded so it can be undone."""
    lengths = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if len(lengths) != input.size(batch_dim):
        raise ValueError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                         f"(batch_size={input.size(batch_dim)})")
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        sorted_indices = _C.tensor(order, dtype=_C.int64, device=input.device)
        lengths = [lengths[i] for i in order]
        input = input.index_select(batch_dim, sorted_indices)  # noqa: A001
    if lengths and lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)  # noqa: A001
    if lengths[0] > input.size(0):
        raise RuntimeError(f"Expected the longest sequence to fit in the padded input: got length {lengths[0]} "
                           f"for an input of {input.size(0)} steps")
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0])]
    data = _padded_to_packed(input, batch_sizes)
    return PackedSequence(data, _C.tensor(batch_sizes, dtype=_C.int64), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: returns (padded, lengths), in the original batch
    order; total_length pads the time dimension to at least that many steps."""
    data, batch_sizes, _, unsorted_indices = sequence
    max_len = batch_sizes.size(0)
    if total_length is not None and total_length < max_len:
        raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                         f"but got total_length={total_length} and max sequence length being {max_len}")
    padded, lengths = _packed_to_padded(data, batch_sizes, padding_value)
    if total_length is not None and total_length > max_len:
        extra = data.new_full((total_length - max_len,) + tuple(padded.shape[1:]), padding_value)
        padded = _C.cat([padded, extra], 0)
    lengths = _C.tensor(lengths, dtype=_C.int64)
    if unsorted_indices is not None:
        padded = padded.index_select(1, unsorted_indices)
        lengths = lengths.index_select(0, unsorted_indices.cpu())
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks sequences (L_i, *) into (T, B, *) (or (B, T, *)), padding each to the longest."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, _C.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.size(0) for s in sequences)
    padded = []
    for s in sequences:
        n = max_len - s.size(0)
        if n:
            fill = s.new_full((n,) + tuple(s.shape[1:]), padding_value)
            s = _C.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return _C.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences that pad_sequence stacked."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences.unbind(0), _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of sequences (L_i, *) (see pack_padded_sequence)."""
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences that pack_sequence packed."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
