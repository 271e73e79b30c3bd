"""torch.inference_mode's inference tensors: which tensors are (storages allocated inside, and
every view of them), and the rules outside the mode (not saved for backward, not modified in
place even under no_grad, not made to require grad, no version counter), side by side with torch."""
import pytest

import kindle

torch = pytest.importorskip("torch")


def _errors(lib, fn):
    try:
        fn()
    except RuntimeError as e:
        return str(e)
    return None


@pytest.mark.parametrize("lib", [kindle, torch], ids=["kindle", "torch"])
def test_which_tensors_are_inference_tensors(lib):
    n = lib.ones(3)
    with lib.inference_mode():
        assert lib.is_inference_mode_enabled() and not lib.is_grad_enabled()
        x = lib.ones(2)
        v = n[:2]  # a view of a normal tensor stays normal
        c = n + 1
        n.add_(1)  # a normal tensor may be modified inside
        with lib.inference_mode(False):
            assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()
            y = lib.ones(2)
        x.add_(1)
    assert not lib.is_inference_mode_enabled() and lib.is_grad_enabled()
    assert x.is_inference() and lib.is_inference(x) and c.is_inference()
    assert not v.is_inference() and not y.is_inference() and not n.is_inference()
    assert x.view(2).is_inference() and x.detach().is_inference() and x[:1].is_inference()
    assert not (x + 1).is_inference() and not x.clone().is_inference()
    with lib.no_grad():
        with lib.inference_mode(False):
            assert lib.is_grad_enabled()


@pytest.mark.parametrize("lib", [kindle, torch], ids=["kindle", "torch"])
def test_rules_outside_inference_mode(lib):
    with lib.inference_mode():
        x = lib.ones(2)
    w = lib.ones(2, requires_grad=True)
    e = _errors(lib, lambda: x.add_(1))
    assert e and "Inplace update to inference tensor outside InferenceMode is not allowed" in e
    with lib.no_grad():
        assert "Inplace update to inference tensor" in _errors(lib, lambda: x.mul_(2))
    assert "Inference tensors cannot be saved for backward" in _errors(lib, lambda: (x * w).sum())
    assert "Setting requires_grad=True on inference tensor outside InferenceMode" in _errors(lib, x.requires_grad_)
    assert "Inference tensors do not track version counter" in _errors(lib, lambda: x._version)
    # what stays allowed: ops that save nothing of it, a clone into autograd, reading it
    (x + w).sum().backward()
    (x.clone() * w).sum().backward()
    if lib is kindle:  # refused before writing (torch raises after the in-place op ran: x is 4 there)
        assert x.tolist() == [1.0, 1.0]
    assert w.grad.tolist() == (x + 1).tolist()


def test_decorator_and_model_inference():
    m = kindle.nn.Linear(3, 2)

    @kindle.inference_mode()
    def run(inp):
        return m(inp)

    out = run(kindle.ones(4, 3))
    assert out.is_inference() and out.grad_fn is None and not out.requires_grad
    assert not m.weight.is_inference() and kindle.is_grad_enabled()
    # an inference output fed back into training is refused where it would be saved
    head = kindle.nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="cannot be saved for backward"):
        head(out)
    assert head(out.clone()).requires_grad
