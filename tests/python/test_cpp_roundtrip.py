"""C++ front end <-> Python round trip.

The C++ test FrontendRoundtrip.TrainSaveLoadResume (tests/cpp/test_frontend_roundtrip.cpp) builds
the models below with kindle::nn, trains them a few steps and saves weights, optimizer state, the
batch and its eval output with kindle::save. Here the same architectures, built with kindle.nn,
must: start from the same weights under the same seed, reproduce the C++ output from the C++
weights, continue the C++ optimizer for one step exactly as C++ did, and write byte-identical
checkpoints. The other way round, models trained here are evaluated by the C++ program.

The C++ test binary comes from the CMake build (scripts/test.sh builds it before the Python
suite); set KINDLE_CPP_TEST_BINARY to point at another one.
"""
import os
import subprocess

import pytest

import kindle
import kindle.nn as nn
import kindle.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CANDIDATES = ["build/release/tests/cpp/kindle_tests", "build/tests/cpp/kindle_tests",
              "build/asan/tests/cpp/kindle_tests"]


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc1 = nn.Linear(4 * 4 * 4, 16)
        self.ln = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 5)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc2(F.gelu(self.ln(self.fc1(h.flatten(1)))))


class SeqNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.lstm = nn.LSTM(6, 8, batch_first=True)
        self.fc = nn.Linear(8, 5)

    def forward(self, tokens):
        out, _ = self.lstm(self.emb(tokens))
        return self.fc(out[:, -1])


class AttnNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        return self.fc(self.enc(x).mean(1))


class MLPNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 5))

    def forward(self, x):
        return self.body(x)


# kind -> (model class, input maker, optimizer maker); as in the C++ test.
CASES = {
    "conv": (ConvNet, lambda: kindle.randn(6, 1, 8, 8), lambda p: kindle.optim.Adam(p, lr=0.01)),
    "seq": (SeqNet, lambda: kindle.randint(0, 10, (6, 7)),
            lambda p: kindle.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True)),
    "attn": (AttnNet, lambda: kindle.randn(6, 4, 8), lambda p: kindle.optim.AdamW(p, lr=0.01)),
    "mlp": (MLPNet, lambda: kindle.randn(6, 6), lambda p: kindle.optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True)),
}

# kind -> scheduler maker; as in FrontendRoundtrip.SchedulerState.
SCHEDULERS = {
    "step": lambda opt: kindle.optim.lr_scheduler.StepLR(opt, 3, 0.5),
    "cosine": lambda opt: kindle.optim.lr_scheduler.CosineAnnealingLR(opt, 5, 0.01),
}


def _binary():
    path = os.environ.get("KINDLE_CPP_TEST_BINARY")
    if path:
        return path
    for rel in CANDIDATES:
        p = os.path.join(ROOT, rel)
        if os.path.exists(p):
            return p
    return None


