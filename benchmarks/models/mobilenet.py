"""MobileNet-v2, written the way torchvision.models.mobilenetv2 writes it.

Conv-BN-ReLU6 blocks (ReLU6(inplace=True)), inverted residuals (1x1 expansion, 3x3 depthwise,
1x1 linear projection; a residual connection when the stride is 1 and the widths agree), the
1280-wide last 1x1 convolution, global average pool, dropout and a linear classifier.
Initialisation as torchvision's.
"""


def _make_divisible(v, divisor=8, min_value=None):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:  # do not round down by more than 10%
        new_v += divisor
    return new_v


def build(lib, num_classes=1000, width_mult=1.0):
    nn, F = lib.nn, lib.nn.functional

    class ConvBNReLU(nn.Sequential):
        def __init__(self, cin, cout, kernel_size=3, stride=1, groups=1):
            padding = (kernel_size - 1) // 2
            super().__init__(
                nn.Conv2d(cin, cout, kernel_size, stride, padding, groups=groups, bias=False),
                nn.BatchNorm2d(cout),
                nn.ReLU6(inplace=True),
            )

    class InvertedResidual(nn.Module):
        def __init__(self, inp, oup, stride, expand_ratio):
            super().__init__()
            hidden_dim = int(round(inp * expand_ratio))
            self.use_res_connect = stride == 1 and inp == oup
            layers = []
            if expand_ratio != 1:
                layers.append(ConvBNReLU(inp, hidden_dim, kernel_size=1))
            layers += [
                ConvBNReLU(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),  # depthwise
                nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),                     # pointwise-linear
                nn.BatchNorm2d(oup),
            ]
            self.conv = nn.Sequential(*layers)

        def forward(self, x):
            if self.use_res_connect:
                return x + self.conv(x)
            return self.conv(x)

    class MobileNetV2(nn.Module):
        def __init__(self, num_classes=1000, width_mult=1.0, round_nearest=8, dropout=0.2):
            super().__init__()
            input_channel = _make_divisible(32 * width_mult, round_nearest)
            self.last_channel = _make_divisible(1280 * max(1.0, width_mult), round_nearest)
            settings = [  # t (expansion), c (channels), n (repeats), s (first stride)
                [1, 16, 1, 1],
                [6, 24, 2, 2],
                [6, 32, 3, 2],
                [6, 64, 4, 2],
                [6, 96, 3, 1],
                [6, 160, 3, 2],
                [6, 320, 1, 1],
            ]
            features = [ConvBNReLU(3, input_channel, stride=2)]
            for t, c, n, s in settings:
                output_channel = _make_divisible(c * width_mult, round_nearest)
                for i in range(n):
                    features.append(InvertedResidual(input_channel, output_channel, s if i == 0 else 1, t))
                    input_channel = output_channel
            features.append(ConvBNReLU(input_channel, self.last_channel, kernel_size=1))
            self.features = nn.Sequential(*features)
            self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))

            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out")
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.ones_(m.weight)
                    nn.init.zeros_(m.bias)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.zeros_(m.bias)

        def forward(self, x):
            x = self.features(x)
            x = F.adaptive_avg_pool2d(x, (1, 1))
            x = lib.flatten(x, 1)
            return self.classifier(x)

    return MobileNetV2(num_classes, width_mult)
