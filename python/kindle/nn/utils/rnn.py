"""torch.nn.utils.rnn: padding and packing variable-length sequences.

A PackedSequence stores the steps of a batch of sequences sorted by decreasing length, time
major: for each step t, the batch_sizes[t] sequences still running. The packing itself is the
core's (csrc/nn/packed.cpp, shared with the C++ front end); what is here sorts the batch when
enforce_sorted=False and undoes the sort."""
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


def _lengths_tensor(lengths):
    if isinstance(lengths, _C.Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D tensor")
        return lengths.to(_C.int64)
    return _C.tensor([int(v) for v in lengths], dtype=_C.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """Packs a padded batch (T, B, *) (or (B, T, *) with batch_first) of sequences of the given
    lengths. enforce_sorted=True requires lengths in decreasing order; otherwise the batch is
    sorted here and the permutation recorded so it can be undone."""
    lengths = _lengths_tensor(lengths)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = _C.sort(lengths, descending=True, stable=True)
        input = input.index_select(0 if batch_first else 1, sorted_indices)  # noqa: A001
    data, batch_sizes = _C._pack_padded_sequence(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: returns (padded, lengths), in the original batch
    order; total_length pads the time dimension to at least that many steps."""
    data, batch_sizes, _, unsorted_indices = sequence
    max_len = batch_sizes.size(0)
    if total_length is not None and total_length < max_len:
        raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                         f"but got total_length={total_length} and max sequence length being {max_len}")
    padded, lengths = _C._pad_packed_sequence(data, batch_sizes, batch_first, padding_value,
                                              max_len if total_length is None else total_length)
    if unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, unsorted_indices)
        lengths = lengths.index_select(0, unsorted_indices.cpu())
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks sequences (L_i, *) into (T, B, *) (or (B, T, *)), padding each to the longest."""
    if isinstance(sequences, _C.Tensor):
        sequences = sequences.unbind(0)
    return _C._nn.pad_sequence(list(sequences), batch_first, float(padding_value), padding_side)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences that pad_sequence stacked."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences.unbind(0), _lengths_tensor(lengths).tolist())]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of sequences (L_i, *) (see pack_padded_sequence)."""
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences that pack_sequence packed."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
