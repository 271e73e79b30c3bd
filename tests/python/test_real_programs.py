"""Unmodified PyTorch programs run on Kindle through `python -m kindle.run`.

tests/python/real_programs/ holds ordinary PyTorch scripts (a small GPT training loop, a
torchvision-style ResNet file, a DCGAN, a word-level LSTM language model, a script that picks
its device, a Transformer-encoder classifier with activation checkpointing). They import
torch, never kindle. Each accepts `--save-init FILE` (write the freshly initialised weights
and exit) and `--init FILE` (start from those weights), and draws its data without random
numbers, so that two runs from the same weights print the same numbers.

Where PyTorch is installed, the initial weights come from PyTorch, each program runs under
PyTorch and under Kindle, and every printed line must agree: the text exactly, integers
exactly, and other numbers to a relative tolerance (plus one unit of the last printed digit).
Without PyTorch, each program still runs under Kindle (from weights Kindle saved) and must exit
cleanly and print the lines it is expected to print."""
import importlib.machinery
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field

import pytest

import kindle

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "real_programs")
# The subprocesses import the same kindle as this process (source tree or installed).
KINDLE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(kindle.__file__)))
# Look for PyTorch on sys.path itself: in this process `torch` may already be Kindle's alias.
# KINDLE_TEST_WITHOUT_TORCH=1 runs these tests as on a machine without PyTorch.
HAVE_TORCH = (importlib.machinery.PathFinder.find_spec("torch") is not None
              and not os.environ.get("KINDLE_TEST_WITHOUT_TORCH"))
TIMEOUT = 600


@dataclass
class Program:
    file: str
    args: list = field(default_factory=list)  # passed to every run, PyTorch's and Kindle's
    # (extra arguments of a Kindle run, extra arguments of the PyTorch run it is compared with)
    variants: list = field(default_factory=lambda: [([], [])])
    expect: list = field(default_factory=list)  # regular expressions, each must match a line
    rtol: float = 1e-4
    atol: float = 0.0  # for numbers that are differences of near-equal terms (a mean near zero)
    # lines only the Kindle run prints (for arguments PyTorch's reference run did not get)
    kindle_only: list = field(default_factory=list)


PROGRAM_LIST = [
    Program("gpt_train.py",
            # Kindle also runs it with the explicit masked attention and through torch.compile,
            # compared with PyTorch's eager run (its inductor compile would take minutes here).
            variants=[([], []), (["--no-flash", "--compile"], ["--no-flash"])],
            kindle_only=[r"^compiling the model"],
            expect=[r"^vocab size: 25$",
                    r"^num decayed parameter tensors: 10, with 101,952 parameters$",
                    r"^using fused AdamW: False$",
                    r"^step 0: train loss \d+\.\d+, val loss \d+\.\d+$",
                    r"^iter 30: loss \d+\.\d+, grad norm \d+\.\d+, lr 3\.000000e-04$",
                    r"^resumed from iter 30 with best val loss \d+\.\d+$",
                    r"^optimizer state restored: 28 tensors, step 30$",
                    r"^greedy sample: 'the .*'$",
                    r"^sampled 20 tokens, shape \(1, 24\)$"]),
    Program("resnet_file.py",
            expect=[r"^resnet18: 177362 parameters \(177362 trainable\), 68 modules, 122 state entries$",
                    r"^input torch\.Size\(\[4, 3, 64, 64\]\), torch\.float32$",
                    r"^resnet18 step 1: loss \d+\.\d+, logits sum -?\d+\.\d+$",
                    r"^resnet50 eval output \(4, 10\): sum -?\d+\.\d+, abs sum \d+\.\d+$",
                    r"^resnet50 bn1 running mean sum -?\d+\.\d+, var sum \d+\.\d+, batches 2$"]),
    # A GAN trained with Adam magnifies float rounding differences from step to step (the
    # gradients of the first step agree to ~1e-6); one epoch of four iterations, rtol 1e-3; the
    # mean of the 24,576 generated values (std 0.12) is near 0, so it gets an absolute 1e-4 too.
    Program("dcgan.py", args=["--niter", "1"], rtol=1e-3, atol=1e-4,
            expect=[r"^Generator\($",
                    r"^    \(0\): ConvTranspose2d\(16, 64, kernel_size=\(4, 4\), stride=\(1, 1\), bias=False\)$",
                    r"^    \(1\): BatchNorm2d\(64, eps=1e-05, momentum=0\.1, affine=True, bias=True, "
                    r"track_running_stats=True\)$",
                    r"^    \(1\): LeakyReLU\(negative_slope=0\.2, inplace=True\)$",
                    r"^\[0/1\]\[3/4\] Loss_D: \d+\.\d+ Loss_G: \d+\.\d+ D\(x\): \d+\.\d+ "
                    r"D\(G\(z\)\): \d+\.\d+ / \d+\.\d+$",
                    r"^epoch 0: fixed-noise samples \[8, 3, 32, 32\], mean ",
                    r"^reloaded generator matches: True$"]),
    Program("word_lstm.py", args=["--dropout", "0"],
            expect=[r"^vocabulary: 27 words; tokens: train 5350, valid 712, test 713$",
                    r"^batched train data: \[535, 10\] torch\.int64$",
                    r"^\| epoch   1 \|    40/   44 batches \| lr 20\.00 \| loss \d+\.\d+ \| ppl +\d+\.\d+$",
                    r"^\| end of epoch   3 \| valid loss \d+\.\d+ \| valid ppl +\d+\.\d+$",
                    r"^\| End of training \| test loss \d+\.\d+ \| test ppl +\d+\.\d+$"]),
    Program("device_pick.py",
            expect=[r"^using device: cpu \(accelerator available: False, cuda devices: 0\)$",
                    r"^300 training and 150 test points, 9 batches per epoch$",
                    r"^Train Epoch: 5 \tmean loss: \d+\.\d+ over 9 batches$",
                    r"^Test set: Average loss: \d+\.\d+, Accuracy: \d+/150 \(\d+\.\d\d%\)$",
                    r"^saved 6 tensors$",
                    r"^reloaded weights identical: True$",
                    r"^reloaded model accuracy unchanged: True$"]),
    Program("transformer_classifier.py",
            # with activation checkpointing the numbers are the same as without
            variants=[([], []), (["--grad-checkpoint"], ["--grad-checkpoint"])],
            expect=[r"^17924 trainable parameters$",
                    r"^step  23 \| loss \d+\.\d+ \| grad norm \d+\.\d+ \| lr 0\.000000$",
                    r"^test loss \d+\.\d+ \| accuracy \d\.\d{4}$",
                    r"^first predictions \[(\d, ){11}\d\]$"]),
]
PROGRAMS_BY_NAME = {p.file: p for p in PROGRAM_LIST}


