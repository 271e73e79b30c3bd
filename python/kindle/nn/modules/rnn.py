"""Recurrent layers (RNN, LSTM, GRU) and their single-step cells, with torch's constructor
arguments, parameter names, initialisation and input conventions. The recurrences themselves
are C++ (kindle._C._nn.rnn and the *_cell ops); this file only checks shapes and arranges
inputs, hidden states and packed sequences around them."""
import math
import numbers
import warnings

from ... import _C
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_NAMES = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}


class RNNBase(Module):
    """What RNN, LSTM and GRU share: the per-layer, per-direction parameters (weight_ih_l{k},
    weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}, with a _reverse suffix for the backward
    direction), U(-1/sqrt(hidden), 1/sqrt(hidden)) initialisation, and the forward pass."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        for name, value in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size), ("num_layers", num_layers)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size

        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * dirs
            for direction in range(dirs):
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for stem, shape in shapes:
                    name = f"{stem}_l{layer}{suffix}"
                    setattr(self, name, Parameter(_C.empty(*shape, dtype=dtype, device=device)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        # Looked up by name on every use, so replacing a parameter (load_state_dict, assignment,
        # .to()) can never leave a stale list behind, which torch has to guard against.
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """A no-op: torch packs the weights into one buffer for cuDNN; the CPU kernel reads
        them where they are."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    # ---- shape checks (torch's messages)

    def check_input(self, input, batch_sizes):  # noqa: A002
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                             f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):  # noqa: A002
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        dirs = 2 if self.bidirectional else 1
        return (self.num_layers * dirs, mini_batch, self.proj_size if self.proj_size > 0 else self.hidden_size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):  # noqa: A002
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        return hx if permutation is None else hx.index_select(1, permutation)

    # ---- forward

    def _zeros_state(self, input, batch, size):  # noqa: A002
        dirs = 2 if self.bidirectional else 1
        return _C.zeros(self.num_layers * dirs, batch, size, dtype=input.dtype, device=input.device)

    def _run(self, input, hx, cx, batch_sizes=None):  # noqa: A002
        """The C++ recurrence (csrc/nn/rnn.cpp) over a (T, B, F) or (B, T, F) input, or over packed
        data given its batch_sizes; returns (output, h_n, c_n or None)."""
        if self.proj_size > 0:
            return self._run_projected(input, hx, cx, batch_sizes)
        layers = (self._flat_weights, self.mode, self.bias, self.num_layers, self.dropout, self.training,
                  self.bidirectional)
        if batch_sizes is None:
            out = _C._nn.rnn(input, hx, cx, *layers, self.batch_first)
        else:
            out = _C._nn.rnn_packed(input, batch_sizes, hx, cx, *layers)
        # c_n is only defined for LSTM; the other modes must not touch it.
        return out[0], out[1], (out[2] if cx is not None else None)

    def _run_projected(self, input, hx, cx, batch_sizes):  # noqa: A002
        """LSTM with proj_size > 0 (h = W_hr (o * tanh(c)), torch's LSTMP), step by step over
        kindle ops (the C++ recurrence has no projection). A padded input is read as packed data
        whose batch sizes are all B, so one loop serves both: at step t the first sizes[t] rows are
        live (sizes never grow); running backwards, rows join with their initial state."""
        from .. import functional as F
        if batch_sizes is None:
            x = input.transpose(0, 1) if self.batch_first else input
            steps, batch = x.shape[0], x.shape[1]
            sizes = [batch] * steps
            data = x.reshape(steps * batch, x.shape[2])
        else:
            sizes = [int(b) for b in batch_sizes]
            data = input
        offsets = [0]
        for n in sizes:
            offsets.append(offsets[-1] + n)
        dirs = 2 if self.bidirectional else 1
        per = 5 if self.bias else 3
        weights = self._flat_weights
        h_n, c_n = [], []
        layer_in = data
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                layer_in = F.dropout(layer_in, self.dropout, True)
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                ws = weights[k * per:(k + 1) * per]
                w_ih, w_hh, b_ih, b_hh, w_hr = ws if self.bias else (ws[0], ws[1], None, None, ws[2])
                gates_in = F.linear(layer_in, w_ih, b_ih)  # every step's input part at once
                h0, c0 = hx[k], cx[k]
                step_out = [None] * len(sizes)
                if d == 0:
                    h, c = h0[:sizes[0]], c0[:sizes[0]]
                    h_done, c_done = [], []
                    order = range(len(sizes))
                else:
                    h, c = h0[:0], c0[:0]
                    order = reversed(range(len(sizes)))
                for t in order:
                    n = sizes[t]
                    if d == 0 and n < h.shape[0]:  # rows whose sequence ended at the step before
                        h_done.insert(0, h[n:]), c_done.insert(0, c[n:])
                        h, c = h[:n], c[:n]
                    elif d == 1 and n > h.shape[0]:  # rows whose (reversed) sequence starts here
                        h, c = _C.cat([h, h0[h.shape[0]:n]]), _C.cat([c, c0[c.shape[0]:n]])
                    gates = gates_in[offsets[t]:offsets[t + 1]] + F.linear(h, w_hh, b_hh)
                    i, f, g, o = gates.chunk(4, 1)
                    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
                    h = F.linear(o.sigmoid() * c.tanh(), w_hr)
                    step_out[t] = h
                if d == 0:
                    h, c = _C.cat([h] + h_done), _C.cat([c] + c_done)
                h_n.append(h)
                c_n.append(c)
                outs.append(_C.cat(step_out))
            layer_in = outs[0] if dirs == 1 else _C.cat(outs, 1)
        out = layer_in
        if batch_sizes is None:
            out = out.reshape(len(sizes), sizes[0] if sizes else 0, out.shape[-1])
            if self.batch_first:
                out = out.transpose(0, 1)
        return out, _C.stack(h_n), _C.stack(c_n)

    def _forward(self, input, hx):  # noqa: A002
        """Shared by RNN, LSTM and GRU: hx is a tensor, or (h_0, c_0) for LSTM, or None."""
        lstm = self.mode == "LSTM"
        name = _NAMES[self.mode]
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            batch = int(batch_sizes[0])
            if hx is None:
                hx = self._zeros_state(data, batch, real_hidden)
                if lstm:
                    hx = (hx, self._zeros_state(data, batch, self.hidden_size))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(data, hx, batch_sizes)
            h0, c0 = hx if lstm else (hx, None)
            out, hn, cn = self._run(data, h0, c0, batch_sizes)
            hidden = (hn, cn) if lstm else hn
            return PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(hidden, unsorted_indices)

        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             f"{'instead' if name != 'RNN' else 'tensor instead'}")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)  # noqa: A001
        if hx is not None:
            want = 3 if is_batched else 2
            kind = "batched 3-D" if is_batched else "unbatched 2-D"
            if lstm and (hx[0].dim() != want or hx[1].dim() != want):
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            if not lstm and hx.dim() != want:
                raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hx.dim()}-D tensor")
            if not is_batched:
                hx = tuple(s.unsqueeze(1) for s in hx) if lstm else hx.unsqueeze(1)
        batch = input.size(0) if self.batch_first else input.size(1)
        if hx is None:
            hx = self._zeros_state(input, batch, real_hidden)
            if lstm:
                hx = (hx, self._zeros_state(input, batch, self.hidden_size))
        self.check_forward_args(input, hx, None)
        h0, c0 = hx if lstm else (hx, None)
        output, hn, cn = self._run(input, h0, c0)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hn = hn.squeeze(1)
            cn = cn.squeeze(1) if lstm else None
        return output, ((hn, cn) if lstm else hn)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).
    RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, device=None, dtype=None)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.__dict__["nonlinearity"] = args[3]
            args = args[:3] + args[4:]
        else:
            self.__dict__["nonlinearity"] = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):  # noqa: A002
        return self._forward(input, hx)


