"""The MLP of the PyTorch MNIST-style examples: flatten a 1x28x28 image, 784-1024-1024-10 with
ReLU.
"""


def build(lib, in_features=784, hidden=1024, num_classes=10):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.layers = nn.Sequential(
                nn.Linear(in_features, hidden), nn.ReLU(),
                nn.Linear(hidden, hidden), nn.ReLU(),
                nn.Linear(hidden, num_classes),
            )

        def forward(self, x):
            return self.layers(self.flatten(x))

    return MLP()
