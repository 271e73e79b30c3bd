"""DistributedSampler (torch.utils.data.distributed): each of `num_replicas` processes reads its
own share of the dataset. The index list is padded by repeating its start (or truncated, with
drop_last) to a multiple of num_replicas, then replica `rank` takes every num_replicas-th index
from position `rank`. With shuffle, the list is a permutation drawn from a generator seeded with
seed + epoch, so all replicas agree on it and call set_epoch to change it each epoch (Kindle's
permutations differ from PyTorch's for the same seed, like every Kindle random stream)."""
import math

import kindle

from .sampler import Sampler, T_co

__all__ = ["DistributedSampler"]


def _process_group_value(what):
    """The world size or rank of the default process group, as torch.distributed reports it."""
    try:
        import kindle.distributed as dist
    except ImportError:
        dist = None
    if dist is None or not getattr(dist, "is_available", lambda: False)():
        raise RuntimeError("Requires distributed package to be available")
    return dist.get_world_size() if what == "world_size" else dist.get_rank()


class DistributedSampler(Sampler[T_co]):
    """Restricts data loading to the share of replica `rank` of `num_replicas` (by default the
    default process group's rank and world size)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = _process_group_value("world_size")
        if rank is None:
            rank = _process_group_value("rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            # Whole rounds only: the tail that would need padding is dropped.
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = kindle.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = kindle.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        own = indices[self.rank:self.total_size:self.num_replicas]
        assert len(own) == self.num_samples
        return iter(own)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Sets the epoch, which seeds the shuffle: call it before each epoch's DataLoader iterator."""
        self.epoch = epoch
