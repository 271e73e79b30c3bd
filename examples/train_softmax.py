"""A small training run with Kindle's core ops: softmax regression on three Gaussian blobs.

The gradients are written out by hand here (autograd is a separate piece of the library).
Run: python examples/train_softmax.py
"""
import argparse

import kindle


def make_blobs(n_per_class, generator):
    centers = kindle.tensor([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])
    xs, ys = [], []
    for c in range(3):
        xs.append(kindle.randn(n_per_class, 2, generator=generator) * 0.8 + centers[c])
        ys.append(kindle.full((n_per_class,), c, dtype=kindle.int64))
    return kindle.cat(xs), kindle.cat(ys)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    g = kindle.Generator().manual_seed(args.seed)
    x, y = make_blobs(300, g)
    perm = kindle.randperm(x.shape[0], generator=g)
    x, y = x[perm], y[perm]
    x_train, y_train, x_test, y_test = x[:700], y[:700], x[700:], y[700:]

    w = kindle.zeros(2, 3)
    b = kindle.zeros(3)
    onehot = kindle.zeros(len(y_train), 3)
    onehot[kindle.arange(len(y_train)), y_train] = 1.0
    for step in range(args.steps + 1):
        logits = x_train @ w + b
        loss = -(logits.log_softmax(1) * onehot).sum(1).mean()
        grad_logits = (logits.softmax(1) - onehot) / len(y_train)
        w -= args.lr * (x_train.t() @ grad_logits)
        b -= args.lr * grad_logits.sum(0)
        if step % 50 == 0:
            acc = ((x_test @ w + b).argmax(1) == y_test).float().mean()
            print(f"step {step:4d}  loss {loss.item():.4f}  test accuracy {acc.item():.3f}")
    acc = ((x_test @ w + b).argmax(1) == y_test).float().mean().item()
    assert acc > 0.9, f"training did not converge (accuracy {acc:.3f})"
    print(f"final test accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
