"""Model zoo for benchmarks/bench_models.py: one file per family, each written the way
torchvision or the PyTorch examples write it, with its classes defined against a library module
passed in (`build(lib, ...)`, lib = kindle or torch), so the same source builds a Kindle model
and a PyTorch model.

SPECS lists the benchmarked models: how to build each at a given input size, how to make its
inputs and targets (NumPy, under a caller's generator) and which input sizes the full and quick
runs use. Targets are class indices for F.cross_entropy over the model's last dimension.
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import alexnet, densenet, gpt, mlp, mobilenet, resnet, squeezenet, vgg, vit, word_lm


@dataclass(frozen=True)
class ModelSpec:
    name: str                  # the name --models selects
    title: str
    build: Callable            # (lib, size) -> nn.Module
    inputs: Callable           # (rng, batch, size) -> (x, y): NumPy input and int64 targets
    describe: Callable         # (size) -> short text for the table's input column
    sizes: dict                # batch -> input size (resolution or sequence length), full runs
    default_size: int          # full runs, batches not in `sizes`
    quick_size: int            # --quick, every batch
    classes: int               # classes of the targets (the size of the output's last dim)
    size_dependent: bool = False  # the model itself depends on the input size (ViT's position table)

    def size_for(self, batch, quick):
        return self.quick_size if quick else self.sizes.get(batch, self.default_size)


def images(channels, classes):
    def make(rng, batch, size):
        x = rng.standard_normal((batch, channels, size, size), dtype=np.float32)
        return x, rng.integers(0, classes, size=(batch,), dtype=np.int64)
    return make


def tokens(vocab):
    """Time-major token batches (seq, batch) as the word-language-model example feeds them; the
    targets are the flattened (seq * batch) next tokens."""
    def make(rng, batch, seq):
        x = rng.integers(0, vocab, size=(seq, batch), dtype=np.int64)
        return x, rng.integers(0, vocab, size=(seq * batch,), dtype=np.int64)
    return make


def activations(dim):
    """(batch, seq, dim) activations for a transformer block; cross-entropy over the block's
    `dim` outputs per position against random targets (a stand-in loss: it backpropagates
    through the whole block)."""
    def make(rng, batch, seq):
        x = rng.standard_normal((batch, seq, dim), dtype=np.float32)
        return x, rng.integers(0, dim, size=(batch * seq,), dtype=np.int64)
    return make


def image_desc(channels):
    return lambda size: f"{channels}x{size}x{size}"


IMG = image_desc(3)
SMALL = {8: 112}  # batch 8 of the large convolutional models at 112x112 (2-core machine)
VOCAB = 10000

SPECS = [
    ModelSpec("resnet18", "ResNet-18", lambda lib, s: resnet.build(lib, "resnet18"),
              images(3, 1000), IMG, SMALL, 224, 64, 1000),
    ModelSpec("resnet50", "ResNet-50", lambda lib, s: resnet.build(lib, "resnet50"),
              images(3, 1000), IMG, SMALL, 224, 64, 1000),
    ModelSpec("mobilenet_v2", "MobileNet-v2", lambda lib, s: mobilenet.build(lib),
              images(3, 1000), IMG, {}, 224, 64, 1000),
    ModelSpec("alexnet", "AlexNet", lambda lib, s: alexnet.build(lib),
              images(3, 1000), IMG, {}, 224, 64, 1000),
    ModelSpec("vgg11_bn", "VGG-11-BN", lambda lib, s: vgg.build(lib, "A", batch_norm=True),
              images(3, 1000), IMG, SMALL, 224, 64, 1000),
    ModelSpec("squeezenet1_1", "SqueezeNet 1.1", lambda lib, s: squeezenet.build(lib),
              images(3, 1000), IMG, {}, 224, 64, 1000),
    ModelSpec("densenet121", "DenseNet-121", lambda lib, s: densenet.build(lib),
              images(3, 1000), IMG, SMALL, 224, 64, 1000),
    ModelSpec("vit_tiny", "ViT (patch 16, 4 layers, dim 192, 3 heads)",
              lambda lib, s: vit.build(lib, image_size=s, patch_size=16),
              images(3, 1000), IMG, {}, 224, 64, 1000, size_dependent=True),
    ModelSpec("lstm_lm", "word-LM LSTM (2x650, vocab 10k)", lambda lib, s: word_lm.build_lstm(lib, VOCAB),
              tokens(VOCAB), lambda s: f"seq {s}", {}, 35, 8, VOCAB),
    ModelSpec("transformer_lm", "word-LM Transformer (2x200, 2 heads, vocab 10k)",
              lambda lib, s: word_lm.build_transformer(lib, VOCAB),
              tokens(VOCAB), lambda s: f"seq {s}", {}, 35, 8, VOCAB),
    ModelSpec("gpt_block", "GPT block (768, 12 heads)", lambda lib, s: gpt.build(lib),
              activations(768), lambda s: f"seq {s}x768", {}, 128, 32, 768),
    ModelSpec("mlp", "MLP 784-1024-1024-10", lambda lib, s: mlp.build(lib),
              images(1, 10), lambda s: "1x28x28", {}, 28, 28, 10),
]

BY_NAME = {s.name: s for s in SPECS}
