"""ResNet models in the torchvision layout (BasicBlock / Bottleneck, conv helpers, zero-init
of the last BN in each residual branch), with a `width` knob so small variants can be built.

Run as a script, it builds a narrow resnet18 and a narrow resnet50, does one SGD step on a
fixed batch and prints the outputs.

    python resnet_file.py [--init weights.pt] [--save-init weights.pt]
"""
import argparse
import sys
import warnings
from typing import Any, Callable, List, Optional, Type, Union

import torch
import torch.nn as nn
from torch import Tensor

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50"]


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1) -> nn.Conv2d:
    """3x3 convolution with padding"""
    return nn.Conv2d(
        in_planes,
        out_planes,
        kernel_size=3,
        stride=stride,
        padding=dilation,
        groups=groups,
        bias=False,
        dilation=dilation,
    )


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """1x1 convolution"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion: int = 1

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: Optional[nn.Module] = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Optional[Callable[..., nn.Module]] = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        # Both self.conv1 and self.downsample layers downsample the input when stride != 1
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)

        if self.downsample is not None:
            identity = self.downsample(x)

        out += identity
        out = self.relu(out)

        return out


class Bottleneck(nn.Module):
    # Bottleneck in torchvision places the stride for downsampling at 3x3 convolution(self.conv2)
    # while original implementation places the stride at the first 1x1 convolution(self.conv1)
    # according to "Deep residual learning for image recognition" https://arxiv.org/abs/1512.03385.
    # This variant is also known as ResNet V1.5.

    expansion: int = 4

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: Optional[nn.Module] = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Optional[Callable[..., nn.Module]] = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        # Both self.conv2 and self.downsample layers downsample the input when stride != 1
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)

        out = self.conv3(out)
        out = self.bn3(out)

        if self.downsample is not None:
            identity = self.downsample(x)

        out += identity
        out = self.relu(out)

        return out


class ResNet(nn.Module):
    def __init__(
        self,
        block: Type[Union[BasicBlock, Bottleneck]],
        layers: List[int],
        num_classes: int = 1000,
        zero_init_residual: bool = False,
        groups: int = 1,
        width_per_group: int = 64,
        replace_stride_with_dilation: Optional[List[bool]] = None,
        norm_layer: Optional[Callable[..., nn.Module]] = None,
        width: int = 64,
        aux_logits: bool = False,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer

        self.inplanes = width
        self.dilation = 1
        if replace_stride_with_dilation is None:
            # each element in the tuple indicates if we should replace
            # the 2x2 stride with a dilated convolution instead
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError(
                "replace_stride_with_dilation should be None "
                f"or a 3-element tuple, got {replace_stride_with_dilation}"
            )
        self.groups = groups
        self.base_width = width_per_group
        self.aux_logits = aux_logits
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2, dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, width * 4, layers[2], stride=2, dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, width * 8, layers[3], stride=2, dilate=replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes)
        # an auxiliary classifier on the layer3 features, used during training only
        self.aux = nn.Sequential(
            nn.AdaptiveAvgPool2d((1, 1)),
            nn.Flatten(),
            nn.Linear(width * 4 * block.expansion, num_classes),
        ) if aux_logits else None

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

        # Zero-initialize the last BN in each residual branch,
        # so that the residual branch starts with zeros, and each residual block behaves like an identity.
        # This improves the model by 0.2~0.3% according to https://arxiv.org/abs/1706.02677
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)  # type: ignore[arg-type]
                elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)  # type: ignore[arg-type]

    def _make_layer(
        self,
        block: Type[Union[BasicBlock, Bottleneck]],
        planes: int,
        blocks: int,
        stride: int = 1,
        dilate: bool = False,
    ) -> nn.Sequential:
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                norm_layer(planes * block.expansion),
            )

        layers = []
        layers.append(
            block(
                self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation, norm_layer
            )
        )
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(
                block(
                    self.inplanes,
                    planes,
                    groups=self.groups,
                    base_width=self.base_width,
                    dilation=self.dilation,
                    norm_layer=norm_layer,
                )
            )

        return nn.Sequential(*layers)

    @torch.jit.unused
    def eager_outputs(self, x: Tensor, aux: Optional[Tensor]) -> Union[Tensor, tuple]:
        if self.training and self.aux_logits:
            return x, aux
        return x

    def _forward_impl(self, x: Tensor):
        # See note [TorchScript super()]
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)

        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        aux: Optional[Tensor] = None
        if self.aux is not None and self.training:
            aux = self.aux(x)
        x = self.layer4(x)

        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.fc(x)

        return x, aux

    def forward(self, x: Tensor):
        x, aux = self._forward_impl(x)
        aux_defined = self.training and self.aux_logits
        if torch.jit.is_scripting():
            if not aux_defined:
                warnings.warn("Scripted ResNet always returns a (logits, aux) tuple")
            return x, aux
        else:
            return self.eager_outputs(x, aux)


def _resnet(
    block: Type[Union[BasicBlock, Bottleneck]],
    layers: List[int],
    weights: Optional[str],
    progress: bool,
    **kwargs: Any,
) -> ResNet:
    model = ResNet(block, layers, **kwargs)

    if weights is not None:
        model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))

    return model


def resnet18(*, weights: Optional[str] = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-18 from `Deep Residual Learning for Image Recognition <https://arxiv.org/abs/1512.03385>`__."""
    return _resnet(BasicBlock, [2, 2, 2, 2], weights, progress, **kwargs)


