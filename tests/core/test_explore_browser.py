"""The page of `minigrad.viz.explore` in a real browser (headless Chromium driven by Playwright):
the stepper highlights the node `trace_backward` visits and shows its gradients, a folded module
opens on a click, a fan-out shows its sum, the page loads with no console error and no request
but itself, and it works inside a notebook's frame (`_repr_html_`); no edge crosses a node it
does not join; the counts agree ("18 backward steps", "step 1 of 18"); a model's steps are
followed module by module, stepping into one on demand. Nothing is downloaded."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.viz import explore, trace_backward

CHROMIUM = "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip(f"needs Debian's chromium at {CHROMIUM}: apt-get install -y chromium",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright: pip install -e '.[test]'")

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
NUMBER = re.compile(r"-?(?:\d+\.?\d*(?:e[-+]?\d+)?|nan|inf)")

from test_explore import three_token_attention, worked_example  # noqa: E402  (tests/core is on the path)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Opened:
    """A page opened from a file, recording console messages, page errors and requests."""

    def __init__(self, browser, path):
        self.page = browser.new_page(viewport={"width": 1280, "height": 800})
        self.console, self.requests = [], []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.as_uri()
        self.page.goto(self.url)

    def numbers(self, selector):
        return [float(x) for x in NUMBER.findall(self.page.inner_text(selector))]

    def clean(self):
        assert self.console == []
        assert all(u == self.url or u.startswith("data:") for u in self.requests), self.requests


def shown(values):
    return [float(f"{x:.4g}") for x in np.ravel(values)]


def test_next_walks_the_traces_steps_with_their_gradients(browser, tmp_path):
    loss, _ = worked_example()
    page = explore(loss)
    again, _ = worked_example()
    reference = trace_backward(again, max_values=64)  # the same graph, traced on its own
    page.save(tmp_path / "worked.html")
    tab = Opened(browser, tmp_path / "worked.html")
    assert tab.page.inner_text("#where").startswith("forward done; 7 backward steps")
    for k in range(4):
        tab.page.click("#next")
        assert tab.page.get_attribute("#step-panel", "data-step") == str(k)
        current = tab.page.eval_on_selector_all(".node.current", "els => els.map(e => e.id)")
        assert current == [page.node_id(page.trace[k].node)]
        assert tab.page.text_content(f"#{current[0]} text").startswith(reference[k].op)
        assert np.allclose(tab.numbers('[data-role="upstream"]'), shown(reference[k].grad_values), rtol=1e-3)
        sent = tab.page.query_selector_all("li.sent")
        assert len(sent) == len(reference[k].sent)
        for li, g in zip(sent, reference[k].sent):
            text = li.query_selector('[data-role="sent"]').inner_text()
            assert np.allclose([float(x) for x in NUMBER.findall(text)], shown(g.values), rtol=1e-3)
            assert tab.page.eval_on_selector(f"#{li.get_attribute('data-to')}",
                                             "e => e.classList.contains('receiving')")
    tab.page.click("#prev")
    assert tab.page.get_attribute("#step-panel", "data-step") == "2"
    tab.clean()


def test_a_fan_out_shows_the_sum(browser, tmp_path):
    loss, _ = worked_example()
    page = explore(loss)
    page.save(tmp_path / "fan.html")
    tab = Opened(browser, tmp_path / "fan.html")
    tab.page.click("#next")
    tab.page.click("#next")  # step 1: out * out sends to `output` twice
    assert "Mul" in tab.page.inner_text("#where")
    sums = tab.page.query_selector_all('[data-role="sum"]')
    out = page.trace[1].sent[0].values + page.trace[1].sent[1].values
    last = [float(x) for x in NUMBER.findall(sums[-1].inner_text())]
    assert len(sums) == 2 and np.allclose(last, shown(out), rtol=1e-3)
    assert "its 2 gradients, summed" in tab.page.inner_text("#step-panel")
    tab.page.click("#next")  # the MatMul that made `output` receives exactly that sum
    assert np.allclose(tab.numbers('[data-role="upstream"]'), last, rtol=1e-3)
    assert "the sum of the 2 gradients sent to it" in tab.page.inner_text("#step-panel")
    tab.clean()


def test_a_folded_module_opens_on_a_click(browser, tmp_path):
    from minigrad.models.gpt import GPT, PRESETS, GPTConfig

    mg.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=16, **PRESETS["tiny"]))
    idx = mg.tensor(np.random.default_rng(0).integers(0, 16, (1, 6)))
    page = explore(model.loss(idx[:, :-1], idx[:, 1:]), model=model)
    page.save(tmp_path / "gpt.html")
    tab = Opened(browser, tmp_path / "gpt.html")
    block = next(m["id"] for m in page.data["modules"] if m["label"] == "blocks.0 (Block)")
    inside = [s for s in page.trace if s.module.startswith("blocks.0.attn")]
    attention = page.node_id(next(s.node for s in inside if s.op == "PackedAttention"))
    assert tab.page.query_selector(f"#{attention}") is None and tab.page.query_selector(f"#{block}")
    tab.page.click(f"#{block}")  # the block opens: its children are boxes now
    attn = next(m["id"] for m in page.data["modules"] if m["label"].startswith("blocks.0.attn "))
    assert tab.page.query_selector(f"#{block}") is None
    tab.page.click(f"#{attn}")
    assert "PackedAttention" in tab.page.text_content(f"#{attention}")
    tab.page.click(f'#modules span[data-module="{block}"]')  # folding the block hides it again
    assert tab.page.query_selector(f"#{attention}") is None
    tab.clean()


def test_inside_a_notebooks_frame(browser, tmp_path):
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True, name="x")
    page = explore((x * x).sum())
    cell = f"<html><body>{page._repr_html_()}</body></html>"  # as Jupyter puts it in the notebook
    (tmp_path / "notebook.html").write_text(cell, encoding="utf-8")
    tab = Opened(browser, tmp_path / "notebook.html")
    frame = tab.page.frames[1]
    frame.wait_for_selector("#next")
    frame.click("#next")
    frame.click("#next")
    assert frame.inner_text("#where").startswith("step 2 of 2: Mul")  # counted from 1, as "2 backward steps"
    sums = frame.query_selector_all('li.sent [data-role="sum"]')
    values = [float(v) for v in NUMBER.findall(sums[-1].inner_text())]
    assert values == [2.0, 4.0, 6.0]  # d(x * x)/dx = x + x, its two gradients summed
    frame.click("#play")  # at the end: plays from the start, and stops at the last step
    frame.wait_for_function("document.getElementById('play').textContent === 'play'", timeout=10_000)
    assert frame.get_attribute("#step-panel", "data-step") == "1"
    tab.clean()


def test_a_fused_kernels_step_shows_the_attention_weights(browser, tmp_path):
    q, k, v = three_token_attention()
    page = explore(F.scaled_dot_product_attention(q, k, v).sum())
    page.save(tmp_path / "fused.html")
    tab = Opened(browser, tmp_path / "fused.html")
    tab.page.click("#next")
    tab.page.click("#next")  # the Attention node's backward
    assert "Attention" in tab.page.inner_text("#where")
    kernel = tab.page.query_selector_all('#step-panel [data-role="kernel"]')
    weights = [float(x) for x in NUMBER.findall(kernel[2].inner_text())]  # q k^T, scores, weights
    assert np.allclose(weights[:3], [0.6728, 0.1636, 0.1636])
    tab.clean()


# ----------------------------------------------------------------------------- edges, counts, groups


def model_page(name, depth=1):
    from minigrad.models.inspection import step_loss
    from minigrad.models.recipes import recipe_class

    cls = recipe_class(name)
    recipe, loss = step_loss(cls, "tiny" if "tiny" in cls.presets else cls.default_preset)
    return explore(loss, model=recipe.model, depth=depth)


# Every drawn edge, sampled every 2 px along its path: a point strictly inside (by 1 px) a node's
# box other than the two the edge joins (the boxes its ends touch) is an edge through a node.
THROUGH_NODES = """() => {
  const boxes = [...document.querySelectorAll("#graph svg g.node")].map(g => {
    const r = g.querySelector("rect"), m = /translate\\(([^,]+),([^)]+)\\)/.exec(g.getAttribute("transform"));
    return {id: g.id, x: +m[1], y: +m[2], w: +r.getAttribute("width"), h: +r.getAttribute("height")};
  });
  const inside = (b, p, m) => p.x > b.x + m && p.x < b.x + b.w - m && p.y > b.y + m && p.y < b.y + b.h - m;
  const ROW = 50, rows = new Map();  // the boxes by band of height, to look up a point's
  for (const b of boxes) for (let r = Math.floor(b.y / ROW); r <= Math.floor((b.y + b.h) / ROW); r++) {
    if (!rows.has(r)) rows.set(r, []);
    rows.get(r).push(b);
  }
  const bad = [], paths = [...document.querySelectorAll("#graph svg path.edge")];
  for (const path of paths) {
    const n = path.getTotalLength(), ends = [path.getPointAtLength(0), path.getPointAtLength(n)];
    const own = new Set(boxes.filter(b => ends.some(p => inside(b, p, -1.5))).map(b => b.id));
    for (let s = 0; s <= n; s += 2) {
      const p = path.getPointAtLength(s);
      const hit = (rows.get(Math.floor(p.y / ROW)) || []).find(b => !own.has(b.id) && inside(b, p, 1));
      if (hit) { bad.push(`an edge from ${[...own].join(" to ")} runs through ${hit.id}`); break; }
    }
  }
  return {edges: paths.length, boxes: boxes.length, bad};
}"""


@pytest.mark.parametrize("name, depth", [("gpt", 1), ("gpt", None), ("seq2seq", None), ("cnn", None),
                                         ("caption", 1)])
def test_no_edge_runs_through_a_node(browser, tmp_path, name, depth):
    """The tied embedding weight (used at the top and by the head), the residual connections and
    the encoder's output read by every decoder layer span many layers: they pass beside them."""
    page = model_page(name, depth)
    page.save(tmp_path / "page.html")
    tab = Opened(browser, tmp_path / "page.html")
    found = tab.page.evaluate(THROUGH_NODES)
    assert found["edges"] >= 18 and found["boxes"] >= 18
    assert found["bad"] == []
    tab.clean()


