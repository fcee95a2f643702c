"""Wide-ResNet for 32x32 images as in Mukhoti et al.'s focal_calibration code (which the AdaFocal paper used).

Depth 26, widen factor 10: a 16-channel 3x3 stem, three stages of n = (depth - 2) / 6 = 4 post-activation BasicBlocks
(conv-BN-ReLU-conv-BN + shortcut, ReLU) with 160, 320, 640 channels, 1x1 conv + BN projection shortcuts, global
average pooling; about 36.5M parameters. (Zagoruyko & Komodakis' own WRN uses pre-activation blocks and depth
6n + 4; the reference code's form is kept here so results are comparable with the paper.) Dropout between the two
convolutions of a block is an option (0 by default, as in the reference).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from adacal.models.resnet import init_weights, make_shortcut


class WideBasicBlock(nn.Module):
    def __init__(self, in_channels: int, channels: int, stride: int, dropout: float) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.shortcut = make_shortcut(in_channels, channels, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.dropout(F.relu(self.bn1(self.conv1(x))))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class WideResNet(nn.Module):
    def __init__(
        self, depth: int, widen_factor: int, *, num_classes: int, in_channels: int = 3, dropout: float = 0.0
    ) -> None:
        super().__init__()
        if (depth - 2) % 6 != 0:
            raise ValueError(f"Wide-ResNet depth must be 6n + 2, got {depth}")
        n = (depth - 2) // 6
        self.conv1 = nn.Conv2d(in_channels, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        channels = 16
        stages = []
        for width, stride in ((16 * widen_factor, 1), (32 * widen_factor, 2), (64 * widen_factor, 2)):
            blocks = []
            for i in range(n):
                blocks.append(WideBasicBlock(channels, width, stride if i == 0 else 1, dropout))
                channels = width
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3 = stages
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        return self.fc(torch.flatten(self.pool(out), 1))