def _step(model, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


def _eval(model, x):
    model.eval()
    with kindle.no_grad():
        out = model(x)
    model.train()
    return out


def _assert_same_state(got, want):
    assert list(got.keys()) == list(want.keys())
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        assert kindle.equal(got[k], want[k]), k


@pytest.fixture(scope="module")
def roundtrip(tmp_path_factory):
    """Writes the Python-trained models, runs the C++ test once, returns (folder, Python outputs)."""
    binary = _binary()
    if binary is None:
        pytest.skip("the C++ test binary (kindle_tests) is not built; build with CMake (scripts/test.sh) or set "
                    "KINDLE_CPP_TEST_BINARY")
    folder = tmp_path_factory.mktemp("cpp_roundtrip")
    py_out = {}
    for kind, (cls, make_input, make_opt) in CASES.items():
        kindle.manual_seed(2)
        model = cls()
        x, y = make_input(), kindle.randint(0, 5, (6,))
        opt = make_opt(model.parameters())
        for _ in range(2):
            _step(model, opt, x, y)
        state = dict(model.state_dict())
        state["input"] = x
        kindle.save(state, str(folder / f"{kind}_python.safetensors"))
        py_out[kind] = _eval(model, x)
    for kind, make in SCHEDULERS.items():
        opt = kindle.optim.SGD([kindle.ones(1, requires_grad=True)], lr=0.1)
        sched = make(opt)
        for _ in range(6):
            opt.step()
            sched.step()
        kindle.save(sched.state_dict(), str(folder / f"sched_{kind}_python.safetensors"))
    env = dict(os.environ, KINDLE_ROUNDTRIP_DIR=str(folder))
    proc = subprocess.run([binary, "--gtest_filter=FrontendRoundtrip.*"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return folder, py_out


@pytest.mark.parametrize("kind", list(CASES))
def test_same_seed_same_initial_weights(roundtrip, kind):
    folder, _ = roundtrip
    kindle.manual_seed(0)
    model = CASES[kind][0]()
    _assert_same_state(model.state_dict(), kindle.load(str(folder / f"{kind}_init.safetensors")))


@pytest.mark.parametrize("kind", list(CASES))
def test_cpp_trained_model_gives_identical_outputs(roundtrip, kind):
    folder, _ = roundtrip
    data = kindle.load(str(folder / f"{kind}_data.safetensors"))
    model = CASES[kind][0]()
    model.load_state_dict(kindle.load(str(folder / f"{kind}_trained.safetensors")))
    assert kindle.equal(_eval(model, data["x"]), data["out"])


@pytest.mark.parametrize("kind", list(CASES))
def test_python_continues_cpp_optimizer_exactly(roundtrip, kind):
    folder, _ = roundtrip
    cls, _, make_opt = CASES[kind]
    data = kindle.load(str(folder / f"{kind}_data.safetensors"))
    model = cls()
    model.load_state_dict(kindle.load(str(folder / f"{kind}_trained.safetensors")))
    opt = make_opt(model.parameters())
    opt.load_state_dict(kindle.load(str(folder / f"{kind}_opt.safetensors")))
    _step(model, opt, data["x"], data["y"])
    _assert_same_state(model.state_dict(), kindle.load(str(folder / f"{kind}_after.safetensors")))


@pytest.mark.parametrize("kind", list(CASES))
def test_cpp_evaluates_python_model_identically(roundtrip, kind):
    folder, py_out = roundtrip
    assert kindle.equal(kindle.load(str(folder / f"{kind}_cpp_eval.safetensors"))["out"], py_out[kind])


@pytest.mark.parametrize("kind", ["conv", "attn"])
def test_checkpoints_are_byte_identical(roundtrip, kind, tmp_path):
    folder, _ = roundtrip
    model = CASES[kind][0]()
    src = folder / f"{kind}_trained.safetensors"
    model.load_state_dict(kindle.load(str(src)))
    kindle.save(model.state_dict(), str(tmp_path / "again.safetensors"))
    assert (tmp_path / "again.safetensors").read_bytes() == src.read_bytes()


def test_cpp_checkpoint_loads_into_torch(roundtrip):
    """The C++ checkpoint has torch's names and layout: torch.nn reproduces the C++ output."""
    torch = pytest.importorskip("torch")
    folder, _ = roundtrip
    tnn = torch.nn

    class TorchConvNet(tnn.Module):
        def __init__(self):
            super().__init__()
            self.conv = tnn.Conv2d(1, 4, 3, padding=1)
            self.bn = tnn.BatchNorm2d(4)
            self.fc1 = tnn.Linear(64, 16)
            self.ln = tnn.LayerNorm(16)
            self.fc2 = tnn.Linear(16, 5)

        def forward(self, x):
            h = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
            return self.fc2(torch.nn.functional.gelu(self.ln(self.fc1(h.flatten(1)))))

    state = kindle.load(str(folder / "conv_trained.safetensors"))
    data = kindle.load(str(folder / "conv_data.safetensors"))
    model = TorchConvNet()
    model.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in state.items()})
    model.eval()
    with torch.no_grad():
        out = model(torch.from_numpy(data["x"].numpy().copy()))
    assert torch.allclose(out, torch.from_numpy(data["out"].numpy().copy()), rtol=1e-4, atol=1e-5)


def _lrs_after(make, epochs, more):
    """The learning rates of `more` epochs after `epochs`, from a scheduler run from scratch."""
    opt = kindle.optim.SGD([kindle.ones(1, requires_grad=True)], lr=0.1)
    sched = make(opt)
    out = []
    for e in range(epochs + more):
        opt.step()
        sched.step()
        if e >= epochs:
            out.append(sched.get_last_lr()[0])
    return sched, out


@pytest.mark.parametrize("kind", list(SCHEDULERS))
def test_python_resumes_cpp_scheduler(roundtrip, kind):
    folder, _ = roundtrip
    make = SCHEDULERS[kind]
    state = kindle.load(str(folder / f"sched_{kind}.safetensors"))
    reference, want = _lrs_after(make, 4, 5)
    assert state == make(kindle.optim.SGD([kindle.ones(1, requires_grad=True)], lr=0.1)).state_dict() | {
        "base_lrs": [0.1], "last_epoch": 4, "_step_count": 5, "_last_lr": state["_last_lr"]}
    opt = kindle.optim.SGD([kindle.ones(1, requires_grad=True)], lr=state["_last_lr"][0])
    sched = make(opt)
    sched.load_state_dict(state)
    got = []
    for _ in range(5):
        opt.step()
        sched.step()
        got.append(sched.get_last_lr()[0])
    assert got == pytest.approx(want, rel=1e-15, abs=0)


@pytest.mark.parametrize("kind", list(SCHEDULERS))
def test_cpp_resumes_python_scheduler(roundtrip, kind):
    folder, _ = roundtrip
    _, want = _lrs_after(SCHEDULERS[kind], 6, 3)
    got = kindle.load(str(folder / f"sched_{kind}_cpp_lrs.safetensors"))["lrs"].tolist()
    assert got == pytest.approx(want, rel=1e-15, abs=0)