def test_the_counts_agree(browser, tmp_path):
    page = model_page("gpt", depth=None)  # every op open: the outer level is the steps themselves
    n = len(page.trace)
    page.save(tmp_path / "gpt.html")
    tab = Opened(browser, tmp_path / "gpt.html")
    assert tab.page.inner_text("#where").startswith(f"forward done; {n} backward steps")
    seen = tab.page.evaluate("""() => {
      const seen = [], panel = document.getElementById("step-panel");
      for (let i = 0; i < 1000 && seen.length < 2 * DATA.steps.length; i++) {
        if (panel.dataset.group) document.getElementById("in").click();
        else document.getElementById("next").click();
        const where = document.getElementById("where").textContent;
        if (!panel.dataset.group) seen.push([Number(panel.dataset.step), where]);
        if (seen.length > 1 && seen[seen.length - 1][0] === seen[seen.length - 2][0]) break;
      }
      return seen;
    }""")
    shown = [int(re.match(r"step (\d+) of (\d+)", text).group(1)) for _, text in seen[:-1]]
    assert shown == [k + 1 for k, _ in seen[:-1]] == list(range(1, n + 1))
    assert all(f" of {n}: " in text for _, text in seen)
    assert seen[0][1].startswith(f"step 1 of {n}: CrossEntropy") and seen[-1][0] == n - 1
    first = page.node_id(page.trace[0].node)
    assert tab.page.text_content(f"#{first} text").endswith("#1")  # the node says the same number
    tab.clean()


