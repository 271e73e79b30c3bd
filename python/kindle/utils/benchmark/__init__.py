"""kindle.utils.benchmark: torch.utils.benchmark's Timer and Measurement for Python statements.

Timer compiles `stmt` and `setup` once (with `globals`), runs setup, and times `stmt` in blocks
with the thread count set to `num_threads` (restored after). timeit(number) is one block of
`number` runs; blocked_autorange grows the block until one block takes at least 0.1 ms, then
repeats blocks until `min_run_time` has passed; adaptive_autorange stops once the IQR/median is
below `threshold`. Times are per run, in seconds. (Only language="python": Kindle has no C++
statement timer.) Compare(measurements) prints them as torch's comparison table: one table per
label, a row per sub_label (or statement) and thread count, a column per description.
"""
import collections
import math
import statistics
import textwrap
import timeit as _timeit

from ... import get_num_threads, set_num_threads

__all__ = ["Timer", "Measurement", "Compare", "Colorize"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns
_IQR_WARN_THRESHOLD = 0.1


class Measurement:
    """The per-run times of a statement's blocks, with their order statistics. env, setup and
    global_setup describe the task as torch's TaskSpec does (Compare and merge group by them)."""

    def __init__(self, number_per_run, raw_times, stmt="", label=None, sub_label=None, description=None,
                 num_threads=1, env=None, setup="pass", global_setup="", metadata=None):
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.stmt, self.label, self.sub_label, self.description = stmt, label, sub_label, description
        self.num_threads = num_threads
        # torch's Measurement.env answers the task's env (None when the Timer was given none)
        self.env, self.setup, self.global_setup = env, setup, global_setup
        self.metadata = metadata

    def _task(self):
        return (self.stmt, self.setup, self.global_setup, self.label, self.sub_label, self.description, self.env,
                self.num_threads)

    @property
    def as_row_name(self):
        """The row Compare shows this in: the sub_label, else the statement."""
        return self.sub_label or self.stmt or "[Unknown]"

    @property
    def significant_figures(self):
        """How many digits of the median the spread of the middle half of the times supports
        (1 to 4), torch's estimate: Compare.trim_significant_figures() uses it."""
        ts = sorted(self.times)
        n = len(ts)
        middle = ts[n // 4:math.ceil(3 * n / 4)]
        std = statistics.pstdev(middle) if middle else 0.0
        confidence_interval = max(1.645 * std / math.sqrt(len(middle) or 1), _MIN_CONFIDENCE_INTERVAL)
        relative_ci = math.log10(self.median / confidence_interval) if self.median > 0 else 0.0
        return min(max(math.floor(relative_ci), 1), _MAX_SIGNIFICANT_FIGURES)

    def meets_confidence(self, threshold=_IQR_WARN_THRESHOLD):
        return self.iqr / self.median < threshold

    @staticmethod
    def merge(measurements):
        """Replicates of one task (same statement, setup, labels, env and threads) merged into one
        Measurement of all their times, at number_per_run=1 (metadata is not kept), as torch's."""
        groups = collections.OrderedDict()
        for m in measurements:
            groups.setdefault(m._task(), []).append(m)
        out = []
        for group in groups.values():
            first = group[0]
            out.append(Measurement(1, [t for m in group for t in m.times], first.stmt, first.label, first.sub_label,
                                   first.description, first.num_threads, first.env, first.setup,
                                   first.global_setup))
        return out

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
        return not self.meets_confidence(_IQR_WARN_THRESHOLD) if self.median > 0 else False

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
        self._env, self._setup, self._global_setup = env, textwrap.dedent(setup), textwrap.dedent(global_setup)
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
                           self._num_threads, self._env, self._setup, self._global_setup)

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


from ._compare import Colorize, Compare  # noqa: E402  (it refers back to Measurement)
