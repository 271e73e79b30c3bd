"""torch.nn.utils: gradient clipping, parameter/vector conversion, sequence padding and packing."""
from . import clip_grad, convert_parameters, rnn  # noqa: F401
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,  # noqa: F401
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
