"""Train a small MLP classifier on whatever device is available (CUDA, Apple MPS or CPU),
save its state_dict, load it back into a fresh model and check that nothing changed.

    python device_pick.py [--init weights.pt] [--save-init weights.pt] [--epochs 5]
"""
import argparse
import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, in_features=2, hidden=64, num_classes=3):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, num_classes)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = self.dropout(F.relu(self.fc2(x)))
        return F.log_softmax(self.fc3(x), dim=1)


def make_spirals(n_per_class, num_classes=3, phase=0.0):
    """Interleaved spirals: a classic toy problem, laid out deterministically."""
    xs, ys = [], []
    for c in range(num_classes):
        t = torch.linspace(0.0, 1.0, n_per_class)
        r = 0.2 + 0.8 * t
        angle = 4.0 * t + c * (2 * math.pi / num_classes) + phase
        xs.append(torch.stack([r * torch.cos(angle), r * torch.sin(angle)], dim=1))
        ys.append(torch.full((n_per_class,), c, dtype=torch.long))
    return torch.cat(xs), torch.cat(ys)


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    total, batches = 0.0, 0
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device, non_blocking=True), target.to(device, non_blocking=True)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        total += loss.item()
        batches += 1
    print(f"Train Epoch: {epoch} \tmean loss: {total / batches:.6f} over {batches} batches")


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += pred.eq(target.view_as(pred)).sum().item()

    test_loss /= len(test_loader.dataset)
    print('Test set: Average loss: {:.6f}, Accuracy: {}/{} ({:.2f}%)'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    return correct


def main():
    parser = argparse.ArgumentParser(description='MLP on spirals, on any device')
    parser.add_argument('--batch-size', type=int, default=32, metavar='N')
    parser.add_argument('--test-batch-size', type=int, default=100, metavar='N')
    parser.add_argument('--epochs', type=int, default=5, metavar='N')
    parser.add_argument('--lr', type=float, default=0.2, metavar='LR')
    parser.add_argument('--gamma', type=float, default=0.7, metavar='M')
    parser.add_argument('--no-accel', action='store_true', help='disables accelerator')
    parser.add_argument('--seed', type=int, default=1, metavar='S')
    parser.add_argument('--init', default='', help='initial weights (a state_dict file)')
    parser.add_argument('--save-init', default='', help='save the initial weights here and exit')
    parser.add_argument('--save-model', default='', help='where to save the trained model')
    args = parser.parse_args()

    if not args.no_accel and torch.cuda.is_available():
        device = torch.device("cuda")
    elif not args.no_accel and torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    use_accel = not args.no_accel and torch.accelerator.is_available()
    print(f"using device: {device} (accelerator available: {use_accel}, "
          f"cuda devices: {torch.cuda.device_count()})")

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = False
    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    torch.set_float32_matmul_precision('high')

    train_kwargs = {'batch_size': args.batch_size}
    test_kwargs = {'batch_size': args.test_batch_size}
    if use_accel:
        accel_kwargs = {'num_workers': 1, 'pin_memory': True}
        train_kwargs.update(accel_kwargs)
        test_kwargs.update(accel_kwargs)

    x_train, y_train = make_spirals(100)
    x_test, y_test = make_spirals(50, phase=0.05)
    # interleave the classes so that every batch sees all of them, in a fixed order
    order = torch.arange(len(y_train)).view(3, -1).t().reshape(-1)
    train_set = TensorDataset(x_train[order], y_train[order])
    test_set = TensorDataset(x_test, y_test)
    train_loader = DataLoader(train_set, shuffle=False, drop_last=True, **train_kwargs)
    test_loader = DataLoader(test_set, **test_kwargs)
    print(f"{len(train_set)} training and {len(test_set)} test points, "
          f"{len(train_loader)} batches per epoch")

    model = Net().to(device)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
        print(f"saved initial weights to {args.save_init}")
        return
    if args.init:
        model.load_state_dict(torch.load(args.init, map_location=device, weights_only=True))
    # no dropout: keep the runs reproducible
    model.dropout.p = 0.0

    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        correct = test(model, device, test_loader)
        scheduler.step()
        print(f"lr now {scheduler.get_last_lr()[0]:.6f}")

    path = args.save_model or os.path.join(tempfile.mkdtemp(prefix="device_pick_"), "mlp.pt")
    torch.save(model.state_dict(), path)
    print(f"saved {len(model.state_dict())} tensors")

    reloaded = Net()
    reloaded.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    reloaded.to(device)
    reloaded.eval()
    same = all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), reloaded.state_dict().values()))
    print(f"reloaded weights identical: {same}")
    correct2 = test(reloaded, device, test_loader)
    print(f"reloaded model accuracy unchanged: {correct2 == correct}")

    if device.type == "cuda":
        print(f"peak memory: {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
        torch.cuda.empty_cache()


if __name__ == '__main__':
    main()
