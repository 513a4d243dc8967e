"""Attention masks for hypothesis tests: none, a bool mask or a float mask (minigrad.testing.masks)."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.testing import masks


def draw_mask(draw: Any, shapes: list[tuple[int, ...]], bool_elements: Any = None) -> np.ndarray | None:
    """No mask, a bool mask (elements from `bool_elements`, any when None) or a float mask in
    [-2, 2], of one of `shapes`."""
    return draw(masks(shapes, bool_elements))
