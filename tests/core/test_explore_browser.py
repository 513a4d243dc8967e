"""The page of `minigrad.viz.explore` in a real browser (headless Chromium driven by Playwright):
the stepper highlights the node `trace_backward` visits and shows its gradients, a folded module
opens on a click, a fan-out shows its sum, the page loads with no console error and no request
but itself, and it works inside a notebook's frame (`_repr_html_`). Nothing is downloaded."""

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
    assert frame.inner_text("#where").startswith("step 1 of 1: Mul")
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
