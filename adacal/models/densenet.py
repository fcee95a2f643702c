"""DenseNet-121 for 32x32 images (kuangliu/pytorch-cifar form, used by focal_calibration and the AdaFocal paper).

Growth rate 32, dense blocks [6, 12, 24, 16] of bottleneck layers (BN-ReLU-1x1 conv to 4k, BN-ReLU-3x3 conv to k),
a 3x3 stem conv to 2k channels with no pooling, transitions (BN-ReLU-1x1 conv halving channels, 2x2 average pool),
final BN-ReLU and global average pooling; about 7.0M parameters.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from adacal.models.resnet import init_weights


class DenseLayer(nn.Module):
    def __init__(self, in_channels: int, growth_rate: int) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_channels)
        self.conv1 = nn.Conv2d(in_channels, 4 * growth_rate, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(4 * growth_rate)
        self.conv2 = nn.Conv2d(4 * growth_rate, growth_rate, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv1(F.relu(self.bn1(x)))
        out = self.conv2(F.relu(self.bn2(out)))
        return torch.cat([out, x], 1)


class Transition(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(in_channels)
        self.conv = nn.Conv2d(in_channels, out_channels, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)


class DenseNet(nn.Module):
    def __init__(
        self,
        blocks: tuple[int, ...] = (6, 12, 24, 16),
        *,
        growth_rate: int = 32,
        reduction: float = 0.5,
        num_classes: int,
        in_channels: int = 3,
    ) -> None:
        super().__init__()
        channels = 2 * growth_rate
        self.conv1 = nn.Conv2d(in_channels, channels, 3, padding=1, bias=False)
        features: list[nn.Module] = []
        for i, count in enumerate(blocks):
            layers = []
            for _ in range(count):
                layers.append(DenseLayer(channels, growth_rate))
                channels += growth_rate
            features.append(nn.Sequential(*layers))
            if i < len(blocks) - 1:
                out_channels = int(math.floor(channels * reduction))
                features.append(Transition(channels, out_channels))
                channels = out_channels
        self.features = nn.Sequential(*features)
        self.bn = nn.BatchNorm2d(channels)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.features(self.conv1(x))
        out = F.relu(self.bn(out))
        return self.fc(torch.flatten(self.pool(out), 1))
