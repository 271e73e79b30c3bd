"""Differentiable collectives (torch.distributed.nn.functional): out-of-place, and backward runs the
adjoint collective, so a loss computed from gathered features (contrastive learning, SyncBatchNorm)
gets the gradient of the sum of every rank's loss."""
import kindle
import kindle.distributed as dist
from kindle.autograd import Function

__all__ = ["all_reduce", "all_gather", "broadcast"]


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.group, ctx.op = group, op
        out = tensor.clone()
        dist.all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        if ctx.op not in (dist.ReduceOp.SUM, dist.ReduceOp.AVG):
            raise RuntimeError(f"distributed.nn.all_reduce: no gradient for {ctx.op} (only SUM and AVG)")
        g = grad.contiguous().clone()
        dist.all_reduce(g, op=ctx.op, group=ctx.group)
        return None, None, g


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        ctx.rank = dist.get_rank(group)
        outs = [kindle.empty_like(tensor) for _ in range(dist.get_world_size(group))]
        dist.all_gather(outs, tensor.contiguous(), group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        # Each rank's input went to every rank: its gradient is the sum of what every rank sends back.
        stacked = kindle.stack([g if g is not None else kindle.zeros_like(grads[0]) for g in grads])
        dist.all_reduce(stacked, group=ctx.group)
        return None, stacked[ctx.rank]


class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src, ctx.group = src, group
        out = tensor.clone()
        dist.broadcast(out, src=src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        g = grad.contiguous().clone()
        dist.reduce(g, dst=ctx.src, group=ctx.group)
        if dist.get_rank() != ctx.src:
            g.zero_()
        return None, None, g


def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None):
    return _AllReduce.apply(op, group, tensor)


def all_gather(tensor, group=None):
    """A tuple with every rank's tensor (differentiable)."""
    return _AllGather.apply(group, tensor)


def broadcast(tensor, src, group=None):
    return _Broadcast.apply(src, group, tensor)
