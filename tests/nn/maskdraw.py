"""Attention masks for hypothesis tests: none, a bool mask or a float mask."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minigrad.testing import arrays


def draw_mask(draw: Any, shapes: list[tuple[int, ...]], bool_elements: Any = None) -> np.ndarray | None:
    """No mask, a bool mask (elements from `bool_elements`, any when None) or a float mask in
    [-2, 2], of one of `shapes`."""
    shape = draw(st.sampled_from(shapes))
    kind = draw(st.sampled_from(["none", "bool", "float"]))
    if kind == "bool":
        return draw(hnp.arrays(np.bool_, shape, elements=bool_elements))
    return draw(arrays(shape, -2, 2)) if kind == "float" else None