def resnet34(*, weights: Optional[str] = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-34 from `Deep Residual Learning for Image Recognition <https://arxiv.org/abs/1512.03385>`__."""
    return _resnet(BasicBlock, [3, 4, 6, 3], weights, progress, **kwargs)


def resnet50(*, weights: Optional[str] = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-50 from `Deep Residual Learning for Image Recognition <https://arxiv.org/abs/1512.03385>`__."""
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **kwargs)


# -----------------------------------------------------------------------------

def fixed_batch(n, size):
    """A batch of images that needs no random numbers: smooth stripes and rings."""
    ys = torch.linspace(-1.0, 1.0, size).view(1, 1, size, 1)
    xs = torch.linspace(-1.0, 1.0, size).view(1, 1, 1, size)
    k = torch.arange(n, dtype=torch.float32).view(n, 1, 1, 1)
    c = torch.arange(3, dtype=torch.float32).view(1, 3, 1, 1)
    images = torch.sin(3.0 * xs * (k + 1) + c) * torch.cos(2.0 * ys * (c + 1) - k) + 0.5 * torch.sin(5.0 * (xs ** 2 + ys ** 2) + k)
    labels = torch.arange(n) % 10
    return images, labels


def train_step(name, model, images, labels):
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)
    model.train()
    for step in range(2):
        optimizer.zero_grad()
        output = model(images)
        if isinstance(output, tuple):
            logits, aux = output
            loss = criterion(logits, labels) + 0.3 * criterion(aux, labels)
        else:
            logits = output
            loss = criterion(logits, labels)
        loss.backward()
        optimizer.step()
        print(f"{name} step {step}: loss {loss.item():.6f}, logits sum {logits.sum().item():.6f}")
    grad_norm = torch.sqrt(sum((p.grad ** 2).sum() for p in model.parameters() if p.grad is not None))
    print(f"{name} grad norm {grad_norm.item():.6f}")
    model.eval()
    with torch.no_grad():
        out = model(images)
    print(f"{name} eval output {tuple(out.shape)}: sum {out.sum().item():.6f}, abs sum {out.abs().sum().item():.6f}")
    print(f"{name} predictions {out.argmax(dim=1).tolist()}")
    bn = model.bn1
    print(f"{name} bn1 running mean sum {bn.running_mean.sum().item():.6f}, "
          f"var sum {bn.running_var.sum().item():.6f}, batches {bn.num_batches_tracked.item()}")


def main():
    parser = argparse.ArgumentParser(description="small ResNets: one training step")
    parser.add_argument("--init", default="", help="initial weights: {'resnet18': sd, 'resnet50': sd}")
    parser.add_argument("--save-init", default="", help="save the initial weights here and exit")
    parser.add_argument("--width", type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(0)
    models = {
        "resnet18": resnet18(num_classes=10, width=args.width, zero_init_residual=True),
        "resnet50": _resnet(Bottleneck, [1, 1, 1, 1], None, True, num_classes=10, width=args.width,
                            aux_logits=True),
    }
    if args.save_init:
        torch.save({name: m.state_dict() for name, m in models.items()}, args.save_init)
        print(f"saved initial weights to {args.save_init}")
        return 0
    if args.init:
        state = torch.load(args.init)
        for name, m in models.items():
            m.load_state_dict(state[name])

    for name, m in models.items():
        n_params = sum(p.numel() for p in m.parameters())
        n_trainable = sum(p.numel() for p in m.parameters() if p.requires_grad)
        print(f"{name}: {n_params} parameters ({n_trainable} trainable), "
              f"{len(list(m.modules()))} modules, {len(m.state_dict())} state entries")

    images, labels = fixed_batch(4, 64)
    print(f"input {images.shape}, {images.dtype}")
    for name, m in models.items():
        train_step(name, m, images, labels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
