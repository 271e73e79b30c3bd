"""kindle.optim: optimizers and learning-rate schedulers with torch.optim's API.

SGD, Adam, AdamW, RMSprop and Adagrad update a whole parameter group in one fused C++ call
(kindle._C._optim); Adadelta, Adafactor, Adamax, ASGD, Muon, NAdam, RAdam, Rprop, SparseAdam
and LBFGS are written with kindle tensor ops. swa_utils: weight averaging (AveragedModel, SWALR,
update_bn), as torch.optim.swa_utils.

The implementation-choice arguments torch's constructors take are accepted everywhere torch
accepts them: foreach and fused (fused also on the CPU, as torch allows for SGD, Adam, AdamW and
Adagrad) select torch's kernels and change nothing here; capturable=True fails the step for
CPU parameters with torch's AssertionError; differentiable=True works in the optimizers
written with tensor ops that are new in Kindle (Adadelta, ASGD, Rprop) and raises
NotImplementedError in the others.
"""
from . import lr_scheduler  # noqa: F401
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam
from . import swa_utils  # noqa: E402,F401  (after the optimizers it builds on)

__all__ = ["ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "Adamax", "AdamW", "LBFGS",
           "Muon", "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam",
           "lr_scheduler"]