# ---------------------------------------------------------------------------------------
# running the programs
# ---------------------------------------------------------------------------------------

def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [KINDLE_PARENT, env.get("PYTHONPATH")]))
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


def run_python(argv, cwd, env=None):
    return subprocess.run([sys.executable, *argv], cwd=str(cwd), env=env or _env(), capture_output=True,
                          text=True, timeout=TIMEOUT)


def run_kindle(program, args, cwd):
    return run_python(["-m", "kindle.run", os.path.join(PROGRAMS, program), *args], cwd)


def run_torch(program, args, cwd):
    env = _env()
    # PyTorch's CPU results do not depend on the thread count; one thread keeps the reference
    # runs quick on a busy machine.
    env["OMP_NUM_THREADS"] = "1"
    return run_python([os.path.join(PROGRAMS, program), *args], cwd, env)


def ok(proc, what):
    assert proc.returncode == 0, (f"{what} exited with {proc.returncode}\n--- stdout\n{proc.stdout}\n"
                                  f"--- stderr\n{proc.stderr[-6000:]}")
    return proc.stdout


_cache = {}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("real_programs")


def initial_weights(program, workdir):
    """The program's freshly initialised weights: saved by PyTorch where it is installed
    (so both runs start from the same numbers), otherwise by Kindle."""
    key = ("init", program.file)
    if key not in _cache:
        path = os.path.join(str(workdir), program.file.replace(".py", "_init.pt"))
        if HAVE_TORCH:
            ok(run_torch(program.file, [*program.args, "--save-init", path], workdir),
               f"PyTorch: {program.file} --save-init")
        else:
            ok(run_kindle(program.file, [*program.args, "--save-init", path], workdir),
               f"kindle.run {program.file} --save-init")
        _cache[key] = path
    return _cache[key]


def torch_output(program, extra, workdir):
    key = ("torch", program.file, tuple(extra))
    if key not in _cache:
        init = initial_weights(program, workdir)
        _cache[key] = ok(run_torch(program.file, [*program.args, *extra, "--init", init], workdir),
                         f"PyTorch: {program.file} {' '.join(extra)}")
    return _cache[key]


