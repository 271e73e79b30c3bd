"""kindle.utils.data: datasets, samplers, collation and the DataLoader, mirroring
torch.utils.data (same names, arguments, defaults and errors)."""
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                      Subset, TensorDataset, random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)
from ._utils.collate import default_collate, default_convert
from ._utils.worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader, _DatasetKind
from .distributed import DistributedSampler

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset",
           "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
           "WorkerInfo", "default_collate", "default_convert", "get_worker_info",
           "random_split"]
