"""The C++ front end reads PyTorch's own checkpoint files and writes ones torch.load reads.

PyTorch (the reference, when importable) writes a torch.save state dict, an optimizer's state dict
and a TorchScript archive of a model (what libtorch's torch::save writes); the C++ test
FrontendTorchArchive.PyTorchFiles (tests/cpp/test_frontend_torch_archive.cpp) reads them with
kindle::load_value / kindle::load(module) / InputArchive, writes what it read back as safetensors,
and writes an archive with CheckpointFormat::torch, which torch.load must read with weights_only.
"""
import os
import subprocess

import numpy as np
import pytest

import kindle
from test_cpp_roundtrip import _binary

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


class TensorList(torch.nn.Module):
    """What libtorch's torch::save(std::vector<Tensor>) writes: a scripted object whose attributes
    are "0", "1", ..."""

    def __init__(self, tensors):
        super().__init__()
        for i, t in enumerate(tensors):
            self.register_buffer(str(i), t)

    def forward(self, x):
        return x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(12, 3)
        self.conv = torch.nn.Conv2d(1, 3, 3)
        self.register_buffer("scale", torch.rand(3))

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1)) * self.scale


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    binary = _binary()
    if binary is None:
        pytest.skip("the C++ test binary (kindle_tests) is not built; set KINDLE_CPP_TEST_BINARY")
    folder = tmp_path_factory.mktemp("torch_archive")
    torch.manual_seed(0)
    net = Net()
    state = {"w": torch.randn(3, 4), "i": torch.arange(5), "h": torch.randn(2).half(),
             "b": torch.tensor([True, False]), "view": torch.randn(4, 4)[1:, ::2], "bf": torch.randn(3).bfloat16()}
    torch.save(state, folder / "state.pt")
    opt = torch.optim.Adam(net.parameters(), lr=0.1)
    net(torch.randn(2, 1, 4, 4)).sum().backward()
    opt.step()
    torch.save(opt.state_dict(), folder / "optim.pt")
    torch.jit.script(net).save(str(folder / "script.pt"))
    tensors = [torch.randn(3, 2), torch.arange(4), torch.rand(2).double()]
    torch.jit.script(TensorList(tensors)).save(str(folder / "tensors.pt"))
    proc = subprocess.run([binary, "--gtest_filter=FrontendTorchArchive.PyTorchFiles"], capture_output=True,
                          text=True, timeout=300, env={**os.environ,
                          "KINDLE_TORCH_ARCHIVE_DIR": str(folder)})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "SKIPPED" not in proc.stdout
    return folder, state, opt.state_dict(), net.state_dict(), tensors


def _same(got, want, where="top"):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, kindle.Tensor), where
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], where
        assert tuple(got.shape) == tuple(want.shape), where
        assert np.array_equal(got.float().numpy() if want.dtype == torch.bfloat16 else got.numpy(),
                              want.float().numpy() if want.dtype == torch.bfloat16 else want.numpy()), where
    elif isinstance(want, dict):
        assert list(got.keys()) == list(want.keys()), where
        for k in want:
            _same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{i}]")
    else:
        assert type(got) is type(want) and got == want, where


def test_cpp_reads_torch_save_state_dict(files):
    folder, state = files[:2]
    _same(kindle.load(folder / "state_read.safetensors"), state)


def test_cpp_reads_torch_optimizer_state(files):
    folder, opt_state = files[0], files[2]
    _same(kindle.load(folder / "optim_read.safetensors"), opt_state)


def test_cpp_loads_torchscript_module_archive(files):
    folder, net_state = files[0], files[3]
    _same(kindle.load(folder / "script_read.safetensors"), dict(net_state))


def test_cpp_loads_libtorch_tensor_list_archive(files):
    folder, tensors = files[0], files[4]
    _same(kindle.load(folder / "tensors_read.safetensors"), {str(i): t for i, t in enumerate(tensors)})


def test_torch_loads_cpp_archive(files):
    folder = files[0]
    want = {"weight": torch.arange(6.0).reshape(2, 3), "step": 3, "names": ["a", "b"],
            "half": torch.ones(2, dtype=torch.half)}
    got = torch.load(folder / "from_cpp.pt", weights_only=True)
    assert list(got) == list(want)
    for k in ("weight", "half"):
        assert got[k].dtype == want[k].dtype and torch.equal(got[k], want[k])
    assert got["step"] == 3 and got["names"] == ["a", "b"]
    # and Python's kindle.load reads the same file
    back = kindle.load(folder / "from_cpp.pt")
    assert back["step"] == 3 and back["names"] == ["a", "b"] and back["half"].dtype == kindle.float16
    assert np.array_equal(back["weight"].numpy(), want["weight"].numpy())
