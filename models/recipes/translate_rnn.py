"""Date normalisation (and the other synthetic tasks) with the RNN encoder-decoder, with additive
attention or with the fixed-vector bottleneck; data, loss and evaluation come from translate.py."""

from __future__ import annotations

from ..rnn_seq2seq import RNNConfig, RNNSeq2Seq
from .translate import TaskRecipe


class RNNRecipe(TaskRecipe):
    name = "rnn"
    default_preset = "dates"
    config_class = RNNConfig
    model_class = RNNSeq2Seq
    # "dates" and "dates-noattn" differ only in the attention switch, to compare the two.
    presets = {
        "tiny": dict(task="dates", embed_dim=16, hidden_size=32, attention_dim=16),
        "dates": dict(task="dates", embed_dim=32, hidden_size=128, attention=True, attention_dim=64),
        "dates-noattn": dict(task="dates", embed_dim=32, hidden_size=128, attention=False),
    }
    # The same budget for both: with it, attention gets the dates right and the bottleneck
    # does not yet (it needs about twice as many steps to catch up on dates this short).
    train_presets = {
        "tiny": dict(steps=100, batch_size=16, lr=1e-2, warmup=10, eval_every=50, eval_batches=2),
        **{preset: dict(steps=300, batch_size=64, lr=1e-2, min_lr=1e-4, warmup=50, weight_decay=0.01,
                        eval_every=100, eval_batches=20)
           for preset in ("dates", "dates-noattn")},
    }
