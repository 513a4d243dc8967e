"""Regenerate docs/explore.png, the README's picture of `minigrad.viz.explore`:

    python docs/explore_figure.py

The lecture's worked example (three tokens, d_k = 2, Q = K as in tutorial 02), its page opened
in headless Chromium and stepped to the backward of the softmax: the op being run (red), the
gradient it receives (orange) and what it sends on (green), with the step's numbers on the right.

Needs Debian's chromium at /usr/bin/chromium and playwright (`pip install -e ".[test]"`); nothing
is downloaded.
"""

from __future__ import annotations

import math
import os
import tempfile

import numpy as np

import minigrad as mg
from minigrad.viz import explore

HERE = os.path.dirname(os.path.abspath(__file__))
KEYS = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0]])  # k_A, k_B, k_C (and the queries)
VALUES = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # v_A, v_B, v_C
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def worked_example_page():
    Q = mg.tensor(KEYS, requires_grad=True, name="Q")
    K = mg.tensor(KEYS, requires_grad=True, name="K")
    V = mg.tensor(VALUES, requires_grad=True, name="V")
    scores = Q @ K.T / math.sqrt(2)  # (3, 3)
    scores.name = "scores"
    weights = scores.softmax(dim=-1)  # row 0: [0.67, 0.16, 0.16]
    weights.name = "weights"
    out = weights @ V  # row 0: [0.836, 0.327]
    out.name = "output"
    return explore((out * out).sum())


def screenshot(path: str, step: int = 3) -> None:
    from playwright.sync_api import sync_playwright

    page = worked_example_page()
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as p:
        html = page.save(os.path.join(folder, "worked_example.html"))
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        tab = browser.new_page(viewport={"width": 1180, "height": 640})
        tab.goto("file://" + html)
        for _ in range(step + 1):
            tab.click("#next")
        assert tab.inner_text("#where").startswith(f"step {step} of")
        tab.screenshot(path=path)
        browser.close()


if __name__ == "__main__":
    out = os.path.join(HERE, "explore.png")
    screenshot(out)
    print(f"wrote explore.png: {os.path.getsize(out) / 1000:.0f} KB")
