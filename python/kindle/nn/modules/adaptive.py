"""AdaptiveLogSoftmaxWithLoss (Grave et al., "Efficient softmax approximation for GPUs"): the
frequent classes (below cutoffs[0]) and one entry per rarer cluster share a head softmax; a
word in a cluster adds its log-probability within the cluster, from a smaller projection
(in_features / div_value**(i+1) wide). Parameters are laid out as torch's (head, tail[i][0..1]),
so state dicts load either way."""
from collections import namedtuple

from ... import _C
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **kw),
                                        Linear(hidden, size, bias=False, **kw)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for proj in self.tail:
            for layer in proj:
                layer.reset_parameters()

    def _weights(self):
        return self.head.weight, self.head.bias, [layer.weight for proj in self.tail for layer in proj], self.cutoffs

    def forward(self, input_, target_):
        output, loss = _C._nn.adaptive_log_softmax_with_loss(input_, target_, *self._weights())
        return _ASMoutput(output, loss)

    def log_prob(self, input):  # noqa: A002
        """Log-probabilities of every class: (N, n_classes), or (n_classes,) for 1-d input."""
        return _C._nn.adaptive_log_softmax_log_prob(input, *self._weights())

    def predict(self, input):  # noqa: A002
        """The most likely class per row (log_prob(input).argmax(1), the tails evaluated only for
        rows whose head's best entry is a cluster)."""
        return _C._nn.adaptive_log_softmax_predict(input, *self._weights())
