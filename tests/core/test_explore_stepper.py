"""The stepper's groups of `minigrad.viz.explore` (`group_steps`): runs of steps inside one module
are one step at the outer level, each group holds its steps grouped one level further in, and
reading the groups in order gives every backward step once, in the engine's order; the page counts
its steps from 1. (The same pages in a browser: test_explore_browser.py.)"""

from __future__ import annotations

import pytest

import minigrad as mg
from minigrad.models.inspection import step_loss
from minigrad.models.recipes import recipe_class
from minigrad.viz import explore
from minigrad.viz.explore import group_steps


def flatten(items):
    """The steps of a level, every group replaced by its own steps."""
    out = []
    for x in items:
        out += flatten(x["items"]) if isinstance(x, dict) else [x]
    return out


def check_groups(items, chains):
    """Each group spans what its items hold, has two steps or more, and its module is in the
    chain of every step it holds; returns the number of groups."""
    n = 0
    for x in items:
        if isinstance(x, dict):
            steps = flatten(x["items"])
            assert steps == list(range(x["first"], x["last"] + 1)) and len(steps) >= 2
            assert all(x["module"] in chains[k] for k in steps)
            n += 1 + check_groups(x["items"], chains)
    return n


def page_of(model_name, depth=1):
    cls = recipe_class(model_name)
    recipe, loss = step_loss(cls, "tiny" if "tiny" in cls.presets else cls.default_preset)
    return explore(loss, model=recipe.model, depth=depth)


def test_runs_of_one_module_are_one_step():
    chains = [[], ["M", "a"], ["M", "a"], ["M"], ["M", "b"], ["M", "b", "c"], ["M", "b", "c"], ["M", "a"], []]
    # The model M holds all but the loss: it is opened in place. b holds step 4 and the run of c.
    assert group_steps(chains) == [
        0,
        {"module": "a", "first": 1, "last": 2, "items": [1, 2]},
        3,
        {"module": "b", "first": 4, "last": 6,
         "items": [4, {"module": "c", "first": 5, "last": 6, "items": [5, 6]}]},
        7,  # a again, alone in its run: a step
        8,
    ]


def test_a_group_holding_one_module_is_that_module():
    chains = [["M", "a", "x"], ["M", "a", "x"], ["M", "b"], ["M", "b"]]
    assert group_steps(chains) == [{"module": "x", "first": 0, "last": 1, "items": [0, 1]},
                                   {"module": "b", "first": 2, "last": 3, "items": [2, 3]}]


def test_steps_outside_modules_are_not_grouped():
    assert group_steps([[], [], []]) == [0, 1, 2]
    assert group_steps([]) == []


@pytest.mark.parametrize("name", ["gpt", "rnn", "seq2seq", "caption"])
def test_the_groups_hold_every_step_once_in_backward_order(name):
    page = page_of(name)
    chains = [next(op for op in page.data["ops"] if op["id"] == s["op"])["mods"] for s in page.data["steps"]]
    groups = page.data["groups"]
    assert flatten(groups) == list(range(len(page.data["steps"])))
    assert check_groups(groups, chains) > 0
    assert len(groups) <= 32  # the outer level can be followed (the RNN: 31 steps)


def test_the_rnn_is_followed_module_by_module():
    page = page_of("rnn")
    steps, groups = page.data["steps"], page.data["groups"]
    assert len(steps) > 800 and len(groups) <= 32
    labels = {m["id"]: m["label"] for m in page.data["modules"]}
    outer = {labels[x["module"]] for x in groups if isinstance(x, dict)}
    assert {"encoder (Encoder)", "decoder (Decoder)"} <= outer
    encoder = max((x for x in groups if isinstance(x, dict)), key=lambda x: x["last"] - x["first"])
    cells = [x for x in encoder["items"]
             if isinstance(x, dict) and labels[x["module"]].startswith("encoder.cell")]
    assert len(cells) > 1  # one group per call of the cell, one after the other


def test_a_gpt_block_is_one_step_at_the_outer_level():
    mg.manual_seed(0)
    page = page_of("gpt")
    labels = {m["id"]: m["label"] for m in page.data["modules"]}
    (block,) = [x for x in page.data["groups"]
                if isinstance(x, dict) and labels[x["module"]] == "blocks.0 (Block)"]
    assert block["last"] - block["first"] + 1 == sum(s["module"].startswith("blocks.0") for s in
                                                     page.data["steps"][block["first"]:block["last"] + 1])
    assert "GPT" not in {labels[x["module"]] for x in page.data["groups"] if isinstance(x, dict)}


def test_the_page_counts_steps_from_one():
    page = page_of("gpt")
    trace = page.trace
    for s, ref in zip(page.data["steps"], trace):
        for g, r in zip(s["sent"], ref.sent):
            if r.to_step is not None and r.to.startswith("step "):
                assert g["to_label"] == f"step {r.to_step + 1} ({r.tensor._node.name})"
    assert any(g["to_label"].startswith("step ") for s in page.data["steps"] for g in s["sent"])
