"""Recipes tie a model to its data, loss, evaluation and samples, for the training loop and
the `minigrad` command. One recipe per model; `RECIPES` maps the command's model names."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from minigrad import Tensor

from ..train import TrainConfig

# model name -> "module:Class", imported on first use so that `minigrad train gpt` does not
# load scikit-learn or build every data set.
RECIPES = {
    "gpt": "lm:GPTRecipe",
    "bert": "mlm:BERTRecipe",
    "seq2seq": "translate:Seq2SeqRecipe",
    "vit": "vision:ViTRecipe",
    "cnn": "vision_cnn:CNNRecipe",
    "rnn": "translate_rnn:RNNRecipe",
    "caption": "caption:CaptionRecipe",
}


class Recipe:
    """What the training loop needs from a model. Subclasses set `name`, `presets`,
    `train_presets` and `config_class` (the model's config dataclass, which checkpoints are
    checked against), and build `self.model` in __init__ from a preset and options."""

    name = ""
    config_class: type
    default_preset = "quick"
    presets: dict[str, dict] = {}
    train_presets: dict[str, dict] = {}
    model: Any

    def meta(self) -> dict:
        """JSON-able description from which `from_meta` rebuilds the recipe (config, vocab)."""
        raise NotImplementedError  # abstract

    @classmethod
    def from_meta(cls, meta: dict, load_data: bool = True) -> Recipe:
        """The recipe of `meta()`. With load_data=False the training data is not read (the
        text file may be gone): enough to sample and draw, not to train or evaluate."""
        raise NotImplementedError  # abstract

    def data_summary(self) -> str:
        """One line on the data trained on (file, sizes of the two parts), or ""."""
        return ""

    def batch(self, split: str, rng: np.random.Generator, batch_size: int) -> tuple:
        raise NotImplementedError  # abstract

    def loss(self, batch: tuple) -> Tensor:
        raise NotImplementedError  # abstract

    def evaluate(self, num_batches: int) -> dict[str, float]:
        """Held-out metrics (deterministic: fixed batches, model in eval mode)."""
        raise NotImplementedError  # abstract

    def metric_notes(self) -> dict[str, str]:
        """What a metric of `evaluate` compares with, for a person reading it: metric name -> a
        phrase that the command prints in parentheses after the value (none by default)."""
        return {}

    def demo(self) -> str:
        """A few lines showing what the trained model does (a sample, a translation...)."""
        return ""

    @classmethod
    def train_config(cls, preset: str, **overrides: Any) -> TrainConfig:
        cfg = dict(cls.train_presets.get(preset, {}))
        cfg.update({k: v for k, v in overrides.items() if v is not None})
        return TrainConfig.from_dict(cfg)


def recipe_class(name: str) -> type[Recipe]:
    """The recipe class of a model name, with a one-line error for unknown names."""
    if name not in RECIPES:
        raise ValueError(f"unknown model {name!r}; choose one of: {', '.join(RECIPES)}")
    module, cls = RECIPES[name].split(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def check_preset(recipe: type[Recipe], preset: str) -> None:
    if preset not in recipe.presets:
        raise ValueError(
            f"unknown preset {preset!r} for {recipe.name}; choose one of: {', '.join(recipe.presets)}"
        )
