"""DistributedDataParallel: one replica of the model per process; gradients are averaged across
the process group during backward by Kindle's C++ reducer (buckets of about bucket_cap_mb,
all-reduced asynchronously as soon as autograd has produced every gradient of a bucket, so
communication overlaps the rest of backward)."""
import contextlib

import kindle

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 init_sync=True, process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None, mixed_precision=None,
                 device_mesh=None):
        super().__init__()
        import kindle.distributed as dist
        from kindle._C import _distributed as _d
        if device_ids and any(str(d) not in ("cpu", "-1") for d in device_ids):
            raise ValueError(f"DistributedDataParallel: device_ids {list(device_ids)} name GPUs, but Kindle was "
                             "built without CUDA; leave device_ids unset for a CPU module")
        if process_group is None:
            if not dist.is_initialized():
                raise ValueError("Default process group has not been initialized, please make sure to call "
                                 "init_process_group.")
            process_group = dist.group.WORLD
        if mixed_precision is not None or device_mesh is not None:
            raise NotImplementedError("DistributedDataParallel: mixed_precision and device_mesh are not in Kindle yet")
        self.module = module
        self.process_group = process_group
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        named = [(n, p) for n, p in module.named_parameters() if n not in ignore]
        if not any(p.requires_grad for _, p in named):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._params = [p for _, p in named if p.requires_grad]
        self._param_names = [n for n, p in named if p.requires_grad]
        self._buffers_to_sync = [b for n, b in module.named_buffers() if n not in ignore]
        self._group_size = process_group.size()
        if init_sync and self._group_size > 1:
            # Every replica starts from rank 0's weights and buffers.
            with kindle.no_grad():
                _d.broadcast_coalesced(process_group, [p.data for _, p in named] + [b for b in self._buffers_to_sync],
                                       0)
        self.reducer = _d.Reducer(self._params, process_group, self.bucket_bytes_cap / (1024 * 1024),
                                  bool(find_unused_parameters or static_graph), bool(gradient_as_bucket_view))

    def forward(self, *inputs, **kwargs):
        self.reducer.prepare_for_forward()
        if getattr(self, "_join_throw", None) is not None and kindle.is_grad_enabled():
            self._join_forward_check()
        if self.broadcast_buffers and self._buffers_to_sync and self._group_size > 1 and kindle.is_grad_enabled():
            from kindle._C import _distributed as _d
            with kindle.no_grad():
                _d.broadcast_coalesced(self.process_group, list(self._buffers_to_sync), 0)
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Gradients accumulate locally inside; the first backward after it averages them all."""
        old = self.reducer.sync()
        self.reducer.set_sync(False)
        try:
            yield
        finally:
            self.reducer.set_sync(old)

    def _get_ddp_logging_data(self):
        return {"bucket_cap_bytes": self.bucket_bytes_cap, "world_size": self._group_size,
                "find_unused_parameters": self.find_unused_parameters, "static_graph": self.static_graph,
                "gradient_as_bucket_view": self.gradient_as_bucket_view,
                "num_buckets": len(self.reducer.bucket_indices())}

    def _set_static_graph(self):
        self.static_graph = True

    def register_comm_hook(self, state, hook):
        """hook(state, bucket) -> Future of the bucket's reduced gradients replaces DDP's averaging
        (see kindle.distributed.algorithms.ddp_comm_hooks.default_hooks). Called once per bucket
        as it fills during backward; the futures are waited for at the end of backward."""
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable, got {type(hook).__name__}")
        buckets = self.reducer.bucket_indices()
        params = self._params

        def call(index, tensor):
            fut = hook(state, GradBucket(index, tensor, [params[i] for i in buckets[index]],
                                         index == len(buckets) - 1))
            if not hasattr(fut, "wait"):
                raise TypeError("register_comm_hook: the hook must return a Future (e.g. "
                                "dist.all_reduce(..., async_op=True).get_future())")
            return fut.wait

        self.reducer.set_comm_hook(call)

    @contextlib.contextmanager
    def join(self, divide_by_initial_world_size=True, enable=True, throw_on_early_termination=False):
        """Uneven inputs: a rank whose data runs out leaves the block and then shadows the others'
        collectives (contributing zero gradients) until every rank has left it. Gradients stay
        divided by the full world size. throw_on_early_termination: every rank raises as soon as
        one runs out instead."""
        if not enable:
            yield
            return
        if not divide_by_initial_world_size:
            raise NotImplementedError("DistributedDataParallel.join: divide_by_initial_world_size=False is not in "
                                      "Kindle yet")
        import kindle.distributed as dist
        from kindle._C import _distributed as _d
        self._join_throw = bool(throw_on_early_termination)
        try:
            yield
        except BaseException:
            self._join_throw = None
            raise
        throw, self._join_throw = self._join_throw, None
        while True:
            flag = kindle.zeros(1)
            dist.all_reduce(flag, group=self.process_group)
            if flag.item() == 0:
                break
            if throw:
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
            if self.broadcast_buffers and self._buffers_to_sync and self._group_size > 1:
                with kindle.no_grad():
                    _d.broadcast_coalesced(self.process_group, list(self._buffers_to_sync), 0)
            self.reducer.join_step()

    def _join_forward_check(self):
        import kindle.distributed as dist
        flag = kindle.ones(1)
        dist.all_reduce(flag, group=self.process_group)
        if self._join_throw and int(flag.item()) < self._group_size:
            raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module, params_and_buffers_to_ignore):
        module._ddp_params_and_buffers_to_ignore = list(params_and_buffers_to_ignore)


class GradBucket:
    """What a communication hook gets: one bucket's flat gradients and its parameters."""

    def __init__(self, index, buffer, parameters, is_last):
        self._index, self._buffer, self._parameters, self._is_last = index, buffer, parameters, is_last

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def set_buffer(self, tensor):
        self._buffer.copy_(tensor)

    def parameters(self):
        return list(self._parameters)

    def gradients(self):
        out, offset = [], 0
        for p in self._parameters:
            out.append(self._buffer[offset:offset + p.numel()].view(p.shape))
            offset += p.numel()
        return out

    def is_last(self):
        return self._is_last
