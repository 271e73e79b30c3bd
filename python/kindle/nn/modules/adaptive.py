"""AdaptiveLogSoftmaxWithLoss (Grave et al., "Efficient softmax approximation for GPUs"): the
frequent classes (below cutoffs[0]) and one entry per rarer cluster share a head softmax; a
word in a cluster adds its log-probability within the cluster, from a smaller projection
(in_features / div_value**(i+1) wide). Parameters are laid out as torch's (head, tail[i][0..1]),
so state dicts load either way."""
from collections import namedtuple

from ... import _C
from .. import functional as F
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

    def forward(self, input_, target_):
        if target_.dim() == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        x = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        n = target.size(0)
        lo_t, hi_t = target.min().item() if n else 0, target.max().item() if n else 0
        if n and (lo_t < 0 or hi_t >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{lo_t}, {hi_t}] were found. ")
        # the head's entry for each row: the word itself, or its cluster's slot
        head_index = target.clone()
        within = x.new_zeros(n)
        for i in range(self.n_clusters):
            lo, hi = self.cutoffs[i], self.cutoffs[i + 1]
            rows = ((target >= lo) & (target < hi)).nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            head_index = head_index.index_fill(0, rows, self.shortlist_size + i)
            logp = F.log_softmax(self.tail[i](x.index_select(0, rows)), dim=1)
            picked = logp.gather(1, (target.index_select(0, rows) - lo).unsqueeze(1)).squeeze(1)
            within = within.index_copy(0, rows, picked)
        head_logp = F.log_softmax(self.head(x), dim=1)
        output = within + head_logp.gather(1, head_index.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, x, head_output):
        head_logp = F.log_softmax(head_output, dim=1)
        parts = [head_logp[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](x), dim=1)
            parts.append(cluster + head_logp[:, self.shortlist_size + i].unsqueeze(1))
        return _C.cat(parts, 1)

    def log_prob(self, input):  # noqa: A002
        """Log-probabilities of every class: (N, n_classes), or (n_classes,) for 1-d input."""
        x = input if input.dim() == 2 else input.unsqueeze(0)
        out = self._full_log_prob(x, self.head(x))
        return out if input.dim() == 2 else out.squeeze(0)

    def predict(self, input):  # noqa: A002
        """The most likely class per row; the tails are evaluated only for rows whose head's best
        entry is a cluster (the result is the same as log_prob(input).argmax(1))."""
        x = input if input.dim() == 2 else input.unsqueeze(0)
        head_output = self.head(x)
        best = head_output.argmax(1)
        needs_tail = best >= self.shortlist_size
        if bool(needs_tail.any()):
            rows = needs_tail.nonzero().reshape(-1)
            full = self._full_log_prob(x.index_select(0, rows), head_output.index_select(0, rows))
            best = best.index_copy(0, rows, full.argmax(1))
        return best if input.dim() == 2 else best.squeeze(0)
