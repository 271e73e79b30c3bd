"""DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks.default_hooks). A hook gets
(state, bucket) and returns a future of the bucket's reduced gradients; state is the process group
(None: the default group)."""
import kindle
import kindle.distributed as dist

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]


def _allreduce_fut(group, tensor):
    g = group if group is not None else dist.group.WORLD
    tensor.div_(g.size())
    return dist.all_reduce(tensor, group=g, async_op=True).get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """What DDP does without a hook: divide by the world size, all-reduce."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    g = process_group if process_group is not None else dist.group.WORLD
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(g.size())
    fut = dist.all_reduce(compressed, group=g, async_op=True).get_future()

    def decompress(f):
        buffer.copy_(f.value()[0])
        return buffer

    return fut.then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Gradients travel as float16 (half the bytes), averaged, and come back in the bucket's dtype."""
    return _compress_hook(kindle.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    return _compress_hook(kindle.bfloat16, process_group, bucket)
