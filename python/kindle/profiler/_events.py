"""Profiler events and their aggregation: self time, key_averages' table, Chrome traces."""
import json
import math
import os
from collections import OrderedDict

__all__ = ["FunctionEvent", "EventList", "FunctionEventAvg"]

_KINDS = ("op", "backward", "user", "module")


def _numel(shape):
    return math.prod(shape) if shape else 1


def _flops(name, shapes, out):
    """Floating-point operations of one op (profile(with_flops=True)), by torch's formulas for the
    ops torch counts. Kindle records no nested ops (torch's aten::linear/aten::matmul show their
    aten::addmm/aten::mm children), so linear and matmul are counted where they ran: the totals
    agree with torch's."""
    try:
        if name in ("aten::mm", "aten::matmul", "aten::bmm", "aten::linear") and out:
            k = shapes[0][-1]  # the contracted size; the output holds every (batch, row, column)
            return 2 * _numel(out) * k
        if name in ("aten::addmm", "aten::baddbmm", "aten::addbmm"):
            return 2 * _numel(shapes[1]) * shapes[2][-1]
        if name in ("aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution") and out:
            return 2 * _numel(out) * _numel(shapes[1][1:])  # weight: [out, in / groups, *kernel]
        if name in ("aten::mul", "aten::add"):
            return _numel(shapes[0])
    except (IndexError, TypeError):
        pass
    return 0


class FunctionEvent:
    """One recorded event (times in microseconds, as torch's)."""

    def __init__(self, name, kind, start_ns, end_ns, thread, shapes, dtypes, alloc, freed, stack, output_shape="",
                 with_flops=False):
        self.name = self.key = name
        self.kind = _KINDS[kind]
        self.time_range_start_ns, self.time_range_end_ns = start_ns, end_ns
        self.thread = thread
        self.input_shapes = json.loads(shapes) if shapes else []
        self.input_dtypes = dtypes
        self.cpu_memory_usage = alloc - freed
        self.stack = stack.split("\n") if stack else []
        self.cpu_children = []
        self.cpu_parent = None
        self.count = 1
        self.device_type = "CPU"
        self.is_async = False
        out = json.loads(output_shape) if output_shape else None
        self.flops = _flops(name, self.input_shapes, out) if with_flops and self.kind == "op" else 0

    @property
    def cpu_time_total(self):
        return (self.time_range_end_ns - self.time_range_start_ns) / 1e3

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def cpu_time(self):
        return self.cpu_time_total

    def __repr__(self):
        return (f"<FunctionEvent name={self.name} cpu_time={self.cpu_time_total:.3f}us "
                f"self_cpu_time={self.self_cpu_time_total:.3f}us thread={self.thread} "
                f"input_shapes={self.input_shapes}>")


def _link_children(events):
    """Parent/child links from nesting on each thread (events are in start order); modules'
    ranges (with_modules) stay outside the op tree."""
    stacks = {}
    for e in events:
        if e.kind == "module":
            continue
        st = stacks.setdefault(e.thread, [])
        while st and st[-1].time_range_end_ns <= e.time_range_start_ns:
            st.pop()
        if st and e.time_range_end_ns <= st[-1].time_range_end_ns:
            e.cpu_parent = st[-1]
            st[-1].cpu_children.append(e)
        st.append(e)


class FunctionEventAvg:
    """Events of one key (name, and input shapes when grouped by them) summed up."""

    def __init__(self, key, input_shapes=None, stack=None):
        self.key = key
        self.input_shapes = input_shapes
        self.stack = stack or []
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.flops = 0

    def add(self, e):
        self.count += e.count  # 1 for an event; an average's count when averages are summed (total_average)
        self.flops += e.flops
        self.cpu_time_total += e.cpu_time_total
        self.self_cpu_time_total += e.self_cpu_time_total
        self.cpu_memory_usage += e.cpu_memory_usage
        self.self_cpu_memory_usage += e.self_cpu_memory_usage
        return self

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time:.3f}us count={self.count} input_shapes={self.input_shapes}>")


def _fmt_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _fmt_mem(b):
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(b) >= size:
            return f"{b / size:.2f} {unit}"
    return f"{b} b"


_SORT_KEYS = {"cpu_time", "cpu_time_total", "self_cpu_time_total", "count", "cpu_memory_usage",
              "self_cpu_memory_usage"}


