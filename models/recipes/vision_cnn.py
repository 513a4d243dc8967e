"""Image classification with a small CNN on the bundled 8x8 digits: the ViT's data, evaluation
and demo (`DigitsRecipe` in vision.py), another model."""

from __future__ import annotations

from ..cnn import CNN, PRESETS, CNNConfig
from .vision import DigitsRecipe


class CNNRecipe(DigitsRecipe):
    name = "cnn"
    presets = PRESETS
    config_class, model_class = CNNConfig, CNN
    train_presets = {
        "tiny": dict(steps=200, batch_size=32, lr=3e-2, min_lr=1e-3, warmup=20, eval_every=100,
                     eval_batches=1),
        "quick": dict(steps=500, batch_size=64, lr=3e-3, min_lr=1e-5, warmup=50, weight_decay=0.05,
                      eval_every=250, eval_batches=1),
    }
