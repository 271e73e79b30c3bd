"""A CIFAR-style ResNet-18 trained for a few steps on generated 3x32x32 images.

No download: a Dataset draws each image from its index (a class-specific pattern plus
noise), and the usual CIFAR pipeline runs on it -- random crop with 4-pixel padding, random
horizontal flip, a DataLoader (with worker processes if --workers > 0). The network is the
standard CIFAR variant of ResNet-18 (3x3 stem, four stages of two basic residual blocks,
BatchNorm everywhere). After training, the model and optimizer are checkpointed with
kindle.save, loaded into fresh copies, and checked: eval-mode outputs are identical, and one
more training step from the original and from the reloaded copy gives the same loss.

    python examples/resnet.py                       # 20 steps, batch 32
    python examples/resnet.py --steps 200 --workers 2
    python examples/resnet.py --width 16            # narrower (4x fewer channels), faster

Write `torch` for `kindle` in the imports and the same script runs on PyTorch.
"""
import argparse
import os
import sys
import time

import kindle
import kindle.nn.functional as F
from kindle import nn
from kindle.utils.data import DataLoader, Dataset

try:
    from tqdm import tqdm
except ImportError:  # the progress bar is optional: pip install tqdm
    tqdm = None


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Train a CIFAR-style ResNet-18 for a few steps on "
                                            "synthetic 3x32x32 images and checkpoint it.")
    p.add_argument("--steps", type=int, default=20, help="training steps (20)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05, help="peak SGD learning rate (0.05)")
    p.add_argument("--width", type=int, default=64,
                   help="channels of the first stage; 64 is ResNet-18 (64)")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes (0)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="resnet-out", help="folder for the checkpoint (resnet-out)")
    args = p.parse_args(argv)
    for name in ("steps", "batch_size", "width", "classes"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.classes < 2:
        p.error("--classes must be at least 2")
    if args.workers < 0:
        p.error("--workers must be 0 or more")
    return args


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------

class SyntheticImages(Dataset):
    """`size` labelled 3x32x32 images, each generated from its index alone.

    Class c's images are a fixed random pattern (smooth, from upsampled 8x8 noise) plus
    per-image noise, so the task is learnable but not trivial. Generating from the index
    (not from shared state) gives the same image in any worker process, in any order.
    """

    def __init__(self, size, classes, seed, train):
        self.size, self.classes, self.train = size, classes, train
        self.seed = seed * 1_000_003 + (0 if train else 500_009)
        g = kindle.Generator().manual_seed(seed)
        coarse = kindle.randn(classes, 3, 8, 8, generator=g)
        self.patterns = F.interpolate(coarse, size=(32, 32), mode="bilinear",
                                      align_corners=False)

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if not 0 <= index < self.size:
            raise IndexError(f"SyntheticImages: index {index} out of range for {self.size}")
        g = kindle.Generator().manual_seed(self.seed + index)
        label = index % self.classes
        image = self.patterns[label] + 0.8 * kindle.randn(3, 32, 32, generator=g)
        if self.train:
            image = random_crop_flip(image, g)
        return image, label


def random_crop_flip(image, generator, padding=4):
    """CIFAR augmentation: zero-pad by `padding`, crop 32x32 at a random offset, maybe mirror."""
    padded = F.pad(image, (padding,) * 4)
    top, left = kindle.randint(0, 2 * padding + 1, (2,), generator=generator).tolist()
    image = padded[:, top:top + 32, left:left + 32]
    if kindle.rand(1, generator=generator).item() < 0.5:
        image = image.flip(-1)
    return image.contiguous()


# ---------------------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------------------

class BasicBlock(nn.Module):
    """Two 3x3 convolutions with BatchNorm; a 1x1 projection when the shape changes."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    def __init__(self, classes=10, width=64):
        super().__init__()
        widths = [width, 2 * width, 4 * width, 8 * width]
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(inplace=True))
        stages, cin = [], width
        for i, cout in enumerate(widths):
            stride = 1 if i == 0 else 2
            stages.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.pool(self.stages(self.stem(x)))
        return self.fc(x.flatten(1))


# ---------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------

def train_step(model, optimizer, images, labels):
    logits = model(images)
    loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item(), (logits.argmax(1) == labels).float().mean().item()


def make_optimizer(model, lr):
    return kindle.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True,
                            weight_decay=5e-4)


def main(argv=None):
    args = parse_args(argv)
    kindle.manual_seed(args.seed)
    train_set = SyntheticImages(args.steps * args.batch_size, args.classes, args.seed, train=True)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, drop_last=True,
                        generator=kindle.Generator().manual_seed(args.seed))
    model = ResNet18(args.classes, args.width)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"ResNet-18 (CIFAR variant, width {args.width}): {n_params:,} parameters; "
          f"{args.steps} steps of batch {args.batch_size}, {args.workers} workers, "
          f"{kindle.get_num_threads()} threads")
    optimizer = make_optimizer(model, args.lr)
    scheduler = kindle.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr,
                                                     total_steps=args.steps)

    model.train()
    bar = tqdm(loader, desc="resnet18", dynamic_ncols=True) if tqdm is not None else loader
    start = time.perf_counter()
    losses = []
    for step, (images, labels) in enumerate(bar, 1):
        loss, acc = train_step(model, optimizer, images, labels)
        scheduler.step()
        losses.append(loss)
        if tqdm is not None:
            bar.set_postfix(loss=f"{loss:.3f}", acc=f"{acc:.2f}")
        else:
            print(f"step {step}/{args.steps}  loss {loss:.4f}  batch accuracy {acc:.2f}")
    elapsed = time.perf_counter() - start
    print(f"trained {len(losses)} steps in {elapsed:.1f} s "
          f"({len(losses) * args.batch_size / elapsed:.1f} images/s); "
          f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")

    # Checkpoint everything needed to resume: weights, BatchNorm statistics, optimizer state.
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "resnet18.pt")
    kindle.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict(), "step": len(losses),
                 "args": vars(args)}, path)
    checkpoint = kindle.load(path)
    restored = ResNet18(args.classes, args.width)
    restored.load_state_dict(checkpoint["model"])
    restored_opt = make_optimizer(restored, args.lr)
    restored_opt.load_state_dict(checkpoint["optimizer"])
    print(f"saved {path} ({os.path.getsize(path) / 2**20:.1f} MiB) and loaded it back")

    # Held-out images (no augmentation): the reloaded model must answer exactly the same.
    test_set = SyntheticImages(4 * args.batch_size, args.classes, args.seed, train=False)
    images, labels = next(iter(DataLoader(test_set, batch_size=len(test_set))))
    model.eval()
    restored.eval()
    with kindle.no_grad():
        logits, restored_logits = model(images), restored(images)
    same_eval = kindle.equal(logits, restored_logits)
    test_acc = (logits.argmax(1) == labels).float().mean().item()
    print(f"held-out accuracy {test_acc:.3f} ({len(test_set)} images, chance "
          f"{1 / args.classes:.3f}); reloaded model's outputs "
          f"{'identical' if same_eval else 'DIFFERENT'}")

    # Resuming: one more step from each copy, on the same batch, must agree exactly.
    model.train()
    restored.train()
    images, labels = next(iter(loader))
    loss_a, _ = train_step(model, optimizer, images, labels)
    loss_b, _ = train_step(restored, restored_opt, images, labels)
    same_params = all(kindle.equal(p, q) for p, q in
                      zip(model.parameters(), restored.parameters()))
    print(f"resumed step: loss {loss_a:.6f} (original) vs {loss_b:.6f} (reloaded); parameters "
          f"after the step {'identical' if same_params else 'DIFFERENT'}")
    if not (same_eval and loss_a == loss_b and same_params):
        sys.exit("resnet: the reloaded checkpoint does not reproduce the trained model")


if __name__ == "__main__":
    main()
