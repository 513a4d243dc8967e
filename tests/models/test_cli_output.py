"""What the command tells a student: what the GPT's val_loss compares with (a uniform guess over
the text's V characters scores ln V nats), and what each option of `sample` means."""

import csv
import math
import re

import pytest

from minigrad.cli import main
from minigrad.models.recipes.lm import GPTRecipe

TEN_CHARACTERS = "abcdefghi\n"  # nine letters and the newline: a uniform guess scores ln 10 = 2.30


def test_the_val_loss_summary_says_what_a_uniform_guess_scores(tmp_path, capsys):
    text = tmp_path / "text.txt"
    text.write_text(TEN_CHARACTERS * 300)
    uniform = "(a uniform guess over the 10 characters: 2.30)"
    assert main(["train", "gpt", "--preset", "tiny", "--steps", "6", "--data", str(text), "--out", "run",
                 "--quiet"]) == 0
    done = [line for line in capsys.readouterr().out.splitlines() if line.startswith("done in ")]
    assert len(done) == 1
    assert re.fullmatch(r"done in \d+ s: val_loss \d+\.\d{4} " + re.escape(uniform), done[0])
    assert main(["eval", "run/checkpoint.npz"]) == 0
    assert re.fullmatch(r"gpt at step 6: val_loss \d+\.\d{4} " + re.escape(uniform) + "\n",
                        capsys.readouterr().out)
    with open("run/log.csv", newline="") as f:  # for programs: numbers only, as before
        rows = list(csv.reader(f))
    assert rows[0] == ["step", "train_loss", "val_loss", "lr", "seconds"] and len(rows) == 7
    assert all(len(row) == 5 for row in rows) and float(rows[-1][2]) > 0 and "uniform" not in str(rows)


def test_the_guess_counts_the_recipes_own_vocabulary():
    recipe = GPTRecipe("tiny")  # the standard library's docstrings
    V = recipe.tokenizer.vocab_size
    assert recipe.model.config.vocab_size == V
    said = f"a uniform guess over the {V} characters: {math.log(V):.2f}"
    assert recipe.metric_notes() == {"val_loss": said}


@pytest.mark.parametrize("option, says", [
    pytest.param("--max-new-tokens", ["characters to generate after the prompt", "default 300"],
                 id="max-new-tokens"),
    pytest.param("--temperature", ["below 1", "above 1", "0 always takes the most likely", "default 0.8"],
                 id="temperature"),
    pytest.param("--top-k", ["the k most likely", "default: every character"], id="top-k"),
    pytest.param("--seed", ["the same seed", "default 0"], id="seed"),
])
def test_sample_help_gives_each_options_meaning_and_default(option, says, capsys):
    with pytest.raises(SystemExit):
        main(["sample", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    found = re.search(re.escape(option) + r" [A-Z_]+ (.*?)(?= --?[a-z]|$)", text)
    assert found, f"{option} is not in sample --help"
    for words in says:
        assert words in found.group(1), f"{option}: {found.group(1)!r} lacks {words!r}"