# ---------------------------------------------------------------------------------------
# comparing printed output
# ---------------------------------------------------------------------------------------

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)\b")


def _last_digit(token):
    """The value of one unit in the last printed digit of a number token."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.split(".", 1)[1]) if "." in mantissa else 0
    return 10.0 ** (-decimals + (int(exponent) if exponent else 0))


def _is_int(token):
    return re.fullmatch(r"[-+]?\d+", token) is not None


def compare_outputs(ours, theirs, rtol, atol=0.0):
    """Differences between Kindle's printed lines and PyTorch's, as readable strings."""
    a_lines, b_lines = ours.splitlines(), theirs.splitlines()
    problems = []
    if len(a_lines) != len(b_lines):
        problems.append(f"Kindle printed {len(a_lines)} lines, PyTorch {len(b_lines)}")
    for n, (a, b) in enumerate(zip(a_lines, b_lines), 1):
        a_text, b_text = _NUMBER.split(a), _NUMBER.split(b)
        a_nums, b_nums = _NUMBER.findall(a), _NUMBER.findall(b)
        if a_text != b_text or len(a_nums) != len(b_nums):
            problems.append(f"line {n}: Kindle {a!r}\n{'':>{len(str(n)) + 6}}PyTorch {b!r}")
            continue
        for x, y in zip(a_nums, b_nums):
            if _is_int(x) and _is_int(y):
                good = x == y
            else:
                fx, fy = float(x), float(y)
                if fx != fx or fy != fy:  # nan
                    good = (fx != fx) and (fy != fy)
                else:
                    tol = rtol * abs(fy) + atol + 1.01 * max(_last_digit(x), _last_digit(y))
                    good = fx == fy or abs(fx - fy) <= tol
            if not good:
                problems.append(f"line {n}: {x} (Kindle) vs {y} (PyTorch), rtol {rtol}\n"
                                f"    Kindle  {a!r}\n    PyTorch {b!r}")
                break
    return problems


def test_compare_outputs_itself():
    assert compare_outputs("loss 1.000000, step 3", "loss 1.000050, step 3", 1e-4) == []
    assert compare_outputs("loss 1.000000, step 3", "loss 1.001000, step 3", 1e-4)
    assert compare_outputs("loss 1.23", "loss 1.24", 1e-6) == []  # one unit of the last digit
    assert compare_outputs("loss 1.23", "loss 1.25", 1e-6)
    assert compare_outputs("step 3", "step 4", 1.0)  # integers exactly
    assert compare_outputs("lr 3.000000e-04", "lr 3.000001e-04", 1e-4) == []
    assert compare_outputs("kindle.Size([2, 3])", "torch.Size([2, 3])", 1e-4)  # text exactly
    assert compare_outputs("a\nb", "a", 1e-4)


# ---------------------------------------------------------------------------------------
# the programs
# ---------------------------------------------------------------------------------------

def _cases():
    for program in PROGRAM_LIST:
        for variant, torch_variant in program.variants:
            name = program.file[:-3] + "".join(variant)
            yield pytest.param(program.file, variant, torch_variant, id=name)


@pytest.mark.parametrize("program_file,variant,torch_variant", list(_cases()))
def test_program_runs_on_kindle_as_on_pytorch(program_file, variant, torch_variant, workdir):
    program = PROGRAMS_BY_NAME[program_file]
    init = initial_weights(program, workdir)
    proc = run_kindle(program.file, [*program.args, *variant, "--init", init], workdir)
    out = ok(proc, f"kindle.run {program.file} {' '.join(variant)}")
    lines = out.splitlines()
    missing = [rx for rx in program.expect if not any(re.search(rx, line) for line in lines)]
    problems = [f"no line matches {rx!r}" for rx in missing]
    if HAVE_TORCH:
        compared = "\n".join(line for line in lines if not any(re.search(rx, line) for rx in program.kindle_only))
        problems += compare_outputs(compared, torch_output(program, torch_variant, workdir), program.rtol,
                                    program.atol)
    assert not problems, (f"{program.file} {' '.join(variant)}: Kindle's output differs\n"
                          + "\n".join(problems) + f"\n--- Kindle's output\n{out}")


def test_programs_import_torch_not_kindle():
    """The programs are plain PyTorch programs."""
    for program in PROGRAM_LIST:
        with open(os.path.join(PROGRAMS, program.file), encoding="utf8") as f:
            source = f.read()
        assert "kindle" not in source.lower(), program.file
        assert re.search(r"^import torch$", source, re.M), program.file


# ---------------------------------------------------------------------------------------
# install_as_torch and missing names
# ---------------------------------------------------------------------------------------

def run_snippet(code, cwd):
    return run_python(["-c", textwrap.dedent(code)], cwd)


def test_install_as_torch_in_a_process(tmp_path):
    out = ok(run_snippet("""
        import sys
        import kindle
        kindle.install_as_torch()
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        import torch.optim.lr_scheduler
        from torch import nn as nn2, optim
        from torch.utils.data import DataLoader, TensorDataset
        from torch.nn import functional as F2
        assert torch is kindle and nn is kindle.nn and nn2 is kindle.nn
        assert F is kindle.nn.functional and F2 is F
        assert optim is kindle.optim and torch.optim.lr_scheduler is kindle.optim.lr_scheduler
        assert DataLoader is kindle.utils.data.DataLoader and TensorDataset is kindle.utils.data.TensorDataset
        assert sys.modules["torch.nn.functional"] is kindle.nn.functional
        assert torch.cuda.is_available() is False and torch.cuda.device_count() == 0
        assert torch.__file__ == kindle.__file__
        x = torch.ones(2, 3, requires_grad=True)
        (F.relu(x) * 2).sum().backward()
        assert torch.equal(x.grad, torch.full((2, 3), 2.0))
        loader = DataLoader(TensorDataset(torch.arange(6.0)), batch_size=4)
        print([b[0].tolist() for b in loader])
        print("ok")
    """, tmp_path), "install_as_torch snippet")
    assert out.splitlines() == ["[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0]]", "ok"]


def test_import_kindle_as_torch_still_works(tmp_path):
    out = ok(run_snippet("""
        import kindle as torch
        import kindle.nn as nn
        m = nn.Linear(3, 2)
        print(tuple(m(torch.zeros(4, 3)).shape))
    """, tmp_path), "import kindle as torch")
    assert out.strip() == "(4, 2)"


def test_missing_torch_module_is_an_import_error_naming_it(tmp_path):
    script = tmp_path / "uses_missing_module.py"
    script.write_text("import torch\nimport torch.no_such_submodule_xyz\n")
    proc = run_kindle(str(script), [], tmp_path)
    assert proc.returncode != 0
    assert "ModuleNotFoundError" in proc.stderr or "ImportError" in proc.stderr, proc.stderr
    assert "torch.no_such_submodule_xyz" in proc.stderr, proc.stderr
    assert "Kindle" in proc.stderr, proc.stderr


def test_missing_torch_attribute_is_an_attribute_error_naming_it(tmp_path):
    out = ok(run_snippet("""
        import kindle
        kindle.install_as_torch()
        import torch
        try:
            torch.no_such_function_xyz(3)
        except AttributeError as e:
            print("AttributeError:", e)
        try:
            from torch import no_such_name_xyz
        except ImportError as e:
            print("ImportError:", e)
        try:
            import torch.nn.no_such_module_xyz
        except ImportError as e:
            print("ImportError:", e)
    """, tmp_path), "missing names snippet")
    lines = out.splitlines()
    assert len(lines) == 3, out
    assert lines[0].startswith("AttributeError:") and "no_such_function_xyz" in lines[0], out
    assert "Kindle" in lines[0], out
    assert lines[1].startswith("ImportError:") and "no_such_name_xyz" in lines[1], out
    assert lines[2].startswith("ImportError:") and "torch.nn.no_such_module_xyz" in lines[2], out
    assert "Kindle" in lines[2], out


@pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch installed")
def test_no_fallback_to_an_installed_pytorch(tmp_path):
    """With PyTorch installed, the program still gets Kindle's modules, for names Kindle lacks too."""
    script = tmp_path / "which_torch.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        import torch.nn
        print(getattr(torch, "_is_kindle", False), torch.nn.__name__)
        try:
            import torch.no_such_submodule_xyz
        except ImportError:
            pass
        print(any(getattr(m, "__file__", "") and "site-packages/torch" in m.__file__
                  for m in list(sys.modules.values())))
    """))
    out = ok(run_kindle(str(script), [], tmp_path), "which_torch.py")
    assert out.splitlines() == ["True kindle.nn", "False"]


@pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch installed")
def test_install_as_torch_refuses_when_pytorch_is_imported(tmp_path):
    out = ok(run_snippet("""
        import torch
        import kindle
        try:
            kindle.install_as_torch()
        except RuntimeError as e:
            print("RuntimeError:", e)
    """, tmp_path), "install after torch")
    assert out.startswith("RuntimeError:") and "already imported" in out, out
