"""torch.distributed.algorithms.join: Join (uneven inputs) for Joinable objects; Kindle's
DistributedDataParallel is one (its join() context manager is the usual entry point)."""
import abc
import contextlib

__all__ = ["Join", "Joinable", "JoinHook"]


class JoinHook:
    def main_hook(self):
        pass

    def post_hook(self, is_last_joiner):
        pass


class Joinable(abc.ABC):
    """What Join works with (an abstract base, as torch's)."""

    @abc.abstractmethod
    def join_hook(self, **kwargs):
        ...

    @property
    def join_device(self):
        return "cpu"

    @property
    @abc.abstractmethod
    def join_process_group(self):
        ...


@contextlib.contextmanager
def Join(joinables, enable=True, throw_on_early_termination=False, **kwargs):  # noqa: N802 (torch's name)
    """Runs the block with every joinable in join mode (each must be a DistributedDataParallel)."""
    with contextlib.ExitStack() as stack:
        for j in joinables:
            stack.enter_context(j.join(enable=enable, throw_on_early_termination=throw_on_early_termination))
        yield
