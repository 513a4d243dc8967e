"""The 8x8 handwritten digits bundled with scikit-learn (1797 images, no download), for ViT."""

from __future__ import annotations

import numpy as np

N_TRAIN = 1437  # the remaining 360 images are the test set


def load_digits_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Load the digits with a fixed train/test split.

    The images are shuffled with `np.random.default_rng(0)`; the first 1437 are for
    training and the last 360 for testing, the same on every machine.

    Returns:
        (x_train, y_train, x_test, y_test): images as float32 of shape (N, 8, 8) scaled
        to [0, 1], labels as int64 of shape (N,) with values 0 to 9.

    Raises:
        ImportError: scikit-learn is not installed.
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        # An optional dependency: say how to get it rather than show a bare traceback.
        raise ImportError("the digits data needs scikit-learn: pip install 'minigrad[data]'") from None
    digits = load_digits()
    x = (np.asarray(digits.images, dtype=np.float32) / 16.0).astype(np.float32)  # pixels 0..16
    y = np.asarray(digits.target, dtype=np.int64)
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:N_TRAIN], order[N_TRAIN:]
    return x[train], y[train], x[test], y[test]
