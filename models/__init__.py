"""Models built on minigrad.nn: the transformer family, an RNN, and a CNN and a captioner.

    from minigrad.models import GPT, GPTConfig     # the same as from minigrad.models.gpt import ...

Each model lives in its own module (gpt, bert, seq2seq, vit, rnn_seq2seq, cnn, caption); the names below are
imported on first use, so `import minigrad.models` (and the `minigrad` command) stays quick.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "GPT": "gpt", "GPTConfig": "gpt",
    "BERT": "bert", "BERTConfig": "bert",
    "Seq2Seq": "seq2seq", "Seq2SeqConfig": "seq2seq",
    "ViT": "vit", "ViTConfig": "vit",
    "RNNSeq2Seq": "rnn_seq2seq", "RNNConfig": "rnn_seq2seq",
    "CNN": "cnn", "CNNConfig": "cnn",
    "Captioner": "caption", "CaptionConfig": "caption",
}
__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
