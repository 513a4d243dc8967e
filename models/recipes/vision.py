"""Image classification on scikit-learn's 8x8 handwritten digits (1437 images to train on, 360
to test on): `DigitsRecipe`, the data, loss, evaluation and demo every image model shares, and
the ViT's recipe built on it (the CNN's is in vision_cnn.py)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor

from ..data import load_digits_split
from ..vit import PRESETS, ViT, ViTConfig
from . import Recipe, check_preset

SHADES = " .:-=+*#%@"  # pixel intensity 0..1 as ASCII, light to dark


class DigitsRecipe(Recipe):
    """An image classifier on the bundled digits. A subclass sets `name`, `presets`,
    `train_presets`, `config_class` (a dataclass with image_size and in_channels) and
    `model_class` (built from that config, with `loss(images, labels, label_smoothing)` and
    `predict(images)`).

    Args:
        preset: a name in `presets` (ignored when `config` is given).
        data: must be None: the digits are bundled.
        config: the model's config, instead of the preset's.
        label_smoothing: for the training loss.
        train_size: train on the first `train_size` training images only (a smaller data set,
            as in benchmarks/cnn_vs_vit.py); None: all 1437. The test set is always the 360.
    """

    config_class: type
    model_class: type

    def __init__(self, preset: str = "quick", data: str | None = None, *, config: Any = None,
                 label_smoothing: float = 0.0, train_size: int | None = None):
        check_preset(type(self), preset)
        if data is not None:
            raise ValueError(f"{self.name} trains on the bundled 8x8 digits; it takes no --data file")
        x_train, self.y_train, x_test, self.y_test = load_digits_split()  # ImportError without sklearn
        if train_size is not None:
            if not 1 <= train_size <= len(self.y_train):
                raise ValueError(
                    f"{self.name}: train_size must be 1 to {len(self.y_train)}, got {train_size}")
            x_train, self.y_train = x_train[:train_size], self.y_train[:train_size]
        self.x_train, self.x_test = x_train[:, None], x_test[:, None]  # (N, 1, 8, 8): one channel
        self.config = config or self.config_class(**self.presets[preset])
        if self.config.image_size != 8 or self.config.in_channels != 1:
            raise ValueError(
                f"the digits are 1 x 8 x 8 images; the config asks for {self.config.in_channels} x "
                f"{self.config.image_size} x {self.config.image_size}"
            )
        self.label_smoothing, self.train_size = label_smoothing, train_size
        self.model = self.model_class(self.config)

    def meta(self) -> dict:
        return {"config": asdict(self.config), "label_smoothing": self.label_smoothing,
                "train_size": self.train_size}

    @classmethod
    def from_meta(cls, meta: dict, load_data: bool = True) -> DigitsRecipe:  # the digits are bundled
        return cls(config=cls.config_class(**meta["config"]),
                   label_smoothing=meta.get("label_smoothing", 0.0), train_size=meta.get("train_size"))

    def batch(self, split: str, rng: np.random.Generator, batch_size: int) -> tuple[Tensor, Tensor]:
        x, y = (self.x_train, self.y_train) if split == "train" else (self.x_test, self.y_test)
        idx = rng.integers(0, len(y), size=batch_size)
        return mg.tensor(x[idx]), mg.tensor(y[idx])  # (B, 1, 8, 8), (B,)

    def loss(self, batch: tuple[Tensor, Tensor]) -> Tensor:
        return self.model.loss(*batch, label_smoothing=self.label_smoothing)

    def evaluate(self, num_batches: int = 1) -> dict[str, float]:
        """Loss and accuracy on all 360 test images (the set is small: `num_batches` is unused)."""
        with nn.evaluating(self.model), mg.no_grad():
            logits = self.model(mg.tensor(self.x_test))  # (360, 10)
            loss = F.cross_entropy(logits, mg.tensor(self.y_test)).item()
        accuracy = float((logits._data.argmax(-1) == self.y_test).mean())
        return {"val_loss": float(loss), "accuracy": accuracy}

    def demo(self, count: int = 6) -> str:
        """The first `count` test digits as ASCII art, each with its predicted and true label."""
        images, labels = self.x_test[:count, 0], self.y_test[:count]  # (n, 8, 8), (n,)
        predicted = self.model.predict(mg.tensor(self.x_test[:count]))
        levels = np.minimum((images * len(SHADES)).astype(int), len(SHADES) - 1)
        rows = ["  ".join("".join(SHADES[v] * 2 for v in img[r]) for img in levels)
                for r in range(images.shape[1])]
        width = 2 * images.shape[2]
        rows.append("  ".join(f"pred {p} true {t}".ljust(width) for p, t in zip(predicted, labels)))
        return "\n".join(row.rstrip() for row in rows)


class ViTRecipe(DigitsRecipe):
    name = "vit"
    presets = PRESETS
    config_class, model_class = ViTConfig, ViT
    train_presets = {
        "tiny": dict(steps=300, batch_size=32, lr=1e-2, min_lr=1e-3, warmup=20, eval_every=100,
                     eval_batches=1),
        "quick": dict(steps=1000, batch_size=64, lr=3e-3, min_lr=1e-5, warmup=100, weight_decay=0.05,
                      eval_every=250, eval_batches=1),
    }
