"""Tensor methods that summarise values: median, norms, sampling from rows of probabilities.

They live in a base class of Tensor, `StatisticsMethods`, only to keep tensor.py short; every
one is written out here and hands the work to an op in `minigrad.ops`. `median(dim)` returns
a named tuple (values, indices) as `torch.return_types.median` does, built like `sort`'s: the
indices from a stable sort (numpy, outside the graph), the values a gather by them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .ops.ordering import GatherSorted, one_axis
from .ops.statistics import Median, VectorNorm
from .random import generator as global_generator

if TYPE_CHECKING:
    from .tensor import Tensor


class MedianResult(NamedTuple):
    """What `median(dim)` returns, as torch.return_types.median: `values, indices = x.median(0)`."""

    values: Tensor
    indices: Tensor


def median_indices(a: np.ndarray, axis: int) -> np.ndarray:
    """The index of the lower median along axis, keeping that axis (size 1).

    The ((n - 1) // 2)-th place of a stable sort: among tied values the one PyTorch picks too
    (checked against torch.median on many tied inputs). A slice holding NaN gives the index
    of its first NaN, as PyTorch does (its median is NaN).
    """
    k = (a.shape[axis] - 1) // 2
    idx = np.take(np.argsort(a, axis=axis, kind="stable"), [k], axis=axis)
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        has_nan = nan.any(axis=axis, keepdims=True)
        idx = np.where(has_nan, np.argmax(nan, axis=axis, keepdims=True), idx)
    return idx


def norm_order(p: Any, dim: Any, op: str = "norm") -> float:
    """torch.norm's `p` as vector_norm's `ord`: "fro" (over at most two dims) is 2, a number
    stays; "nuc" and other strings name matrix norms, which minigrad does not have."""
    if isinstance(p, str):
        n_dims = 1 if dim is None or isinstance(dim, (int, np.integer)) else len(dim)
        if p == "fro" and (dim is None or n_dims <= 2):
            return 2.0
        raise ValueError(f"{op}: p={p!r} with dim={dim!r} asks for a matrix norm, which minigrad "
                         "does not have; use p='fro' over one or two dims, or a number")
    if p is None:
        return 2.0
    if not isinstance(p, (int, float, np.integer, np.floating)) or isinstance(p, (bool, np.bool_)):
        raise TypeError(f"{op}: the order must be a number, 'fro' or None, not {p!r}")
    return float(p)


class StatisticsMethods:
    """The statistics methods of Tensor (see tensor.py for the rest)."""

    __slots__ = ()
    data: np.ndarray
    shape: tuple[int, ...]
    ndim: int
    dtype: np.dtype
    _make: Any

    # ------------------------------------------------------------------ median

    def median(self, dim: int | None = None, keepdim: bool = False) -> Tensor | MedianResult:
        """The lower median: of all elements (a 0-d tensor) when dim is None, else
        (values, indices) along `dim`, as torch.median.

        The lower median of n values is the ((n - 1) // 2)-th smallest (no averaging of the two
        middle ones). NaN propagates. Over all elements the gradient is shared by the elements
        equal to the median; along a dim it goes to the element `indices` names.
        """
        if self.dtype.kind == "b":
            raise TypeError("median: not implemented for bool tensors; convert with x.long() first")
        if dim is None:
            if keepdim:
                raise TypeError("median: keepdim=True needs a dim (the median of all elements is 0-d)")
            return Median.apply(self)
        axis = one_axis(dim, self.ndim, "median")
        data = self.data if self.ndim else self.data.reshape(1)
        if data.shape[axis] == 0:
            raise IndexError(f"median: expected reduction dim {dim} to have non-zero size, in a "
                             f"tensor of shape {self.shape}")
        idx = median_indices(data, axis)
        if self.ndim == 0:
            idx = idx.reshape(())
        values = GatherSorted.apply(self, indices=idx, dim=axis)
        if not keepdim and self.ndim:
            values, idx = values.squeeze(axis), idx.squeeze(axis)
        return MedianResult(values, self._make(idx.astype(np.int64, copy=False), None))

    # ------------------------------------------------------------------ norms

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        """The vector p-norm over `dim` (None: all elements), as torch.norm: "fro" or None is
        the 2-norm; numbers as in `minigrad.linalg.vector_norm` (1, 2, inf, -inf, 0, any p)."""
        x = self if dtype is None else self.to(dtype)  # type: ignore[attr-defined]
        return VectorNorm.apply(x, ord=norm_order(p, dim), dim=dim, keepdim=keepdim)

    # ------------------------------------------------------------------ sampling (no grad)

    def multinomial(self, num_samples: int, replacement: bool = False, *,
                    generator: np.random.Generator | None = None) -> Tensor:
        """int64 indices of categories drawn from each row of weights (1-d or 2-d; each row
        non-negative, not necessarily normalised), as torch.multinomial.

        Draws from minigrad's global generator (`manual_seed`), or from `generator`, a numpy
        Generator. With replacement: inverse-CDF sampling. Without: the exponential race
        (PyTorch's algorithm): each category gets the key w / E with E ~ Exp(1), and the
        num_samples largest keys win, in order; a category of weight 0 is never drawn, so
        num_samples may not exceed a row's count of nonzero weights (PyTorch documents that
        rule but its CPU kernel then returns zero-weight categories).
        """
        w = self._multinomial_weights(num_samples, replacement)
        rng = global_generator() if generator is None else generator
        rows, k = w.shape
        if rows == 0:
            out = np.zeros((0, num_samples), dtype=np.int64)
        elif replacement:
            cdf = np.cumsum(w, axis=1)
            cdf = cdf / cdf[:, -1:]  # the last entry exactly 1
            offset = np.arange(rows)[:, None]
            u = rng.random((rows, num_samples))
            # one search for all rows: row r's CDF shifted into [r, r + 1]
            flat = np.searchsorted((cdf + offset).reshape(-1), (u + offset).reshape(-1), side="right")
            last = k - 1 - np.argmax(w[:, ::-1] > 0, axis=1)  # u + r rounded up to r + 1
            out = np.minimum(flat.reshape(rows, num_samples) - offset * k, last[:, None])
        else:
            with np.errstate(divide="ignore"):
                keys = np.log(w) - np.log(rng.standard_exponential((rows, k)))
            out = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
        out = out.astype(np.int64, copy=False)
        return self._make(out.reshape(-1) if self.ndim == 1 else out, None)

    def _multinomial_weights(self, num_samples: Any, replacement: bool) -> np.ndarray:
        """The weights as a float64 (rows, categories) array, after PyTorch's checks."""
        if self.ndim not in (1, 2):
            raise RuntimeError(f"multinomial: the probabilities must be 1-d or 2-d, got shape {self.shape}")
        if self.dtype.kind != "f":
            raise RuntimeError(f"multinomial: only supports floating-point probabilities, got {self.dtype}")
        if not isinstance(num_samples, (int, np.integer)) or isinstance(num_samples, (bool, np.bool_)):
            raise TypeError(f"multinomial: num_samples must be an int, not {num_samples!r}")
        if num_samples <= 0:
            raise RuntimeError(f"multinomial: cannot sample num_samples={num_samples} <= 0 samples")
        w = self.data.astype(np.float64).reshape(-1, self.shape[-1])
        k = w.shape[1]
        if not replacement and num_samples > k:
            raise RuntimeError(f"multinomial: cannot sample num_samples={num_samples} > {k} "
                               f"categories (shape {self.shape}) without replacement")
        if not np.isfinite(w).all() or (w < 0).any():
            raise RuntimeError("multinomial: the probability tensor contains inf, nan or an "
                               f"element < 0 (shape {self.shape})")
        if w.shape[0] and (k == 0 or (w.sum(axis=1) <= 0).any()):
            raise RuntimeError("multinomial: invalid distribution (a row's sum of probabilities "
                               f"is <= 0) in a tensor of shape {self.shape}")
        nonzero = (w > 0).sum(axis=1)
        if not replacement and w.shape[0] and nonzero.min() < num_samples:
            raise RuntimeError(f"multinomial: cannot sample num_samples={num_samples} without "
                               f"replacement from a row with only {nonzero.min()} nonzero "
                               f"probabilities (shape {self.shape}); use replacement=True")
        return w
