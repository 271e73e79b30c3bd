"""Modules published scripts import while choosing a device or setting flags:
`import torch.backends.cudnn as cudnn`, torch.xpu, torch.types, torch.utils.model_zoo."""
import subprocess
import sys

import pytest

import kindle


def test_backend_flag_namespaces_import_as_modules():
    import kindle.backends.cudnn as cudnn
    import kindle.backends.mps as mps
    from kindle.backends import mkldnn

    assert cudnn is kindle.backends.cudnn and mps is kindle.backends.mps and mkldnn is kindle.backends.mkldnn
    before = cudnn.benchmark
    try:
        cudnn.benchmark = True
        assert kindle.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = before
    assert not mps.is_available() and not cudnn.is_available()


def test_as_torch_in_a_fresh_process():
    # What `import kindle as torch`-free scripts do once kindle stands in for torch.
    code = ("import kindle; kindle.install_as_torch()\n"
            "import torch, torch.backends.cudnn as cudnn, torch.xpu\n"
            "from torch.utils.model_zoo import load_url\n"
            "import torch.types\n"
            "cudnn.deterministic = True\n"
            "assert torch.backends.cudnn.deterministic and not torch.xpu.is_available()\n"
            "assert torch.xpu.device_count() == 0 and callable(load_url)\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_xpu_is_absent_with_clear_errors():
    assert kindle.xpu.is_available() is False and kindle.xpu.device_count() == 0
    kindle.xpu.manual_seed(0)  # seeding an absent device does nothing, as in torch
    with pytest.raises(RuntimeError, match="no XPU device"):
        kindle.xpu.current_device()


def test_types_aliases():
    import kindle.types as t

    assert t.Tensor is kindle.Tensor and t.Size is kindle.Size and t._dtype is kindle.dtype
    assert isinstance(3, t._Number) and not isinstance("3", t._Number)


def test_benchmark_timer():
    from kindle.utils import benchmark

    x = kindle.ones(64)
    threads = kindle.get_num_threads()
    t = benchmark.Timer("y = x + x", globals={"x": x}, label="add", num_threads=1)
    m = t.timeit(100)
    assert m.number_per_run == 100 and len(m.times) == 1 and 0 < m.mean < 0.01
    assert "add" in repr(m) and "1 thread" in repr(m)
    seen = []
    b = t.blocked_autorange(callback=lambda n, s: seen.append((n, s)), min_run_time=0.02)
    assert sum(b.raw_times) >= 0.02 and len(seen) == len(b.times) and b.median > 0 and b.iqr >= 0
    a = benchmark.Timer("sum(range(100))").adaptive_autorange(min_run_time=0.01, max_run_time=0.5)
    assert len(a.times) >= 1 and a.median > 0
    assert kindle.get_num_threads() == threads  # restored after every block
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        t.repeat()
    with pytest.raises(ValueError, match="language='python'"):
        benchmark.Timer("x", language="c++")
