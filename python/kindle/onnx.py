"""kindle.onnx: importable, so model code that checks torch.onnx.is_in_onnx_export() runs.
Exporting needs a graph of the model in ONNX's operator set, which Kindle cannot write yet:
export() raises NotImplementedError."""

__all__ = ["export", "is_in_onnx_export", "OperatorExportTypes", "TrainingMode"]


def is_in_onnx_export():
    return False


def export(model, args=(), f=None, *rest, **kwargs):  # noqa: ARG001
    raise NotImplementedError(
        "kindle.onnx.export: ONNX export is not implemented in Kindle yet; save the weights with "
        "kindle.save(model.state_dict(), path) and export from PyTorch, which loads that file")


class OperatorExportTypes:
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class TrainingMode:
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2
