"""ResNets for 32x32 images, in the two forms the calibration literature uses.

- `resnet20`, `resnet110`: He et al. (2016, section 4.2) CIFAR ResNets — 3x3 stem with 16 channels, three stages of n
  BasicBlocks (16, 32, 64 channels; n = 3 → 20 layers, n = 18 → 110 layers), parameter-free "option A" shortcuts
  (stride-2 subsampling, zero-padded channels), global average pooling. 0.27M and 1.7M parameters, as published.
- `resnet50`: the kuangliu/pytorch-cifar ResNet-50 used by Mukhoti et al.'s focal_calibration and the AdaFocal
  reference code — torchvision's Bottleneck layout [3, 4, 6, 3] with a 3x3 stride-1 stem and no max-pool; 23.5M.
- `resnet110-bottleneck`: what those reference repositories call "resnet110": the same kuangliu ResNet with
  Bottleneck blocks [3, 4, 26, 3] (36 blocks x 3 + 2 = 110 layers). It is much larger than He et al.'s ResNet-110
  (45.9M parameters); use it to reproduce the paper's ResNet-110 rows exactly as its code ran.

Pooling is adaptive (global), which equals the reference's fixed 4x4 / 8x8 pooling on 32x32 inputs and also accepts
larger images. Convolutions get He-normal (fan_out) initialisation; batch-norm weight 1, bias 0.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def init_weights(module: nn.Module) -> None:
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


class ZeroPadShortcut(nn.Module):
    """He et al.'s option A: subsample by `stride` and zero-pad the new channels (no parameters)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        extra = out_channels - in_channels
        self.pad = (extra // 2, extra - extra // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x[:, :, :: self.stride, :: self.stride]
        return F.pad(x, (0, 0, 0, 0, *self.pad))


def make_shortcut(in_channels: int, out_channels: int, stride: int, kind: str = "projection") -> nn.Module:
    """A residual block's shortcut: the identity when the block keeps the shape, else a 1x1 convolution + batch norm
    projection, or He et al.'s parameter-free option A (`kind="zero-pad"`)."""
    if stride == 1 and in_channels == out_channels:
        return nn.Identity()
    if kind == "zero-pad":
        return ZeroPadShortcut(in_channels, out_channels, stride)
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False), nn.BatchNorm2d(out_channels)
    )


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_channels: int, channels: int, stride: int = 1, *, shortcut: str = "projection") -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.shortcut = make_shortcut(in_channels, channels, stride, shortcut)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_channels: int, channels: int, stride: int = 1) -> None:
        super().__init__()
        out_channels = channels * self.expansion
        self.conv1 = nn.Conv2d(in_channels, channels, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.conv3 = nn.Conv2d(channels, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.shortcut = make_shortcut(in_channels, out_channels, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """He et al.'s CIFAR ResNet: depth = 6n + 2 with n BasicBlocks in each of three stages (16, 32, 64 channels)."""

    def __init__(self, depth: int, *, num_classes: int, in_channels: int = 3) -> None:
        super().__init__()
        if (depth - 2) % 6 != 0:
            raise ValueError(f"CIFAR ResNet depth must be 6n + 2, got {depth}")
        n = (depth - 2) // 6
        self.conv1 = nn.Conv2d(in_channels, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        stages, channels = [], 16
        for width, stride in ((16, 1), (32, 2), (64, 2)):
            blocks = []
            for i in range(n):
                blocks.append(BasicBlock(channels, width, stride if i == 0 else 1, shortcut="zero-pad"))
                channels = width
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3 = stages
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        return self.fc(torch.flatten(self.pool(out), 1))


class KuangliuResNet(nn.Module):
    """ImageNet-style ResNet stages (64-512 channels x expansion) with a 3x3 stride-1 stem, no max-pool (CIFAR)."""

    def __init__(self, block: type[nn.Module], num_blocks: list[int], *, num_classes: int,
                 in_channels: int = 3) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        channels = 64
        stages = []
        for width, count, stride in zip((64, 128, 256, 512), num_blocks, (1, 2, 2, 2)):
            blocks = []
            for i in range(count):
                blocks.append(block(channels, width, stride if i == 0 else 1))
                channels = width * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        return self.fc(torch.flatten(self.pool(out), 1))
