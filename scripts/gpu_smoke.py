"""The CUDA backend's first steps, one line each (scripts/gpu_check.sh runs it before the tests, and
again under cuda-gdb if it crashes, so that a crash comes back with its native stack)."""
import kindle


def step(what, f):
    print("..", what, flush=True)
    return f()


x = step("host to device", lambda: kindle.ones(3).cuda())
y = step("sqrt", lambda: kindle.sqrt(x))
step("device to host", lambda: print(y.cpu(), flush=True))
step("repr", lambda: print(y, flush=True))
m = step("Linear.cuda", lambda: kindle.nn.Linear(4, 2).cuda())
out = step("forward", lambda: m(kindle.ones(3, 4).cuda()))
loss = step("loss", lambda: ((out - 1) ** 2).mean())
step("backward", lambda: loss.backward())
opt = kindle.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
step("SGD step", lambda: opt.step())
step("grad to host", lambda: print(m.weight.grad.cpu(), flush=True))
print("smoke ok", flush=True)
