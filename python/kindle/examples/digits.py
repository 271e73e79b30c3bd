"""Train a small CNN on handwritten digits, checkpoint it, reload it and plot its curves.

The data is the 8x8 digits set that scikit-learn ships (1,797 images, no download), split
80/20 into training and test sets; or MNIST, from its IDX files, with --data DIR. Training
uses a DataLoader, Adam and a cosine learning-rate schedule, and shows a progress bar with
the running loss and accuracy. At the end the model is saved with kindle.save, loaded back
into a fresh model and evaluated again (the accuracy must be identical), and the loss and
accuracy curves are drawn into a PNG.

    pip install "kindle[examples]"        # scikit-learn, tqdm, matplotlib
    python -m kindle.examples.digits      # or, from a checkout: python examples/digits.py
    python -m kindle.examples.digits --data ~/mnist --epochs 3

This is an ordinary PyTorch program: write `torch` for `kindle` in its four imports
(`import torch as kindle`, `from torch import nn`, ...) and it runs on PyTorch unchanged.
"""
import argparse
import os
import sys
import time

import kindle
import kindle.nn.functional as F
from kindle import nn
from kindle.utils.data import DataLoader, TensorDataset

INSTALL_HINT = 'pip install "kindle[examples]"'


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Train a small CNN on handwritten digits (scikit-learn's 8x8 set, or MNIST "
                    "with --data), save, reload and re-evaluate it, and plot its curves.")
    p.add_argument("--epochs", type=int, default=12, help="passes over the training set (12)")
    p.add_argument("--batch-size", type=int, default=32, help="training batch size (32)")
    p.add_argument("--lr", type=float, default=3e-3, help="Adam's initial learning rate (3e-3)")
    p.add_argument("--seed", type=int, default=0, help="seed for the split, weights, shuffling (0)")
    p.add_argument("--workers", type=int, default=0,
                   help="DataLoader worker processes (0: load in the main process)")
    p.add_argument("--out", default="digits-out",
                   help="folder for the checkpoint and the plot (digits-out)")
    p.add_argument("--data", metavar="DIR", default=None,
                   help="train on MNIST from the IDX files in DIR (train-images-idx3-ubyte, "
                        "train-labels-idx1-ubyte, t10k-*; .gz accepted) instead of 8x8 digits")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="use only the first N training samples (quick runs)")
    p.add_argument("--tensorboard", metavar="DIR", default=None,
                   help="also log losses, accuracies, the learning rate and weight histograms to "
                        "TensorBoard event files in DIR (needs `pip install tensorboard`)")
    args = p.parse_args(argv)
    for name in ("epochs", "batch_size"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.workers < 0:
        p.error("--workers must be 0 or more")
    if not args.lr > 0:
        p.error("--lr must be positive")
    if args.limit is not None and args.limit < 1:
        p.error("--limit must be at least 1")
    return args


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------

def load_sklearn_digits(seed):
    """scikit-learn's 8x8 digits, split 80/20 (stratified) into train and test."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        sys.exit("digits: this example trains on scikit-learn's digits data set, and "
                 f"scikit-learn is not installed. Install the examples' extras with\n"
                 f"    {INSTALL_HINT}\n"
                 "or pass --data DIR with MNIST's IDX files.")
    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.images, digits.target, test_size=0.2, stratify=digits.target,
        random_state=seed)
    # Pixel values are 0..16: scale to [0, 1] and add the channel dimension.
    as_images = lambda a: kindle.from_numpy(a).float().div_(16.0).unsqueeze(1)  # noqa: E731
    as_labels = lambda a: kindle.from_numpy(a).long()  # noqa: E731
    return as_images(x_train), as_labels(y_train), as_images(x_test), as_labels(y_test)


def load_mnist_dir(root):
    """MNIST's official train/test split from its IDX files, as float images in [0, 1]."""
    from kindle.examples.mnist import load_mnist
    try:
        x_train, y_train = load_mnist(root, train=True)
        x_test, y_test = load_mnist(root, train=False)
    except (OSError, ValueError) as e:
        sys.exit(f"digits: {e}")
    as_images = lambda t: t.float().div_(255.0).unsqueeze(1)  # noqa: E731
    return as_images(x_train), y_train, as_images(x_test), y_test


# ---------------------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------------------

class DigitsCNN(nn.Module):
    """Two 3x3 convolutions and a max-pool, then a small classifier.

    Images larger than 16 pixels (MNIST's 28x28) get a second pooling so the classifier's
    input stays small.
    """

    def __init__(self, image_size=8, num_classes=10):
        super().__init__()
        layers = [nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                  nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
        side = image_size // 2
        if image_size > 16:
            layers.append(nn.MaxPool2d(2))
            side //= 2
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Dropout(0.25),
            nn.Linear(32 * side * side, 64), nn.ReLU(),
            nn.Linear(64, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


# ---------------------------------------------------------------------------------------
# training and evaluation
# ---------------------------------------------------------------------------------------

def progress(iterable, desc, use_bar):
    if use_bar:
        from tqdm import tqdm
        return tqdm(iterable, desc=desc, leave=False, dynamic_ncols=True)
    return _NoBar(iterable)


class _NoBar:
    """What this script uses of tqdm's bar, for when tqdm is not installed."""

    def __init__(self, iterable):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def set_postfix(self, **kwargs):
        pass


def train_one_epoch(model, bar, optimizer):
    """One pass over the batches that `bar` yields; (mean loss, accuracy) while training."""
    model.train()
    total_loss, correct, seen = 0.0, 0, 0
    for images, labels in bar:
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        n = labels.shape[0]
        total_loss += loss.item() * n
        correct += (logits.argmax(1) == labels).sum().item()
        seen += n
        bar.set_postfix(loss=f"{total_loss / seen:.4f}", acc=f"{correct / seen:.3f}")
    return total_loss / seen, correct / seen


@kindle.no_grad()
def evaluate(model, loader):
    """(mean loss, accuracy) of `model` over `loader`, in eval mode."""
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    for images, labels in loader:
        logits = model(images)
        total_loss += F.cross_entropy(logits, labels, reduction="sum").item()
        correct += (logits.argmax(1) == labels).sum().item()
        seen += labels.shape[0]
    return total_loss / seen, correct / seen


def plot_history(history, path):
    import matplotlib
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    epochs = range(1, len(history["train_loss"]) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, history["train_loss"], "o-", label="train")
    ax_loss.plot(epochs, history["test_loss"], "o-", label="test")
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy loss", title="Loss", yscale="log")
    ax_acc.plot(epochs, history["train_acc"], "o-", label="train")
    ax_acc.plot(epochs, history["test_acc"], "o-", label="test")
    ax_acc.set(xlabel="epoch", ylabel="accuracy", title="Accuracy")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("Kindle: CNN on handwritten digits")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _have(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def main(argv=None):
    args = parse_args(argv)
    start = time.perf_counter()
    kindle.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)  # fail now, not after training, if it cannot be made

    if args.data is not None:
        x_train, y_train, x_test, y_test = load_mnist_dir(args.data)
        source = f"MNIST from {args.data}"
    else:
        x_train, y_train, x_test, y_test = load_sklearn_digits(args.seed)
        source = "scikit-learn's 8x8 digits"
    if args.limit is not None:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    # Standardise with the training set's statistics (kept in the checkpoint for inference).
    mean, std = x_train.mean().item(), x_train.std().item()
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
    image_size = x_train.shape[-1]
    num_classes = int(max(y_train.max().item(), y_test.max().item())) + 1
    print(f"data: {source}: {len(x_train)} training and {len(x_test)} test images of "
          f"{image_size}x{image_size}, {num_classes} classes")

    train_loader = DataLoader(
        TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True,
        num_workers=args.workers,
        generator=kindle.Generator().manual_seed(args.seed))
    test_loader = DataLoader(TensorDataset(x_test, y_test), batch_size=500)

    model = DigitsCNN(image_size, num_classes)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params:,} parameters, {kindle.get_num_threads()} threads")
    optimizer = kindle.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = kindle.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)

    use_bar = _have("tqdm")
    if not use_bar:
        print(f"note: tqdm is not installed, so no progress bar ({INSTALL_HINT})")
    history = {"train_loss": [], "train_acc": [], "test_loss": [], "test_acc": [], "lr": []}
    writer = None
    if args.tensorboard:
        from kindle.utils.tensorboard import SummaryWriter
        writer = SummaryWriter(args.tensorboard)
    width = len(str(args.epochs))
    train_start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        bar = progress(train_loader, f"epoch {epoch:{width}d}/{args.epochs}", use_bar)
        lr = optimizer.param_groups[0]["lr"]
        train_loss, train_acc = train_one_epoch(model, bar, optimizer)
        scheduler.step()
        test_loss, test_acc = evaluate(model, test_loader)
        for key, value in zip(history, (train_loss, train_acc, test_loss, test_acc, lr)):
            history[key].append(value)
            if writer is not None:
                writer.add_scalar(key.replace("_", "/", 1) if key != "lr" else "lr", value, epoch)
        if writer is not None:
            for name, param in model.named_parameters():
                writer.add_histogram(name, param, epoch)
        print(f"epoch {epoch:{width}d}/{args.epochs}  lr {lr:.2e}  train loss {train_loss:.4f} "
              f"acc {train_acc:.4f}  test loss {test_loss:.4f} acc {test_acc:.4f}", flush=True)
    train_time = time.perf_counter() - train_start
    if writer is not None:
        writer.close()
        print(f"wrote TensorBoard logs to {args.tensorboard} (tensorboard --logdir {args.tensorboard})")

    # Save, then rebuild the model from the file alone and check it gives the same answers.
    checkpoint_path = os.path.join(args.out, "digits_cnn.pt")
    kindle.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict(), "epoch": args.epochs,
                 "image_size": image_size, "num_classes": num_classes,
                 "mean": mean, "std": std, "history": history, "args": vars(args)},
                checkpoint_path)
    checkpoint = kindle.load(checkpoint_path)
    restored = DigitsCNN(checkpoint["image_size"], checkpoint["num_classes"])
    restored.load_state_dict(checkpoint["model"])
    _, restored_acc = evaluate(restored, test_loader)
    final_acc = history["test_acc"][-1]
    print(f"saved {checkpoint_path} ({os.path.getsize(checkpoint_path) / 1024:.0f} KiB); "
          f"reloaded model: test accuracy {restored_acc:.4f} "
          f"({'same as' if restored_acc == final_acc else 'DIFFERENT from'} {final_acc:.4f})")
    if restored_acc != final_acc:
        sys.exit("digits: the reloaded checkpoint does not reproduce the trained model")

    if _have("matplotlib"):
        plot_path = os.path.join(args.out, "digits_curves.png")
        plot_history(history, plot_path)
        print(f"wrote {plot_path}")
    else:
        print(f"note: matplotlib is not installed, so no plot ({INSTALL_HINT})")
    print(f"final test accuracy {final_acc:.4f} ({final_acc * 100:.2f}%); training took "
          f"{train_time:.1f} s, the whole run {time.perf_counter() - start:.1f} s")
    return {"test_acc": final_acc, "restored_acc": restored_acc, "history": history,
            "checkpoint": checkpoint_path, "train_time": train_time}


if __name__ == "__main__":
    main()
