"""kindle.utils.benchmark: torch.utils.benchmark's Timer and Measurement for Python statements.

Timer compiles `stmt` and `setup` once (with `globals`), runs setup, and times `stmt` in blocks
with the thread count set to `num_threads` (restored after). timeit(number) is one block of
`number` runs; blocked_autorange grows the block until one block takes at least 0.1 ms, then
repeats blocks until `min_run_time` has passed; adaptive_autorange stops once the IQR/median is
below `threshold`. Times are per run, in seconds. (Only language="python": Kindle has no C++
statement timer.)
"""
import statistics
import textwrap
import timeit as _timeit

from ... import get_num_threads, set_num_threads

__all__ = ["Timer", "Measurement"]


class Measurement:
    """The per-run times of a statement's blocks, with their order statistics."""

    def __init__(self, number_per_run, raw_times, stmt="", label=None, sub_label=None, description=None,
                 num_threads=1):
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.stmt, self.label, self.sub_label, self.description = stmt, label, sub_label, description
        self.num_threads = num_threads

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self):
        return statistics.fmean(self.times)

    @property
    def median(self):
        return statistics.median(self.times)

    def _quantile(self, q):
        ts = sorted(self.times)
        if len(ts) == 1:
            return ts[0]
        pos = q * (len(ts) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(ts) - 1)
        return ts[lo] + (ts[hi] - ts[lo]) * (pos - lo)

    @property
    def iqr(self):
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def has_warnings(self):
        return self.iqr / self.median > 0.1 if self.median > 0 else False

    @property
    def title(self):
        parts = [p for p in (self.label, self.sub_label, self.description) if p]
        return ": ".join(parts) if parts else self.stmt

    @staticmethod
    def _unit(seconds):
        for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
            if seconds >= scale:
                return unit, scale
        return "ns", 1e-9

    def __repr__(self):
        unit, scale = self._unit(self.median)
        lines = [f"<kindle.utils.benchmark.Measurement object at {hex(id(self))}>", self.title]
        if len(self.times) > 1:
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._quantile(0.25) / scale:.2f} to "
                         f"{self._quantile(0.75) / scale:.2f})")
        else:
            lines.append(f"  {self.median / scale:.2f} {unit}")
        threads = f"{self.num_threads} thread" + ("s" if self.num_threads != 1 else "")
        lines.append(f"  {len(self.times)} measurement{'s' if len(self.times) != 1 else ''}, "
                     f"{self.number_per_run} runs per measurement, {threads}")
        return "\n".join(lines)


class Timer:
    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=_timeit.default_timer, globals=None,  # noqa: A002
                 label=None, sub_label=None, description=None, env=None, num_threads=1, language="python"):
        if language not in ("python", "py"):
            raise ValueError(f"kindle.utils.benchmark.Timer: only language='python' is supported, got {language!r}")
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        self._stmt, self._label, self._sub_label, self._description = stmt, label, sub_label, description
        self._num_threads = num_threads
        setup = textwrap.dedent(setup)
        if global_setup:
            setup = textwrap.dedent(global_setup) + "\n" + setup
        self._timer = _timeit.Timer(stmt=textwrap.dedent(stmt), setup=setup, timer=timer, globals=dict(globals or {}))

    def _measure(self, number):
        before = get_num_threads()
        set_num_threads(self._num_threads)
        try:
            return self._timer.timeit(number)
        finally:
            set_num_threads(before)

    def _measurement(self, number, raw_times):
        return Measurement(number, raw_times, self._stmt, self._label, self._sub_label, self._description,
                           self._num_threads)

    def timeit(self, number=1000000):
        self._measure(max(number // 100, 2))  # warm up
        return self._measurement(number, [self._measure(number)])

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self):
        number = 1
        while True:  # the smallest power of 10 whose block takes at least 0.1 ms
            if self._measure(number) >= 1e-4 or number >= 10 ** 9:
                return number
            number *= 10

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        number = self._block_size()
        raw, total = [], 0.0
        while total < min_run_time or not raw:
            t = self._measure(number)
            raw.append(t)
            total += t
            if callback is not None:
                callback(number, t)
        return self._measurement(number, raw)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None):
        number = self._block_size()
        raw, total = [], 0.0
        while total < max_run_time:
            t = self._measure(number)
            raw.append(t)
            total += t
            if callback is not None:
                callback(number, t)
            if len(raw) > 3 and total >= min_run_time:
                m = self._measurement(number, raw)
                if m.iqr / m.median < threshold:
                    break
        return self._measurement(number, raw)