class EventList(list):
    """The events of a profile (torch.autograd.profiler_util.EventList's interface)."""

    def __init__(self, events=(), profile_memory=False, record_shapes=False):
        super().__init__(events)
        self._profile_memory = profile_memory
        self._record_shapes = record_shapes

    @property
    def self_cpu_time_total(self):
        # module ranges (with_modules) are outside the op tree: their time is their ops' time
        return sum(e.self_cpu_time_total for e in self if getattr(e, "kind", None) != "module")

    def total_average(self):
        """Every event summed into one FunctionEventAvg whose key is "Total" (torch's)."""
        total = FunctionEventAvg("Total")
        for e in self:
            if getattr(e, "kind", None) != "module":
                total.add(e)
        return total

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        groups = OrderedDict()
        for e in self:
            if e.kind == "module":  # in traces only, as torch's python-function events
                continue
            key = [e.key]
            if group_by_input_shape:
                key.append(str(e.input_shapes))
            if group_by_stack_n:
                key.append(tuple(e.stack[-group_by_stack_n:]))
            k = tuple(key)
            if k not in groups:
                groups[k] = FunctionEventAvg(e.key, e.input_shapes if group_by_input_shape else None,
                                             e.stack[-group_by_stack_n:] if group_by_stack_n else None)
            groups[k].add(e)
        out = EventList(groups.values(), self._profile_memory, self._record_shapes)
        out._grouped_shapes = group_by_input_shape
        return out

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        rows = list(self)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS and not sort_by.startswith("cuda") and not sort_by.startswith("device"):
                raise AttributeError(f"'FunctionEventAvg' object has no attribute '{sort_by}'")
            if sort_by in _SORT_KEYS:
                rows.sort(key=lambda r: getattr(r, sort_by), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        total_self = sum(getattr(r, "self_cpu_time_total", 0) for r in self) or 1.0
        shapes = getattr(self, "_grouped_shapes", False)
        name_w = min(max([len("Name")] + [len(r.key) for r in rows]) + 2, max_name_column_width)
        cols = [("Name", name_w), ("Self CPU %", 12), ("Self CPU", 12), ("CPU total %", 12), ("CPU total", 12),
                ("CPU time avg", 13)]
        if self._profile_memory:
            cols += [("CPU Mem", 12), ("Self CPU Mem", 14)]
        cols.append(("# of Calls", 12))
        raw_flops = [r.flops for r in self if getattr(r, "flops", 0) > 0]
        if raw_flops:  # torch's column: one unit for the whole table, from the smallest count
            units = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
            level = int(max(0.0, min(math.log10(min(raw_flops)) / 3, len(units) - 1.0)))
            flops_scale = 10.0 ** (-3 * level)
            cols.append((f"Total {units[level]}", 12))
        if shapes:
            cols.append(("Input Shapes", max_shapes_column_width))
        sep = "-" * (sum(w for _, w in cols) + 2 * (len(cols) - 1))
        def cell(i, v, w):
            if i == 0:  # names are cut to the column, with an ellipsis
                return (v[:w - 4] + "..." if len(v) >= w else v).ljust(w)
            return v.rjust(w)

        def fmt_row(vals):
            return "  ".join(cell(i, v, w) for i, (v, (_, w)) in enumerate(zip(vals, cols)))
        lines = [sep, fmt_row([c for c, _ in cols]), sep]
        for r in rows:
            vals = [r.key, f"{100 * r.self_cpu_time_total / total_self:.2f}%", _fmt_time(r.self_cpu_time_total),
                    f"{100 * r.cpu_time_total / total_self:.2f}%", _fmt_time(r.cpu_time_total), _fmt_time(r.cpu_time)]
            if self._profile_memory:
                vals += [_fmt_mem(r.cpu_memory_usage), _fmt_mem(r.self_cpu_memory_usage)]
            vals.append(str(r.count))
            if raw_flops:
                vals.append(f"{r.flops * flops_scale:8.3f}" if r.flops > 0 else "--")
            if shapes:
                vals.append(str(r.input_shapes))
            lines.append(fmt_row(vals))
        lines += [sep, f"Self CPU time total: {_fmt_time(total_self)}", ""]
        return "\n".join(lines)

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path):
        """Writes the events as Chrome's trace format (chrome://tracing, Perfetto)."""
        pid = os.getpid()
        trace = []
        for i, e in enumerate(self):
            ev = {"ph": "X", "cat": {"op": "cpu_op", "backward": "cpu_op", "user": "user_annotation",
                                     "module": "python_function"}[e.kind],
                  "name": e.name, "pid": pid, "tid": e.thread, "ts": e.time_range_start_ns / 1e3,
                  "dur": (e.time_range_end_ns - e.time_range_start_ns) / 1e3,
                  "args": {"External id": i + 1}}
            if e.input_shapes:
                ev["args"]["Input Dims"] = e.input_shapes
                ev["args"]["Input type"] = [t.strip() for t in e.input_dtypes.strip("[]").split(",")]
            if self._profile_memory:
                ev["args"]["CPU Mem"] = e.cpu_memory_usage
            if e.flops:
                ev["args"]["flops"] = e.flops
            trace.append(ev)
        trace.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "kindle"}})
        with open(path, "w") as f:
            json.dump({"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": trace}, f)
        return path

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Flame-graph input: one line per stack, frames joined by ';', then the metric in us."""
        if metric not in ("self_cpu_time_total", "self_cuda_time_total", "self_device_time_total"):
            raise ValueError(f"metric should be one of self_cpu_time_total, self_cuda_time_total, got {metric}")
        with open(path, "w") as f:
            for e in self:
                if not e.stack or metric != "self_cpu_time_total":
                    continue
                frames = [s.replace(";", ",") for s in e.stack] + [e.name]
                f.write(";".join(frames) + f" {int(e.self_cpu_time_total)}\n")
