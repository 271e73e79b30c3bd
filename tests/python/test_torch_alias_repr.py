"""Under kindle.install_as_torch() (python -m kindle.run), names print as PyTorch prints them:
torch.Size, torch.float32, dtype=torch.int64 inside tensor reprs, <class 'torch.Tensor'>."""
import os
import subprocess
import sys
import textwrap

import kindle

KINDLE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(kindle.__file__)))
SNIPPET = """
    x = torch.ones(2, 3, dtype=torch.int64)
    print(x.shape)
    print(x.dtype, torch.float32, [torch.bfloat16])
    print(repr(x))
    print(type(x), x.type())
    print(torch.zeros(2, dtype=torch.float64, requires_grad=True) * 2)
"""


def run(prelude):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [KINDLE_PARENT, os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(prelude) + textwrap.dedent(SNIPPET)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_reprs_spell_torch_under_install_as_torch():
    out = run("import kindle\nkindle.install_as_torch()\nimport torch\n")
    assert out.splitlines() == [
        "torch.Size([2, 3])",
        "torch.int64 torch.float32 [torch.bfloat16]",
        "tensor([[1, 1, 1],",
        "        [1, 1, 1]])",
        "<class 'torch.Tensor'> torch.LongTensor",
        "tensor([0., 0.], dtype=torch.float64, grad_fn=<MulBackward0>)",
    ]


def test_reprs_match_pytorch_itself():
    import importlib.machinery
    if importlib.machinery.PathFinder.find_spec("torch") is None:
        import pytest
        pytest.skip("needs PyTorch installed")
    assert run("import kindle\nkindle.install_as_torch()\nimport torch\n") == run("import torch\n")


def test_reprs_spell_kindle_otherwise_and_after_uninstall():
    out = run("import kindle as torch\n")
    assert out.splitlines()[0] == "kindle.Size([2, 3])" and "<class 'kindle.Tensor'>" in out
    out = run("import kindle\nkindle.install_as_torch()\nkindle.uninstall_as_torch()\nimport kindle as torch\n")
    assert out.splitlines()[1] == "kindle.int64 kindle.float32 [kindle.bfloat16]"
