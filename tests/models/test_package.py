"""`from minigrad.models import GPT` works, and importing the package loads no model."""

import subprocess
import sys

import pytest

import minigrad.models as models
from minigrad.models import bert, caption, cnn, gpt, rnn_seq2seq, seq2seq, vit


@pytest.mark.parametrize("name,module", [
    ("GPT", gpt), ("GPTConfig", gpt), ("BERT", bert), ("BERTConfig", bert), ("Seq2Seq", seq2seq),
    ("Seq2SeqConfig", seq2seq), ("ViT", vit), ("ViTConfig", vit), ("RNNSeq2Seq", rnn_seq2seq),
    ("RNNConfig", rnn_seq2seq), ("CNN", cnn), ("CNNConfig", cnn), ("Captioner", caption),
    ("CaptionConfig", caption),
])
def test_the_models_are_names_of_the_package(name, module):
    assert getattr(models, name) is getattr(module, name) and name in dir(models)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'minigrad.models' has no attribute 'GTP'"):
        models.GTP  # noqa: B018
    with pytest.raises(ImportError):
        exec("from minigrad.models import GTP")


def test_importing_the_package_loads_no_model():
    code = ("import sys, minigrad.models; "
            "print(sorted(m for m in sys.modules if m.startswith('minigrad.models.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_command_line_starts_without_a_model_or_torch():
    """`minigrad --help` stays quick: the subcommands load their model and the torch engine
    only when they run."""
    code = ("import sys, minigrad.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[-1] in "
            "('gpt', 'bert', 'seq2seq', 'vit', 'rnn_seq2seq', 'export') or m == 'torch'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
