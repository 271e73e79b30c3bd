"""The examples run end to end (as subprocesses, at tiny sizes), and the MNIST IDX reader
reads what it should and refuses malformed files with clear errors."""
import gzip
import os
import re
import struct
import subprocess
import sys

import numpy as np
import pytest

import kindle
from kindle.examples.mnist import find_idx_file, load_mnist, read_idx

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples")
# The subprocesses import the same kindle as this process (source tree or installed).
KINDLE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(kindle.__file__)))


def run(args, cwd, timeout=120):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [KINDLE_PARENT, env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return proc


def ok(proc):
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# ---------------------------------------------------------------------------------------
# IDX files
# ---------------------------------------------------------------------------------------

def idx_bytes(array, code=0x08):
    array = np.asarray(array)
    header = bytes([0, 0, code, array.ndim]) + b"".join(struct.pack(">I", s) for s in array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write(path, data, compress=False):
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(data)
    return str(path)


def write_mnist(folder, n_train, n_test, size=28, gz=True, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = (np.arange(n) % 10).astype(np.uint8)
        # Each class gets a bright square at its own place, so a model can learn it.
        images = rng.integers(0, 60, size=(n, size, size), dtype=np.uint8)
        for i, c in enumerate(labels):
            r, col = divmod(int(c), 5)
            images[i, 4 + 10 * r:10 + 10 * r, 2 + 5 * col:6 + 5 * col] = 250
        ext = ".gz" if gz else ""
        write(folder / f"{prefix}-images-idx3-ubyte{ext}", idx_bytes(images), gz)
        write(folder / f"{prefix}-labels-idx1-ubyte{ext}", idx_bytes(labels), gz)
        arrays[prefix] = (images, labels)
    return arrays


@pytest.mark.parametrize("gz", [False, True])
def test_load_mnist_round_trip(tmp_path, gz):
    arrays = write_mnist(tmp_path, 12, 5, gz=gz)
    for train, prefix in ((True, "train"), (False, "t10k")):
        images, labels = load_mnist(tmp_path, train=train)
        assert images.dtype == kindle.uint8 and tuple(images.shape) == arrays[prefix][0].shape
        assert labels.dtype == kindle.int64 and tuple(labels.shape) == (len(arrays[prefix][1]),)
        np.testing.assert_array_equal(images.numpy(), arrays[prefix][0])
        np.testing.assert_array_equal(labels.numpy(), arrays[prefix][1])


def test_find_idx_file_accepts_the_dotted_spelling(tmp_path):
    path = write(tmp_path / "train-images.idx3-ubyte.gz", idx_bytes(np.zeros((1, 2, 2), np.uint8)),
                 compress=True)
    assert find_idx_file(str(tmp_path), "train", "images", 3) == path


@pytest.mark.parametrize("dtype,code", [(np.uint8, 0x08), (np.int8, 0x09), (np.int16, 0x0B),
                                        (np.int32, 0x0C), (np.float32, 0x0D), (np.float64, 0x0E)])
def test_read_idx_every_type(tmp_path, dtype, code):
    a = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
    if dtype == np.uint8:
        a = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    t = read_idx(write(tmp_path / "a.idx", idx_bytes(a, code)))
    assert str(t.dtype) == f"kindle.{np.dtype(dtype).name}"
    np.testing.assert_array_equal(t.numpy(), a)  # big-endian on disk, native in memory


def test_read_idx_empty_dimension(tmp_path):
    t = read_idx(write(tmp_path / "e.idx", idx_bytes(np.zeros((0, 28, 28), np.uint8))))
    assert tuple(t.shape) == (0, 28, 28)


@pytest.mark.parametrize("data,message", [
    (b"\x00\x00", "too short for the 4-byte IDX magic"),
    (b"\x1f\x8b\x08\x00" + bytes(20), "does not start with two zero bytes"),
    (b"\x00\x00\x07\x01" + struct.pack(">I", 1) + b"\x00", "unknown IDX type code 0x07"),
    (b"\x00\x00\x08\x00", "declares 0 dimensions"),
    (b"\x00\x00\x08\x03" + struct.pack(">I", 2), "ends inside its header"),
    (b"\x00\x00\x08\x01" + struct.pack(">I", 5) + bytes(3), "holds 3 bytes, not the 5 data bytes"),
    (b"\x00\x00\x08\x01" + struct.pack(">I", 2) + bytes(3), "holds more than the 2 data bytes"),
    # A header that claims 4 GiB**3 must not make the reader allocate it.
    (b"\x00\x00\x0e\x03" + struct.pack(">III", 2**32 - 1, 2**32 - 1, 2**32 - 1) + bytes(8),
     "holds 8 bytes, not the"),
])
def test_read_idx_rejects_malformed_files(tmp_path, data, message):
    path = write(tmp_path / "bad-idx1-ubyte", data)
    with pytest.raises(ValueError, match=re.escape(message)) as e:
        read_idx(path)
    assert path in str(e.value)


def test_read_idx_corrupt_gzip(tmp_path):
    good = gzip.compress(idx_bytes(np.zeros(1000, np.uint8)))
    path = write(tmp_path / "x.gz", good[:len(good) // 2])
    with pytest.raises(ValueError, match="could not be read"):
        read_idx(path)
    with pytest.raises(FileNotFoundError):
        read_idx(tmp_path / "missing.gz")


def test_load_mnist_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        load_mnist(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte.gz"):
        load_mnist(tmp_path)
    write_mnist(tmp_path, 4, 3, gz=False)
    # labels for 3 images where there are 4
    write(tmp_path / "train-labels-idx1-ubyte", idx_bytes(np.zeros(3, np.uint8)))
    with pytest.raises(ValueError, match="holds 4 images but .* holds 3 labels"):
        load_mnist(tmp_path)
    # labels stored with the wrong number of dimensions
    write(tmp_path / "train-labels-idx1-ubyte", idx_bytes(np.zeros((4, 1), np.uint8)))
    with pytest.raises(ValueError, match=r"uint8 labels of shape \(N,\)"):
        load_mnist(tmp_path)
    # float images
    write(tmp_path / "train-images-idx3-ubyte", idx_bytes(np.zeros((4, 2, 2), np.float32), 0x0D))
    with pytest.raises(ValueError, match=r"uint8 images of shape \(N, H, W\)"):
        load_mnist(tmp_path)


# ---------------------------------------------------------------------------------------
# digits.py (the main example)
# ---------------------------------------------------------------------------------------

def test_digits_trains_saves_reloads_and_plots(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    # The thin script in examples/ runs the packaged implementation; two worker processes.
    stdout = ok(run([os.path.join(EXAMPLES, "digits.py"), "--epochs", "2", "--limit", "500",
                     "--workers", "2", "--out", str(out)], cwd=tmp_path))
    assert "500 training and 360 test images of 8x8" in stdout
    m = re.search(r"reloaded model: test accuracy ([\d.]+) \(same as ([\d.]+)\)", stdout)
    assert m and m.group(1) == m.group(2), stdout
    assert float(m.group(1)) > 0.7, stdout  # far above chance (0.1) after two short epochs
    checkpoint = kindle.load(out / "digits_cnn.pt")
    assert {"model", "optimizer", "scheduler", "history", "mean", "std"} <= set(checkpoint)
    assert len(checkpoint["history"]["test_acc"]) == 2
    with open(out / "digits_curves.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_digits_logs_to_tensorboard(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    stdout = ok(run([os.path.join(EXAMPLES, "digits.py"), "--epochs", "2", "--limit", "300",
                     "--out", "out", "--tensorboard", "tb"], cwd=tmp_path))
    assert "wrote TensorBoard logs to tb" in stdout
    ea = EventAccumulator(str(tmp_path / "tb"), size_guidance={"scalars": 0, "histograms": 0})
    ea.Reload()
    assert set(ea.Tags()["scalars"]) == {"train/loss", "train/acc", "test/loss", "test/acc", "lr"}
    assert [e.step for e in ea.Scalars("test/acc")] == [1, 2]
    history = kindle.load(tmp_path / "out" / "digits_cnn.pt")["history"]
    assert [e.value for e in ea.Scalars("test/acc")] == pytest.approx(history["test_acc"], rel=1e-6)
    assert "conv1.weight" in ea.Tags()["histograms"] or len(ea.Tags()["histograms"]) >= 4


def test_digits_as_module_help(tmp_path):
    stdout = ok(run(["-m", "kindle.examples.digits", "--help"], cwd=tmp_path))
    for flag in ("--epochs", "--batch-size", "--lr", "--seed", "--workers", "--out", "--data"):
        assert flag in stdout
    proc = run(["-m", "kindle.examples.digits", "--epochs", "0"], cwd=tmp_path)
    assert proc.returncode == 2 and "--epochs must be at least 1" in proc.stderr


def test_digits_on_mnist_idx_files(tmp_path):
    # 28x28 images from IDX files, gzipped; neither scikit-learn nor tqdm nor matplotlib needed.
    write_mnist(tmp_path, 200, 50)
    blocker = ("import sys; sys.modules.update(tqdm=None, matplotlib=None, sklearn=None); "
               "from kindle.examples.digits import main; main(sys.argv[1:])")
    stdout = ok(run(["-c", blocker, "--data", str(tmp_path), "--epochs", "2", "--out", "out"],
                    cwd=tmp_path))
    assert "200 training and 50 test images of 28x28, 10 classes" in stdout
    assert "tqdm is not installed" in stdout and "matplotlib is not installed" in stdout
    assert 'pip install "kindle[examples]"' in stdout
    m = re.search(r"reloaded model: test accuracy ([\d.]+) \(same as ([\d.]+)\)", stdout)
    assert m and m.group(1) == m.group(2), stdout
    assert float(m.group(1)) > 0.5, stdout  # the classes are easy: a square in its own place
    assert os.path.exists(tmp_path / "out" / "digits_cnn.pt")
    assert not os.path.exists(tmp_path / "out" / "digits_curves.png")


def test_digits_errors_clearly_without_sklearn_or_data(tmp_path):
    blocker = ("import sys; sys.modules['sklearn'] = None; "
               "from kindle.examples.digits import main; main(sys.argv[1:])")
    proc = run(["-c", blocker, "--epochs", "1", "--out", "out"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "scikit-learn is not installed" in proc.stderr
    assert 'pip install "kindle[examples]"' in proc.stderr
    proc = run(["-m", "kindle.examples.digits", "--data", str(tmp_path / "none")], cwd=tmp_path)
    assert proc.returncode == 1 and "is not a folder" in proc.stderr


# ---------------------------------------------------------------------------------------
# the other examples
# ---------------------------------------------------------------------------------------

def test_char_lm_lstm_beats_unigram_entropy(tmp_path):
    stdout = ok(run([os.path.join(EXAMPLES, "char_lm.py"), "--model", "lstm", "--steps", "200",
                     "--hidden", "64", "--seq-len", "32", "--batch-size", "16", "--lr", "1e-2",
                     "--eval-every", "100", "--sample-len", "40",
                     "--save", str(tmp_path / "lm.pt")], cwd=tmp_path))
    assert stdout.count("--- sample ---") == 2
    m = re.search(r"final validation loss ([\d.]+) nats/char .* vs unigram entropy ([\d.]+)",
                  stdout)
    assert m, stdout
    val, unigram = float(m.group(1)), float(m.group(2))
    assert 2.5 < unigram < 4.0  # Python source text, ~100 distinct characters
    assert val < unigram - 0.3, stdout
    assert set(kindle.load(tmp_path / "lm.pt")) == {"model", "chars", "args"}


def test_char_lm_gpt_runs(tmp_path):
    text = tmp_path / "tiny.txt"
    text.write_text("the quick brown fox jumps over the lazy dog\n" * 40)
    stdout = ok(run([os.path.join(EXAMPLES, "char_lm.py"), "--model", "gpt", "--steps", "30",
                     "--hidden", "32", "--layers", "2", "--heads", "2", "--seq-len", "16",
                     "--batch-size", "8", "--lr", "1e-2", "--eval-every", "30",
                     "--sample-len", "20", "--text", str(text)], cwd=tmp_path))
    assert "model: gpt" in stdout and "--- sample ---" in stdout
    m = re.search(r"final validation loss ([\d.]+) nats/char .* vs unigram entropy ([\d.]+)",
                  stdout)
    assert m and float(m.group(1)) < float(m.group(2)), stdout  # a very repetitive text
    proc = run([os.path.join(EXAMPLES, "char_lm.py"), "--model", "gpt", "--hidden", "30",
                "--heads", "4"], cwd=tmp_path)
    assert proc.returncode == 2 and "must be divisible by --heads" in proc.stderr


def test_resnet_trains_and_resumes_from_checkpoint(tmp_path):
    stdout = ok(run([os.path.join(EXAMPLES, "resnet.py"), "--steps", "2", "--batch-size", "4",
                     "--width", "8", "--workers", "2", "--out", "out"], cwd=tmp_path))
    assert "trained 2 steps" in stdout
    assert "reloaded model's outputs identical" in stdout
    assert "parameters after the step identical" in stdout
    state = kindle.load(tmp_path / "out" / "resnet18.pt")
    keys = state["model"].keys()
    # BatchNorm's running statistics are part of the checkpoint.
    assert "stem.1.running_mean" in keys and "stages.3.1.bn2.num_batches_tracked" in keys
    assert state["step"] == 2


def test_custom_function(tmp_path):
    stdout = ok(run([os.path.join(EXAMPLES, "custom_function.py"), "--steps", "100",
                     "--out", "out"], cwd=tmp_path))
    assert "gradcheck and gradgradcheck of SiLUFunction: passed" in stdout
    assert "its graph node: SiLUFunctionBackward" in stdout
    assert "straight-through gradient [0.0, 1.0, 1.0, 1.0, 0.0]" in stdout
    assert "reloaded model's outputs identical" in stdout
    assert "0.projection" in stdout  # the buffer is saved with the parameters