class LSTM(RNNBase):
    """Long short-term memory; forward(input, (h_0, c_0)=None) -> (output, (h_n, c_n)).
    LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, device=None, dtype=None); proj_size > 0 builds the
    weight_hr parameters but its forward raises NotImplementedError (no C++ kernel yet)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):  # noqa: A002
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        dirs = 2 if self.bidirectional else 1
        return (self.num_layers * dirs, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):  # noqa: A002
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input, hx=None):  # noqa: A002
        return self._forward(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit (torch's gate order r, z, n; n uses r * (W_hn h + b_hn)).
    GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, device=None, dtype=None)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):  # noqa: A002
        return self._forward(input, hx)


# ---- cells

class RNNCellBase(Module):
    """weight_ih (chunks*hidden, input), weight_hh (chunks*hidden, hidden), bias_ih, bias_hh,
    all U(-1/sqrt(hidden), 1/sqrt(hidden))."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        rows = num_chunks * hidden_size
        self.weight_ih = Parameter(_C.empty(rows, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(_C.empty(rows, hidden_size, dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(_C.empty(rows, dtype=dtype, device=device))
            self.bias_hh = Parameter(_C.empty(rows, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batch(self, name, input, states, n_states):  # noqa: A002
        """Checks the ranks; returns (is_batched, input as 2-D, the n_states states as 2-D, zeros
        when not given)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if states is not None:
            for idx, value in enumerate(states):
                if value.dim() not in (1, 2):
                    what = "hidden" if len(states) == 1 else f"hx[{idx}]"
                    raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)  # noqa: A001
            if states is not None:
                states = tuple(s.unsqueeze(0) for s in states)
        if states is None:
            zeros = _C.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            states = (zeros,) * n_states
        return is_batched, input, states


class RNNCell(RNNCellBase):
    """One Elman step: RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh')."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):  # noqa: A002
        is_batched, input, (h,) = self._batch("RNNCell", input, None if hx is None else (hx,), 1)  # noqa: A001
        if self.nonlinearity == "tanh":
            cell = _C._nn.rnn_tanh_cell
        elif self.nonlinearity == "relu":
            cell = _C._nn.rnn_relu_cell
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        ret = cell(input, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: forward(input, (h, c)=None) -> (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):  # noqa: A002
        is_batched, input, (h, c) = self._batch("LSTMCell", input, hx, 2)  # noqa: A001
        h, c = _C._nn.lstm_cell(input, h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: forward(input, hx=None) -> h'."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):  # noqa: A002
        is_batched, input, (h,) = self._batch("GRUCell", input, None if hx is None else (hx,), 1)  # noqa: A001
        ret = _C._nn.gru_cell(input, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)
