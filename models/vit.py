"""ViT: the Vision Transformer, an image classifier with no convolution at all.

References: Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers for Image
Recognition at Scale" (ICLR 2021); Bishop & Bishop (2024), Fig. 12.22; the lecture notes' "cut
the image into patches, treat them as tokens". The image is cut into p x p patches, each patch
is flattened and mapped to a vector by one Linear layer (a "word"), a learned class token is put
in front, learned positions are added, and a stack of pre-norm transformer encoder layers mixes
the tokens. The class token's final vector, after a LayerNorm, is read by a linear head.

Shape letters: B batch, C embedding size (embed_dim), H heads, D head size (C / H),
N number of patches ((image_size / p)^2), T = N + 1 tokens (the class token first),
P = in_channels * p * p numbers per patch, K classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor

# ----------------------------------------------------------------------------- parts


def patchify(images: Tensor, patch_size: int) -> Tensor:
    """Cut images (B, c, h, w) into non-overlapping p x p patches, each flattened: (B, N, P).

    Patches are numbered row by row (left to right, then top to bottom); inside a patch the
    numbers are ordered (channel, row, column), as a convolution's (c, p, p) kernel sees them.
    Pure rearrangement (reshape + permute), so its gradient is the inverse rearrangement.
    """
    if images.ndim != 4 or images.shape[2] % patch_size or images.shape[3] % patch_size:
        raise ValueError(
            f"patchify: images of shape {tuple(images.shape)} are not (B, c, h, w) with h and w "
            f"divisible by the patch size {patch_size}"
        )
    B, c, h, w = images.shape
    p = patch_size
    x = images.reshape(B, c, h // p, p, w // p, p)  # (B, c, h/p, p, w/p, p)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, h/p, w/p, c, p, p): patch grid first, pixels last
    return x.reshape(B, (h // p) * (w // p), c * p * p)  # (B, N, P)


class PatchEmbedding(nn.Module):
    """Flatten each p x p patch and embed it with one shared Linear map P -> C.

    This is what ViT's stride-p convolution computes, written as what it is: a linear layer
    applied to every patch (a patch is to ViT what a word is to GPT).
    """

    def __init__(self, config: ViTConfig):
        self.image_size, self.patch_size, self.in_channels = (
            config.image_size, config.patch_size, config.in_channels)
        self.proj = nn.Linear(config.in_channels * config.patch_size ** 2, config.embed_dim)

    def forward(self, images: Tensor) -> Tensor:
        expected = (self.in_channels, self.image_size, self.image_size)
        if images.ndim != 4 or tuple(images.shape[1:]) != expected:
            raise ValueError(
                f"ViT: expected images of shape (B, {', '.join(map(str, expected))}), "
                f"got {tuple(images.shape)}"
            )
        patches = patchify(images, self.patch_size)  # (B, N, P)
        return self.proj(patches)  # (B, N, C)


# ----------------------------------------------------------------------------- config


@dataclass
class ViTConfig:
    image_size: int = 8  # square images, image_size x image_size pixels
    patch_size: int = 2  # p: must divide image_size
    in_channels: int = 1
    num_classes: int = 10
    embed_dim: int = 64
    num_heads: int = 4
    num_layers: int = 2
    mlp_ratio: int = 4  # MLP hidden size = mlp_ratio * embed_dim
    dropout: float = 0.0

    def num_parameters(self) -> int:
        """The ViT's parameter count, from the sizes alone (nothing is built): the class token
        C, the patch projection (c p^2 + 1) C, N + 1 positions of C (N = (image_size / p)^2),
        per layer 4 C^2 + 4 C + 2 C F + F + C + 4 C (F = mlp_ratio C), the final LayerNorm 2 C
        and the head (C + 1) K."""
        C, F = self.embed_dim, self.mlp_ratio * self.embed_dim
        patches = (self.image_size // self.patch_size) ** 2
        layer = 4 * C * C + 4 * C + 2 * C * F + F + C + 4 * C
        return (C + (self.in_channels * self.patch_size ** 2 + 1) * C + (patches + 1) * C
                + self.num_layers * layer + 2 * C + (C + 1) * self.num_classes)

    def __post_init__(self) -> None:
        if self.patch_size <= 0 or self.image_size % self.patch_size:
            raise ValueError(
                f"ViT: image_size {self.image_size} is not divisible by patch_size {self.patch_size}"
            )
        if self.embed_dim % self.num_heads:
            raise ValueError(
                f"ViT: embed_dim {self.embed_dim} is not divisible by num_heads {self.num_heads}"
            )

    @property
    def num_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2


PRESETS = {
    "tiny": dict(embed_dim=16, num_heads=2, num_layers=1, mlp_ratio=2),
    "quick": dict(embed_dim=64, num_heads=4, num_layers=2, mlp_ratio=4, dropout=0.1),
}

# ----------------------------------------------------------------------------- model


class ViT(nn.Module):
    """Vision Transformer classifier.

    Shape:
        images: (B, in_channels, image_size, image_size), float.
        forward returns logits (B, K), read from the class token.
    """

    def __init__(self, config: ViTConfig):
        self.config = config
        C, T = config.embed_dim, config.num_patches + 1
        self.patch_embed = PatchEmbedding(config)
        self.cls_token = nn.Parameter(np.zeros((1, 1, C), dtype=np.float32))  # the (B-shared) class token
        self.pos_emb = nn.LearnedPositionalEmbedding(T, C)  # one learned vector per token slot
        self.drop = nn.Dropout(config.dropout)
        self.layers = [
            nn.TransformerEncoderLayer(C, config.num_heads, dim_feedforward=config.mlp_ratio * C,
                                       dropout=config.dropout, activation="gelu", norm_first=True)
            for _ in range(config.num_layers)
        ]
        self.norm_f = nn.LayerNorm(C)
        self.head = nn.Linear(C, config.num_classes)
        # The layers keep nn's defaults (Linear: PyTorch's uniform, attention: Xavier), which
        # train a small ViT much faster than GPT's N(0, 0.02^2). The class token starts like the
        # positions, N(0, 0.02^2); the head starts at zero, so the first predictions are
        # uniform (loss = log K).
        nn.init.normal_(self.cls_token, std=0.02)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def features(self, images: Tensor) -> Tensor:
        """The class token's final vector (B, C): what the head reads, a summary of the image."""
        x = self.patch_embed(images)  # (B, N, C)
        B, N, C = x.shape
        cls = self.cls_token.expand(B, 1, C)  # (B, 1, C): the same learned vector for every image
        x = mg.cat([cls, x], dim=1)  # (B, T, C): the class token first
        x = self.drop(self.pos_emb(x))  # (B, T, C)
        for layer in self.layers:
            x = layer(x)  # (B, T, C): x + attn(norm1(x)), then x + mlp(norm2(x))
        return self.norm_f(x[:, 0])  # (B, C): only the class token is read out

    def forward(self, images: Tensor) -> Tensor:
        return self.head(self.features(images))  # (B, K)

    def loss(self, images: Tensor, labels: Tensor, label_smoothing: float = 0.0) -> Tensor:
        """Mean cross-entropy of the class logits against labels (B,)."""
        logits = self(images)  # (B, K)
        return F.cross_entropy(logits, labels, label_smoothing=label_smoothing)

    def predict(self, images: Tensor) -> np.ndarray:
        """The most likely class of each image, (B,) int64 (no graph is recorded)."""
        with nn.evaluating(self):
            with mg.no_grad():
                logits = self(images)  # (B, K)
        return logits._data.argmax(-1)

