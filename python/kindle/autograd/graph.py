"""The autograd graph from Python (torch.autograd.graph): its node type, gradient edges, hooks on
the tensors saved for backward, and hooks over several tensors' gradients."""
import contextlib
import threading
from typing import NamedTuple, Optional

from .. import _C

Node = _C.Node

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "register_multi_grad_hook"]


class GradientEdge(NamedTuple):
    """Where a gradient flows in the graph: into output `output_nr` of `node`. autograd.grad takes
    one wherever it takes a tensor, as an output or an input."""
    node: Node
    output_nr: int
    ownership_token: Optional[Node] = None


def get_gradient_edge(tensor):
    """The edge along which `tensor`'s gradient flows: `autograd.grad(loss, get_gradient_edge(x))`
    equals `autograd.grad(loss, x)`, and still works once `x` itself is gone."""
    node, output_nr = _C._gradient_edge(tensor)
    return GradientEdge(node, output_nr)


def increment_version(tensor):
    """Marks `tensor` as modified in place (for writes made outside Kindle's ops, through
    data_ptr or NumPy): backward then refuses stale saved values, and cached derived data is
    recomputed. A list or tuple of tensors is accepted, as torch's."""
    for t in (tensor if isinstance(tensor, (list, tuple)) else (tensor,)):
        _C._increment_version(t)


class saved_tensors_hooks:
    """Within this context every tensor saved for backward is handed to `pack_hook`, and only what
    it returns is kept; backward gets the tensor back from `unpack_hook(packed)`, which must
    return a tensor equal in value to the one packed. Both run with grad mode off. The pack hook
    must not modify its input in place. Hooks nest: the innermost pair applies."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args):
        _C._pop_saved_tensors_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU (pinned with pin_memory=True) and copied back to their
    device in backward. For CPU tensors this keeps them as they are."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            if tensor.device.type == "cpu":
                return tensor.device, tensor
            if not pin_memory:
                return tensor.device, tensor.cpu()
            packed = _C.empty(tensor.size(), dtype=tensor.dtype, layout=tensor.layout, pin_memory=True)
            packed.copy_(tensor)
            return tensor.device, packed

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Within this context installing saved-tensor hooks raises RuntimeError(error_message) (for
    features that are not compatible with them). Raises the same if hooks are installed now."""
    prev = _C._saved_tensors_hooks_set_disabled(error_message)
    try:
        yield
    finally:
        _C._saved_tensors_hooks_set_disabled(prev)


def _grad_fn_or_accumulator(t):
    if isinstance(t, GradientEdge):
        return t.node
    return _C._gradient_edge(t)[0]


_multi_handle_class = None


def _MultiHandle(handles):
    """A RemovableHandle over several hooks (made on first use: kindle.utils imports autograd)."""
    global _multi_handle_class
    if _multi_handle_class is None:
        from ..utils.hooks import RemovableHandle

        class _MultiHandle(RemovableHandle):
            def __init__(self, handles):
                self.handles = handles

            def remove(self):
                for h in self.handles:
                    h.remove()

            def __getstate__(self):
                return self.handles

            def __setstate__(self, state):
                self.handles = state

        _multi_handle_class = _MultiHandle
    return _multi_handle_class(handles)


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Calls `fn` once per backward pass over several tensors' gradients.

    mode="all": once every gradient among `tensors` that this backward computes is known, with a
    list of them (None for the tensors it does not reach). mode="any": on the first of them, with
    that gradient. The hook should not modify its arguments. Returns a handle whose remove()
    removes it."""
    modes = ("all", "any")
    if mode not in modes:
        raise ValueError(f"Expects mode to be one of {modes} but got {mode}")
    lock = threading.Lock()
    tensors = list(tensors)
    if mode == "all":
        count, buffer, expected = {}, {}, {}
        nodes = [_grad_fn_or_accumulator(t) for t in tensors]

        def flush(task):
            # The end of the pass, for tensors the engine reached without a gradient for them.
            with lock:
                grads = buffer.pop(task, None)
                count.pop(task, None)
                expected.pop(task, None)
            if grads is not None:
                fn(grads)

        def inner(idx):
            def hook(grad):
                task = _C._current_graph_task_id()
                first = False
                with lock:
                    if task not in count:
                        first = True
                        count[task] = 0
                        buffer[task] = [None] * len(tensors)
                        expected[task] = sum(map(_C._will_engine_execute_node, nodes))
                    buffer[task][idx] = grad
                    count[task] += 1
                    grads = None
                    if count[task] >= expected[task]:
                        grads = buffer.pop(task)
                        del count[task], expected[task]
                if grads is not None:
                    fn(grads)
                elif first:
                    _C._queue_callback(lambda: flush(task))
            return hook

        handles = tuple(t.register_hook(inner(i)) for i, t in enumerate(tensors))
    else:
        ran = set()

        def hook(grad):
            task = _C._current_graph_task_id()
            with lock:
                if task in ran:
                    return
                ran.add(task)
            _C._queue_callback(lambda: ran.discard(task))
            fn(grad)

        handles = tuple(t.register_hook(hook) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)
