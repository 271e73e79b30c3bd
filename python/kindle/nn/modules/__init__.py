"""The layers of kindle.nn (torch.nn.modules)."""
from .module import Module  # noqa: F401
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .linear import Bilinear, Identity, Linear  # noqa: F401
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d,  # noqa: F401
                      AdaptiveMaxPool2d, AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, FractionalMaxPool2d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d,
                      FractionalMaxPool3d, LPPool1d, LPPool2d, LPPool3d, MaxPool1d, MaxPool2d, MaxPool3d)
from .batchnorm import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d,  # noqa: F401
                        InstanceNorm3d, SyncBatchNorm)
from .normalization import CrossMapLRN2d, GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm  # noqa: F401
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout  # noqa: F401
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .activation import (CELU, ELU, GELU, GLU, SELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU,  # noqa: F401
                         LogSigmoid, LogSoftmax, Mish, PReLU, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softmax2d,
                         Softmin, Softplus, Softsign, Tanh, Tanhshrink, Threshold, Softshrink, Hardshrink, RReLU)
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss, CTCLoss,  # noqa: F401
                   GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss,
                   NLLLoss, MultiLabelMarginLoss, MultiMarginLoss, PoissonNLLLoss, SmoothL1Loss, TripletMarginLoss,
                   TripletMarginWithDistanceLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, NLLLoss2d)
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .shape import (ChannelShuffle, CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d,  # noqa: F401
                    ConstantPad2d, ConstantPad3d, Flatten, Fold, PixelShuffle, PixelUnshuffle, ReflectionPad1d,
                    ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d,
                    Unflatten, Unfold, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d, ZeroPad1d, ZeroPad2d,
                    ZeroPad3d)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from .attention import MultiheadAttention  # noqa: F401
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from .container import Container  # noqa: F401
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d,  # noqa: F401
                   LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
                   LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear, LazyModuleMixin, UninitializedBuffer,
                   UninitializedParameter)
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: F401
                          TransformerEncoder, TransformerEncoderLayer)

from . import (activation, adaptive, attention, batchnorm, container, conv, distance, dropout, lazy, linear,  # noqa: E402
               loss, module, normalization, pooling, rnn, shape, sparse, transformer)
# torch's module names for the layers kindle keeps in shape.py and batchnorm.py / lazy.py
from . import (channelshuffle, flatten, fold, instancenorm, padding, pixelshuffle, upsampling,  # noqa: E402,F401
               utils)

__all__ = [name for m in (module, container, linear, conv, pooling, batchnorm, normalization, dropout, sparse,
                          activation, loss, distance, shape, rnn, transformer, lazy, adaptive) for name in m.__all__] + \
    ["MultiheadAttention"]

# torch's modules also hold the lazy forms of their layers (batchnorm.LazyBatchNorm1d, ...); here
# they live in lazy.py, which imports these modules, so they are attached once all are loaded.
for _mod, _names in ((batchnorm, ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d"]),
                     (conv, ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
                             "LazyConvTranspose3d"]),
                     (linear, ["LazyLinear"])):
    for _name in _names:
        setattr(_mod, _name, getattr(lazy, _name))
    _mod.__all__ = list(_mod.__all__) + _names
del _mod, _names, _name