# Presses "next" (or "step in" at a group, when told to) until the stepper stops moving; returns
# each item it stood at: its step, or its group as "first-last", and where the header says it is.
WALK = """(stepIn) => {
  const seen = [], panel = document.getElementById("step-panel");
  const at = () => panel.dataset.group ? "g" + panel.dataset.group : panel.dataset.step;
  for (let i = 0; i < 100000; i++) {
    const before = at() + document.getElementById("level").textContent;
    if (stepIn && panel.dataset.group) document.getElementById("in").click();
    else document.getElementById("next").click();
    if (at() + document.getElementById("level").textContent === before) break;
    seen.push(at());
  }
  return seen;
}"""


def test_the_rnn_is_stepped_module_by_module(browser, tmp_path):
    page = model_page("rnn")
    n = len(page.trace)
    page.save(tmp_path / "rnn.html")
    tab = Opened(browser, tmp_path / "rnn.html")
    where = tab.page.inner_text("#where")
    outer_count = len(page.data["groups"])
    assert where.startswith(f"forward done; {n} backward steps, {outer_count} at the outer level")
    outer = tab.page.evaluate(WALK, False)  # next, next, ...: the outer level only
    assert 5 <= len(outer) <= 32 < n and any(x.startswith("g") for x in outer)
    tab.page.click("#reset")
    every = tab.page.evaluate(WALK, True)  # stepping into every group as it comes
    steps = [int(x) for x in every if not x.startswith("g")]
    assert steps == list(range(n))  # each step once, in the engine's order
    assert tab.page.inner_text("#where").startswith(f"step {n} of {n}")
    tab.page.click("#reset")
    group = None
    for _ in range(5):  # past the loss's own steps to the decoder's last time step, as one step
        tab.page.click("#next")
        group = tab.page.get_attribute("#step-panel", "data-group")
        if group:
            break
    first, last = map(int, group.split("-"))
    assert tab.page.inner_text("#where").startswith(f"steps {first + 1} to {last + 1} of {n}: decoder")
    assert "decoder (Decoder)" in tab.page.text_content("#step-panel")
    tab.page.keyboard.press("ArrowDown")  # step in: its module opens, its first item is next
    assert tab.page.get_attribute("#step-panel", "data-step") in ("", str(first))
    assert "\u203a decoder (Decoder) 1 of" in tab.page.inner_text("#level")
    tab.page.keyboard.press("ArrowUp")  # step out: the group as one step again
    assert tab.page.get_attribute("#step-panel", "data-group") == group
    tab.clean()
