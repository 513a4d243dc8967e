"""CNN: a small convolutional image classifier, the ViT's counterpart with the image bias built in.

References: LeCun et al., "Gradient-Based Learning Applied to Document Recognition" (1998);
Ioffe & Szegedy, "Batch Normalization" (2015); Bishop & Bishop (2024), ch. 10; the lecture
notes' "a convolution bakes in locality and weight sharing, ViT relearns them from data".
Three 3x3 convolutions see growing neighbourhoods of pixels (3x3, 5x5, then 10x10 after the
2x2 max-pool), each output channel one pattern detector slid over the whole image; a global
average over the positions makes one number per channel, read by a linear head.

    images (B, c, h, w)
    -> conv 3x3 + BatchNorm + ReLU      (B, C1, h, w)
    -> conv 3x3 + BatchNorm + ReLU      (B, C2, h, w)
    -> max-pool 2x2                     (B, C2, h/2, w/2)
    -> conv 3x3 + ReLU                  (B, C3, h/2, w/2)
    -> mean over positions              (B, C3)
    -> Linear                           (B, K)

Shape letters: B batch, c input channels (in_channels), h = w = image_size, C1, C2, C3 the
channels of the three convolutions (`channels`), K classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor

# ----------------------------------------------------------------------------- parts


class ConvBlock(nn.Module):
    """A 3x3 convolution (padding 1: the image keeps its size), BatchNorm, ReLU.

    With the norm, the convolution has no bias: BatchNorm subtracts each channel's mean, so a
    bias would cancel out (its own `bias` plays that part).

    Shape:
        x: (B, in_channels, h, w) -> (B, out_channels, h, w)
    """

    def __init__(self, in_channels: int, out_channels: int, batch_norm: bool = True):
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=not batch_norm)
        self.norm = nn.BatchNorm2d(out_channels) if batch_norm else None
        self.act = nn.ReLU()

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv(x)  # (B, out, h, w): each output pixel sees a 3x3 window of every input channel
        if self.norm is not None:
            x = self.norm(x)  # (B, out, h, w): each channel to mean 0, variance 1 over (B, h, w)
        return self.act(x)


# ----------------------------------------------------------------------------- config


@dataclass
class CNNConfig:
    image_size: int = 8  # square images, image_size x image_size pixels (even: one 2x2 pool)
    in_channels: int = 1
    num_classes: int = 10
    channels: tuple[int, int, int] = (32, 64, 128)  # C1, C2, C3
    dropout: float = 0.0  # before the head

    def num_parameters(self) -> int:
        """The CNN's parameter count, from the sizes alone (nothing is built): 3x3 convolutions
        9 c_in c_out (the first two without bias, each with a BatchNorm's 2 c_out; the third
        with its bias c_out) and the head (C3 + 1) K. BatchNorm's running statistics are
        buffers, not parameters."""
        C1, C2, C3 = self.channels
        return (9 * self.in_channels * C1 + 2 * C1 + 9 * C1 * C2 + 2 * C2 + 9 * C2 * C3 + C3
                + (C3 + 1) * self.num_classes)

    def __post_init__(self) -> None:
        self.channels = tuple(self.channels)  # a list from a checkpoint's JSON
        if len(self.channels) != 3 or min(self.channels) < 1:
            raise ValueError(f"CNN: channels must be three positive counts (C1, C2, C3), got {self.channels}")
        if self.image_size < 2 or self.image_size % 2:
            raise ValueError(f"CNN: image_size must be even (one 2x2 max-pool), got {self.image_size}")


PRESETS = {
    "tiny": dict(channels=(4, 8, 8)),
    "quick": dict(channels=(32, 64, 128), dropout=0.1),  # ~94k parameters, the quick ViT's ~102k
}

# ----------------------------------------------------------------------------- model


class CNN(nn.Module):
    """Convolutional classifier.

    Shape:
        images: (B, in_channels, image_size, image_size), float.
        forward returns logits (B, K).
    """

    def __init__(self, config: CNNConfig):
        self.config = config
        C1, C2, C3 = config.channels
        self.block1 = ConvBlock(config.in_channels, C1)
        self.block2 = ConvBlock(C1, C2)
        self.pool = nn.MaxPool2d(2)
        self.block3 = ConvBlock(C2, C3, batch_norm=False)
        self.drop = nn.Dropout(config.dropout)
        self.head = nn.Linear(C3, config.num_classes)
        # The convolutions keep nn's (PyTorch's) default init; the head starts at zero, as the
        # ViT's, so the first predictions are uniform (loss = log K).
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def features(self, images: Tensor) -> Tensor:
        """One number per channel of the last convolution (B, C3): what the head reads."""
        cfg = self.config
        expected = (cfg.in_channels, cfg.image_size, cfg.image_size)
        if images.ndim != 4 or tuple(images.shape[1:]) != expected:
            raise ValueError(
                f"CNN: expected images of shape (B, {', '.join(map(str, expected))}), "
                f"got {tuple(images.shape)}"
            )
        x = self.block1(images)  # (B, C1, h, w): strokes and edges, 3x3 pixels each
        x = self.block2(x)  # (B, C2, h, w): 5x5 pixels each
        x = self.pool(x)  # (B, C2, h/2, w/2): the strongest response in each 2x2 square
        x = self.block3(x)  # (B, C3, h/2, w/2): 10x10 pixels each, the whole digit
        return x.mean(dim=(2, 3))  # (B, C3): global average pool, where a pattern is no longer matters

    def forward(self, images: Tensor) -> Tensor:
        return self.head(self.drop(self.features(images)))  # (B, K)

    def loss(self, images: Tensor, labels: Tensor, label_smoothing: float = 0.0) -> Tensor:
        """Mean cross-entropy of the class logits against labels (B,)."""
        logits = self(images)  # (B, K)
        return F.cross_entropy(logits, labels, label_smoothing=label_smoothing)

    def predict(self, images: Tensor) -> np.ndarray:
        """The most likely class of each image, (B,) int64 (no graph is recorded; BatchNorm
        uses its running statistics)."""
        with nn.evaluating(self):
            with mg.no_grad():
                logits = self(images)  # (B, K)
        return logits._data.argmax(-1)
