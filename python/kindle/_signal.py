"""Window functions and the short-time Fourier transform (torch.hann_window ... torch.stft/istft),
composed from ops that have derivatives: frames are an unfold view, the transform is kindle.fft,
and istft's overlap-add is an index_add."""
import math

from . import _C

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window", "stft", "istft"]


def _window(name, window_length, periodic, dtype, requires_grad, values):
    """values(n, N) gives the window at positions n (float64) for the symmetric length N; a
    periodic window is the symmetric one of length window_length + 1 without its last point."""
    if not isinstance(window_length, int) or isinstance(window_length, bool):
        raise TypeError(f"{name}(): argument 'window_length' must be int, not {type(window_length).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    dt = dtype or _C.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if window_length == 0:
        w = _C.zeros(0, dtype=dt)
    elif window_length == 1:
        w = _C.ones(1, dtype=dt)
    else:
        N = window_length + 1 if periodic else window_length
        n = _C.arange(window_length, dtype=_C.float64)
        w = values(n, N).to(dt)
    if requires_grad:
        w.requires_grad_()
    return w


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("hann_window", window_length, periodic, dtype, requires_grad,
                   lambda n, N: 0.5 - 0.5 * _C.cos(n * (2 * math.pi / (N - 1))))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    return _window("hamming_window", window_length, periodic, dtype, requires_grad,
                   lambda n, N: alpha - beta * _C.cos(n * (2 * math.pi / (N - 1))))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("blackman_window", window_length, periodic, dtype, requires_grad,
                   lambda n, N: 0.42 - 0.5 * _C.cos(n * (2 * math.pi / (N - 1)))
                   + 0.08 * _C.cos(n * (4 * math.pi / (N - 1))))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad,
                   lambda n, N: 1 - _C.abs(n * (2.0 / (N - 1)) - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    def values(n, N):
        alpha = (N - 1) / 2.0
        r = ((n - alpha) / alpha).clamp(-1, 1)
        return _C.i0(beta * _C.sqrt(1 - r * r)) / _C.i0(_C.tensor(float(beta), dtype=_C.float64))
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, values)


def _full_window(window, win_length, n_fft, dtype, op, device):
    """The window centred in n_fft points (zeros either side), ones when none is given."""
    if window is None:
        window = _C.ones(win_length, dtype=dtype, device=device)
    elif window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{op}: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = _C.cat([_C.zeros(left, dtype=window.dtype, device=window.device), window,
                         _C.zeros(n_fft - win_length - left, dtype=window.dtype, device=window.device)])
    return window


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",  # noqa: A002
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """The short-time Fourier transform: (freq, frames) per signal, as torch.stft."""
    if return_complex is None:
        if not (input.is_complex() or (window is not None and window.is_complex())):
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                               "require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if n_fft <= 0 or hop_length <= 0 or not 0 < win_length <= n_fft:
        raise RuntimeError(f"stft: expected 0 < n_fft, 0 < hop_length and 0 < win_length <= n_fft, but got "
                           f"n_fft={n_fft}, hop_length={hop_length}, win_length={win_length}")
    x = input if input.dim() == 2 else input.unsqueeze(0)
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(_C.get_default_dtype())
    if center:
        from .nn import functional as F
        pad = n_fft // 2
        x = F.pad(x.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1)
    if x.shape[-1] < n_fft:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]}, but got n_fft={n_fft}")
    w = _full_window(window, win_length, n_fft, x.dtype if not x.is_complex() else _C.real(x).dtype, "stft", x.device)
    frames = x.unfold(-1, n_fft, hop_length) * w  # (B, n_frames, n_fft)
    if onesided is None:
        onesided = not (x.is_complex() or w.is_complex())
    norm = "ortho" if normalized else "backward"
    from . import fft
    if onesided:
        if frames.is_complex():
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        spec = fft.rfft(frames, dim=-1, norm=norm)
    else:
        spec = fft.fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(-1, -2)
    if input.dim() == 1:
        spec = spec.squeeze(0)
    return spec if return_complex else _C.view_as_real(spec.contiguous())


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,  # noqa: A002
          onesided=None, length=None, return_complex=False):
    """The inverse of stft by windowed overlap-add, divided by the summed squared window."""
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex values, got {input.dim()}")
    spec = input if input.dim() == 3 else input.unsqueeze(0)
    n_freq, n_frames = spec.shape[-2], spec.shape[-1]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and n_freq != n_fft // 2 + 1:
        raise RuntimeError(f"istft: expected the frequency dimension (second to last) of the input to equal "
                           f"n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    if not onesided and n_freq != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension of the input to equal n_fft when "
                           f"onesided=False, but got {n_freq}")
    from . import fft
    norm = "ortho" if normalized else "backward"
    cols = spec.transpose(-1, -2)  # (B, n_frames, n_freq)
    if onesided:
        if return_complex:
            raise RuntimeError("cannot have onesided output if window or input is complex")
        frames = fft.irfft(cols, n=n_fft, dim=-1, norm=norm)
    else:
        frames = fft.ifft(cols, n=n_fft, dim=-1, norm=norm)
        if not return_complex:
            frames = _C.real(frames)
    real_dt = _C.real(spec).dtype
    w = _full_window(window, win_length, n_fft, real_dt, "istft", spec.device)
    frames = frames * w
    B = frames.shape[0]
    expected = n_fft + hop_length * (n_frames - 1)
    idx = (_C.arange(n_frames).unsqueeze(1) * hop_length + _C.arange(n_fft).unsqueeze(0)).reshape(-1)
    y = _C.zeros((B, expected), dtype=frames.dtype).index_add(1, idx, frames.reshape(B, -1))
    envelope = _C.zeros(expected, dtype=w.dtype).index_add(0, idx, (w * w).expand(n_frames, n_fft).reshape(-1))
    start = n_fft // 2 if center else 0
    end = expected - (n_fft // 2 if center else 0) if length is None else start + length
    y = y[:, start:min(end, expected)]
    env = envelope[start:min(end, expected)]
    if bool((env.abs() < 1e-11).any()):
        raise RuntimeError("istft: window overlap add min: the window's squared sum vanishes somewhere (NOLA "
                           "condition failed)")
    y = y / env
    if length is not None and y.shape[-1] < length:
        y = _C.cat([y, _C.zeros((B, length - y.shape[-1]), dtype=y.dtype)], -1)
    return y.squeeze(0) if input.dim() == 2 else y
