"""torch.autograd.profiler: the legacy profiler API (profile, record_function) over
kindle.profiler's recording."""
from ..profiler import EventList, FunctionEvent, FunctionEventAvg, record_function
from ..profiler import profile as _profile

__all__ = ["profile", "record_function", "emit_nvtx", "emit_itt", "EventList", "FunctionEvent", "FunctionEventAvg"]


class profile(_profile):
    """`with kindle.autograd.profiler.profile(record_shapes=True) as prof:` then
    prof.key_averages().table(...), prof.function_events, prof.export_chrome_trace(path)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules, acc_events=acc_events)
        self.enabled = enabled

    def start(self):
        return super().start() if self.enabled else self

    # torch.autograd.profiler.profile's totals, over the recorded events
    @property
    def self_cpu_time_total(self):
        """The sum of every event's self CPU time, in microseconds."""
        return self.function_events.self_cpu_time_total

    def total_average(self):
        """All events summed into one FunctionEventAvg keyed "Total"."""
        return self.function_events.total_average()


class _NoRanges:
    """A profiler-range emitter that emits nothing (Kindle has neither ITT nor NVTX instrumentation)."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class emit_itt(_NoRanges):  # noqa: N801  (torch's name)
    """Intel ITT ranges for VTune: nothing is emitted (kindle.profiler.itt)."""


class emit_nvtx(_NoRanges):  # noqa: N801  (torch's name)
    """NVTX ranges for NVIDIA's profilers: Kindle has no CUDA backend, so nothing is emitted."""
