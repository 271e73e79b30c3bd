"""torch.profiler for Kindle: where the time and memory of a program go.

    with kindle.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        model(x).sum().backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")   # chrome://tracing or ui.perfetto.dev

Recording is done in C++ (kindle/profiler.h): every op called from Python ("aten::<op>", as
torch names them), every backward node the engine runs ("MulBackward0", ...) and every
record_function range, with the inputs' shapes and dtypes, the bytes allocated inside and the
Python stack on request. Kindle runs on CPU: ProfilerActivity.CUDA records nothing more.
"""
import contextlib
import enum
import os
import socket
import sys
import time
import warnings

from .. import _C
from . import itt  # noqa: F401  (torch.profiler.itt)
from ._events import EventList, FunctionEvent, FunctionEventAvg, _link_children

__all__ = ["profile", "ProfilerActivity", "ProfilerAction", "schedule", "tensorboard_trace_handler",
           "record_function", "supported_activities", "EventList", "FunctionEvent", "FunctionEventAvg"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What the profiler does at a step. DEVICE_STOPPED is torch's internal state for a device
    collection that stopped early; a schedule must not return it (Kindle never sets it)."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def supported_activities():
    return {ProfilerActivity.CPU}


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """The action for each step: skip_first steps, then cycles of wait, warmup and active steps
    (the last active step saves the trace), `repeat` times (0: forever). With skip_first_wait
    the first wait is skipped (every cycle is shifted by `wait` steps). torch's function, with
    its checks (AssertionError) and its warning when there is no warmup."""

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", UserWarning, stacklevel=2)
    return schedule_fn


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready that writes each trace to dir_name as <worker>.<ms>.pt.trace.json[.gz]
    (TensorBoard's profiler plugin and Perfetto read them)."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{int(time.time() * 1000)}.pt.trace.json")
        if use_gzip:
            import gzip
            import shutil
            prof.export_chrome_trace(path)
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)
        else:
            prof.export_chrome_trace(path)
    return handler


class record_function(contextlib.ContextDecorator):  # noqa: N801
    """Labels a block (`with record_function("name"):`) or a function (`@record_function("name")`):
    the range is an event of the running profile (nothing when none runs)."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self.record = None
        self._handle = 0

    def __enter__(self):
        self._handle = _C._profiler_begin(str(self.name))
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self.run_callbacks_on_exit:
            _C._profiler_end(self._handle)
        return False

    def _call_end_callbacks_on_future(self, fut):
        """Ends the range when `fut` completes."""
        self.run_callbacks_on_exit = False
        handle = self._handle
        if hasattr(fut, "add_done_callback"):
            fut.add_done_callback(lambda _: _C._profiler_end(handle))
        else:
            _C._profiler_end(handle)
        return fut


class _ModuleRanges:
    """profile(with_modules=True): each nn.Module forward becomes a range "nn.Module: Linear_0"
    (class name, then the instance's number among its class), as torch's Python tracer writes
    them; the trace shows which module ran each op. (torch records module hierarchy only for
    TorchScript models; Kindle does it for eager ones.)"""

    def __init__(self):
        from ..nn.modules import module as nn_module
        self.numbers, self.open = {}, {}
        self.handles = [nn_module.register_module_forward_pre_hook(self.enter),
                        nn_module.register_module_forward_hook(self.exit, always_call=True)]

    def enter(self, module, args):
        cls = type(module).__name__
        per_class = self.numbers.setdefault(cls, {})
        number = per_class.setdefault(id(module), len(per_class))
        self.open.setdefault(id(module), []).append(_C._profiler_begin(f"nn.Module: {cls}_{number}", True))

    def exit(self, module, args, output):
        stack = self.open.get(id(module))
        if stack:
            _C._profiler_end(stack.pop())

    def remove(self):
        for h in self.handles:
            h.remove()


# The profile whose recording is the running C++ session (one session at a time).
_session_owner = None


class profile:
    """Profiles the ops, backward nodes and record_function ranges run inside (torch.profiler.profile).
    With a schedule, step() advances it; on_trace_ready runs with this profiler each time a
    recording ends (at the schedule's last active step, or at stop).

    Nested profiles behave as torch's: the inner one takes the session over and gets the events
    from its start to its stop; the outer one's recording ends there, and at its own stop it has
    no events (torch discards them too, and logs "disableProfiler called but no active profiling
    session found" on stderr, as this does)."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None):
        acts = set(activities) if activities is not None else supported_activities()
        if acts - {ProfilerActivity.CPU}:
            warnings.warn("kindle.profiler: Kindle runs on CPU; only ProfilerActivity.CPU events are recorded",
                          UserWarning, stacklevel=2)
        self.activities = acts
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.with_flops, self.with_modules = with_flops, with_modules
        self.acc_events = acc_events
        self.step_num = 0
        self._recording = False
        self._module_hooks = None
        self._events = EventList(profile_memory=profile_memory, record_shapes=record_shapes)
        self._action = ProfilerAction.RECORD if schedule is None else schedule(0)

    # ---- recording

    def _begin(self):
        global _session_owner
        if not self._recording:
            if _C._profiler_active():  # another profile is recording: this one takes over (as torch)
                previous = _session_owner
                _C._profiler_stop()  # its events so far are dropped, as torch drops them
                if previous is not None:
                    previous._drop_module_hooks()
            # FLOP counts need the shapes (as in torch, with_flops records them)
            _C._profiler_start(bool(self.record_shapes or self.with_flops), bool(self.profile_memory),
                               bool(self.with_stack))
            _session_owner = self
            self._recording = True
            if self.with_modules:
                self._module_hooks = _ModuleRanges()

    def _drop_module_hooks(self):
        if self._module_hooks is not None:
            self._module_hooks.remove()
            self._module_hooks = None

    def _end(self):
        global _session_owner
        if not self._recording:
            return
        self._drop_module_hooks()
        if _session_owner is self:
            raw = _C._profiler_stop()
            _session_owner = None
        else:  # a nested profile took the session over and has ended it
            raw = []
            sys.stderr.write("kindle.profiler: disableProfiler called but no active profiling session found: a "
                             "nested profile took this one's session over\n")
        self._recording = False
        events = [FunctionEvent(*r, with_flops=self.with_flops) for r in raw]
        _link_children(events)
        if not self.acc_events:
            self._events = EventList(profile_memory=self.profile_memory, record_shapes=self.record_shapes)
        self._events.extend(events)
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def start(self):
        if self._action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._begin()
        return self

    def stop(self):
        self._end()

    def step(self):
        """Marks the end of a training step: moves the schedule on."""
        prev = self._action
        self.step_num += 1
        self._action = ProfilerAction.RECORD if self.schedule is None else self.schedule(self.step_num)
        if self.schedule is None:
            return
        recording_next = self._action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if prev == ProfilerAction.RECORD_AND_SAVE or (self._recording and not recording_next):
            self._end()
        if recording_next:
            self._begin()

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc_value, traceback):
        self.stop()
        return False

    # ---- results

    def events(self):
        return self._events

    @property
    def function_events(self):
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        if group_by_input_shape and not self.record_shapes:
            raise RuntimeError("key_averages(group_by_input_shape=True) requires record_shapes=True")
        if group_by_stack_n and not self.with_stack:
            raise RuntimeError("key_averages(group_by_stack_n=...) requires with_stack=True")
        return self._events.key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, *args, **kwargs):
        return self.key_averages().table(*args, **kwargs)

    def export_chrome_trace(self, path):
        return self._events.export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        if not self.with_stack:
            raise RuntimeError("export_stacks requires with_stack=True")
        return self._events.export_stacks(path, metric)

    def __str__(self):
        return self.table()
