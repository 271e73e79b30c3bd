"""kindle.optim: optimizers and learning-rate schedulers with torch.optim's API.

SGD, Adam, AdamW, RMSprop and Adagrad update a whole parameter group in one fused C++ call
(kindle._C._optim); Adamax, NAdam, RAdam and LBFGS are written with kindle tensor ops.
"""
from . import lr_scheduler  # noqa: F401
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Adagrad", "Adam", "Adamax", "AdamW", "LBFGS", "NAdam", "Optimizer", "RAdam",
           "RMSprop", "SGD", "lr_scheduler"]
