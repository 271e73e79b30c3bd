"""kindle.optim.swa_utils: stochastic weight averaging and exponential moving averages of a model
(torch.optim.swa_utils): AveragedModel, the averaging functions, SWALR and update_bn.

AveragedModel keeps a deep copy of a model whose parameters (and, with use_buffers=True, buffers)
are a running average of the model's: the first update copies them, later ones average (an equal
average by default, or what avg_fn / multi_avg_fn compute). n_averaged is a buffer, so the averaged
model's state dict carries it as torch's does.
"""
import itertools
import math
import warnings
from copy import deepcopy

from .. import _C
from ..autograd import no_grad
from ..nn import Module
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _averages_in_place(p):
    return p.is_floating_point() or p.is_complex()


def get_ema_multi_avg_fn(decay=0.999):
    """In place over lists of parameters: ema = decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            if _averages_in_place(p_ema):
                p_ema.lerp_(p_model, 1 - decay)
            else:  # integer buffers: the formula, rounded back into the buffer's dtype
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """In place over lists of parameters: the equal average of the n_averaged + 1 values seen."""
    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        n = num_averaged + 1
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            if _averages_in_place(p_avg):
                weight = float(1 / n) if not isinstance(n, _C.Tensor) else float((1 / n).item())
                p_avg.lerp_(p_model, weight)
            elif isinstance(n, _C.Tensor):
                p_avg.addcdiv_(p_model - p_avg, n)
            else:
                p_avg.add_(p_model - p_avg, alpha=1.0 / n)

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """One parameter: returns decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """One parameter: returns the running equal average after one more value."""
    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters average the model's over update_parameters() calls.

    avg_fn(averaged, current, n_averaged) returns one averaged parameter; multi_avg_fn(averaged
    list, current list, n_averaged) updates lists in place; with neither, the equal (SWA) average.
    use_buffers=True averages the buffers too; otherwise they are copied from the model.
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _C.tensor(0, dtype=_C.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged(self, model):
        if self.use_buffers:
            return (itertools.chain(self.module.parameters(), self.module.buffers()),
                    itertools.chain(model.parameters(), model.buffers()))
        return self.parameters(), model.parameters()

    def update_parameters(self, model):
        mine, theirs = self._averaged(model)
        averaged, current = [], []
        first = bool(self.n_averaged == 0)
        for p_avg, p_model in zip(mine, theirs):
            p_model = p_model.detach().to(p_avg.device)
            averaged.append(p_avg.detach())
            current.append(p_model)
            if first:
                p_avg.detach().copy_(p_model)
        if not first:
            if self.multi_avg_fn is not None:
                # Grouped by device and dtype, as torch calls multi_avg_fn once per group.
                groups = {}
                for p_avg, p_model in zip(averaged, current):
                    lists = groups.setdefault((str(p_avg.device), p_avg.dtype), ([], []))
                    lists[0].append(p_avg)
                    lists[1].append(p_model)
                for avg_list, cur_list in groups.values():
                    self.multi_avg_fn(avg_list, cur_list, self.n_averaged.to(avg_list[0].device))
            else:
                # The default is the equal average one parameter at a time (torch's CPU path, whose
                # rounding this matches; integer buffers take the float result truncated).
                avg_fn = self.avg_fn or get_swa_avg_fn()
                for p_avg, p_model in zip(averaged, current):
                    p_avg.copy_(avg_fn(p_avg, p_model, self.n_averaged.to(p_avg.device)))
        if not self.use_buffers:
            # Buffers (BatchNorm's running statistics) follow the model; update_bn recomputes them.
            for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                b_avg.detach().copy_(b_model.detach().to(b_avg.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader, model, device=None):
    """Recompute the running statistics of every BatchNorm layer of `model` with one pass over
    `loader` (batches are tensors, or lists/tuples whose first item is the input): the statistics
    are reset and accumulated as a cumulative average (momentum None), then each layer's momentum
    and the model's training mode are restored."""
    from ..nn.modules.batchnorm import _BatchNorm
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's learning rate to swa_lr over anneal_epochs steps ("cos" or "linear"),
    then holds it there."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        # The rate the annealing started from, recovered from the current one.
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / span)))
        start = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / span)))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, start)]

    def state_dict(self):
        """Every attribute but the optimizer and the annealing function (restored from its name)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
