"""Datasets, as in torch.utils.data.dataset: the map-style and iterable-style bases and the
wrappers that combine them (TensorDataset, StackDataset, ConcatDataset, ChainDataset, Subset),
and random_split."""
import bisect
import itertools
import math
import warnings
from typing import Generic, TypeVar

import kindle

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]


T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: ``__getitem__(index)`` returns one sample; ``__len__`` is expected
    by most samplers. ``__getitems__(indices)``, when defined, fetches a whole batch at once."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """An iterable-style dataset: ``__iter__`` yields the samples. With DataLoader workers each
    worker iterates its own copy; use get_worker_info() in ``__iter__`` to shard the stream."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the i-th rows of each tensor (all tensors share their first dimension)."""

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Samples are tuples (positional datasets) or dicts (keyword datasets) of the i-th sample
    of each dataset."""

    def __init__(self, *args, **kwargs):
        if args:
            if kwargs:
                raise ValueError("Supported either ``tuple``- (via ``args``) or"
                                 "``dict``- (via ``kwargs``) like input/output, but both types "
                                 "are given.")
            datasets = args
        elif kwargs:
            datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")
        parts = list(datasets.values()) if isinstance(datasets, dict) else list(datasets)
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = datasets

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices):
        def column(dataset):
            getitems = getattr(dataset, "__getitems__", None)
            if not callable(getitems):
                return [dataset[i] for i in indices]
            items = getitems(indices)
            if len(items) != len(indices):
                raise ValueError("Nested dataset's output size mismatch."
                                 f" Expected {len(indices)}, got {len(items)}")
            return items

        if isinstance(self.datasets, dict):
            cols = {k: column(d) for k, d in self.datasets.items()}
            return [{k: c[j] for k, c in cols.items()} for j in range(len(indices))]
        cols = [column(d) for d in self.datasets]
        return [tuple(c[j] for c in cols) for j in range(len(indices))]

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """The concatenation of map-style datasets."""

    @staticmethod
    def cumsum(sequence):
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """Iterable datasets chained one after the other, on the fly."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices
        if (type(self).__getitem__ is not Subset.__getitem__
                and type(self).__getitems__ is Subset.__getitems__):
            # DataLoader fetches batches through __getitems__, which would bypass the override.
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Splits ``dataset`` into non-overlapping random Subsets of the given lengths, or of the
    given fractions (summing to 1) of its length; the remainder of the rounding is spread one
    item at a time over the splits, in order. ``generator`` defaults to the global one."""
    if generator is None:
        generator = kindle.default_generator
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(n * frac))
        for i in range(n - sum(subset_lengths)):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. "
                              f"This might result in an empty dataset.", stacklevel=2)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = kindle.randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
