"""SqueezeNet 1.1, written the way torchvision.models.squeezenet writes it: Fire modules
(1x1 squeeze, then 1x1 and 3x3 expand concatenated), max-pools with ceil_mode, and a 1x1
convolution classifier followed by global average pool. Initialisation as torchvision's.
"""


def build(lib, num_classes=1000, dropout=0.5):
    nn = lib.nn

    class Fire(nn.Module):
        def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes):
            super().__init__()
            self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
            self.squeeze_activation = nn.ReLU(inplace=True)
            self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
            self.expand1x1_activation = nn.ReLU(inplace=True)
            self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
            self.expand3x3_activation = nn.ReLU(inplace=True)

        def forward(self, x):
            x = self.squeeze_activation(self.squeeze(x))
            return lib.cat([self.expand1x1_activation(self.expand1x1(x)),
                            self.expand3x3_activation(self.expand3x3(x))], 1)

    class SqueezeNet(nn.Module):
        def __init__(self, num_classes=1000, dropout=0.5):
            super().__init__()
            self.num_classes = num_classes
            self.features = nn.Sequential(  # version 1.1
                nn.Conv2d(3, 64, kernel_size=3, stride=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(64, 16, 64, 64),
                Fire(128, 16, 64, 64),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(128, 32, 128, 128),
                Fire(256, 32, 128, 128),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(256, 48, 192, 192),
                Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256),
                Fire(512, 64, 256, 256),
            )
            final_conv = nn.Conv2d(512, self.num_classes, kernel_size=1)
            self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                            nn.AdaptiveAvgPool2d((1, 1)))
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    if m is final_conv:
                        nn.init.normal_(m.weight, mean=0.0, std=0.01)
                    else:
                        nn.init.kaiming_uniform_(m.weight)
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)

        def forward(self, x):
            x = self.features(x)
            x = self.classifier(x)
            return lib.flatten(x, 1)

    return SqueezeNet(num_classes, dropout)
