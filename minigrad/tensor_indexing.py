"""Tensor methods that select and place elements by index: gather, scatter, scatter_add,
index_select, index_add, take_along_dim, masked_select, nonzero, diagonal, repeat_interleave,
broadcast_to, the matrix products outer / mm / bmm, and the assignment `y[index] = value`.

They live in a base class of Tensor, `IndexingMethods`, only to keep tensor.py short; every one
is written out here and hands the work to an op in `minigrad.ops.indexing`, or is a short
composition of other methods (then its gradient is theirs). Indices are integer tensors (or
arrays or lists); they never require grad.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from . import grad_mode, versions
from .ops.indexing import (
    Gather,
    IndexAdd,
    IndexPut,
    IndexSelect,
    Scatter,
    ScatterAdd,
    check_index,
    check_range,
    put,
)
from .ops.ordering import one_axis
from .tensor_shape import _ints_first, _to_index

if TYPE_CHECKING:
    from .tensor import Tensor


def _array(index: Any) -> np.ndarray:
    """An index argument (Tensor, array, list, int) as a numpy array; [] is an empty int64."""
    data = getattr(index, "data", index)
    if isinstance(data, list) and not data:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(data)


class IndexingMethods:
    """The indexing methods of Tensor (see tensor.py for the rest)."""

    __slots__ = ()
    shape: tuple[int, ...]
    ndim: int

    # ------------------------------------------------------------------ gather and scatter

    def gather(self, dim: int, index: Any) -> Tensor:
        """out[i][j][k] = self[i][index[i][j][k]][k] (dim 1): the index's shape, which must be
        no larger than self apart from `dim`."""
        return Gather.apply(self, dim=dim, index=_array(index))

    def scatter(self, dim: int, index: Any, src: Any = None, *, value: Any = None,
                reduce: str | None = None) -> Tensor:
        """A copy of self with out[i][index[i][j][k]][k] = src[i][j][k] (dim 1); a number, as src
        or as value=, goes to every index entry. `reduce` is refused: use scatter_add for sums."""
        if reduce is not None:
            raise ValueError(f"scatter: reduce={reduce!r} is not supported (PyTorch deprecates it); "
                             "use scatter_add for reduce='add'")
        if (src is None) == (value is None):
            raise TypeError("scatter: give exactly one of src (a tensor) and value (a number)")
        if value is None and isinstance(src, (bool, int, float)):
            src, value = None, src  # x.scatter(1, index, 2.5): the number is the value
        index = _array(index)
        if value is not None:
            src = self._make(np.full(index.shape, value, dtype=self.dtype), None)
        return Scatter.apply(self, self._other(src), dim=dim, index=index)

    def scatter_add(self, dim: int, index: Any, src: Any) -> Tensor:
        """A copy of self with out[i][index[i][j][k]][k] += src[i][j][k] (dim 1); repeated
        index entries add up."""
        return ScatterAdd.apply(self, self._other(src), dim=dim, index=_array(index))

    def index_select(self, dim: int, index: Any) -> Tensor:
        """The slices of self along `dim` at the entries of the 0-d or 1-d `index`, in order."""
        return IndexSelect.apply(self, dim=dim, index=_array(index))

    def index_add(self, dim: int, index: Any, source: Any, *, alpha: float = 1) -> Tensor:
        """A copy of self with slice index[k] along `dim` increased by alpha * source's slice k."""
        return IndexAdd.apply(self, self._other(source), dim=dim, index=_array(index), alpha=alpha)

    def take_along_dim(self, indices: Any, dim: int | None = None) -> Tensor:
        """gather, with self and indices broadcast against each other apart from `dim` and
        negative indices counted from the end; dim=None: both flattened first."""
        idx = check_index(_array(indices), "take_along_dim", "indices")
        if dim is None:
            flat = self.reshape(-1)
            n = flat.shape[0]
            check_range(idx, n, 0, "take_along_dim")  # flattened, torch takes no negative index
            return flat.gather(0, idx.reshape(-1))
        axis = one_axis(dim, self.ndim, "take_along_dim")
        if max(idx.ndim, 1) != max(self.ndim, 1):
            raise ValueError(f"take_along_dim: input of shape {self.shape} and indices of shape "
                             f"{idx.shape} need the same number of dimensions")
        x = self
        if self.ndim:
            mine, theirs = list(self.shape), list(idx.shape)
            mine[axis] = theirs[axis] = 1
            try:
                lead = np.broadcast_shapes(tuple(mine), tuple(theirs))
            except ValueError:
                raise ValueError(f"take_along_dim: input of shape {self.shape} and indices of shape "
                                 f"{idx.shape} do not broadcast apart from dim {dim}") from None
            x_shape = lead[:axis] + (self.shape[axis],) + lead[axis + 1:]
            idx = np.broadcast_to(idx, lead[:axis] + (idx.shape[axis],) + lead[axis + 1:])
            x = self if x_shape == self.shape else self.expand(x_shape)
        n = x.shape[axis] if x.ndim else 1
        if idx.size and (idx.min() < -n or idx.max() >= n):  # -n <= index < n, as PyTorch
            bad = idx.min() if idx.min() < -n else idx.max()
            raise IndexError(f"take_along_dim: index {bad} is out of bounds for dimension {dim} "
                             f"with size {n}")
        return x.gather(axis, np.where(idx < 0, idx + n, idx))

    # ------------------------------------------------------------------ masks, diagonals, repeats

    def masked_select(self, mask: Any) -> Tensor:
        """The 1-d tensor of self's elements where the boolean `mask` is True, both broadcast."""
        m = _array(mask)
        if m.dtype != np.bool_:
            raise TypeError(f"masked_select: the mask must be boolean, not {m.dtype}")
        try:
            shape = np.broadcast_shapes(self.shape, m.shape)
        except ValueError:
            raise ValueError(f"masked_select: input of shape {self.shape} and mask of shape "
                             f"{m.shape} do not broadcast") from None
        x = self if shape == self.shape else self.expand(shape)
        return x[np.broadcast_to(m, shape)]

    def nonzero(self, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
        """The int64 indices of the nonzero elements, one row each, shape (n, ndim); with
        as_tuple, one 1-d tensor per dim (a 0-d tensor counts as 1-d). Not differentiable."""
        if as_tuple:
            return tuple(self._make(i.astype(np.int64), None) for i in np.nonzero(np.atleast_1d(self.data)))
        return self._make(np.argwhere(self.data).astype(np.int64), None)

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The elements self[..., i, i + offset] of the (dim1, dim2) planes, as a last axis
        (offset > 0: above the main diagonal, < 0: below)."""
        if self.ndim < 2:
            raise IndexError(f"diagonal: needs a tensor of at least 2 dimensions, not of shape {self.shape}")
        d1, d2 = one_axis(dim1, self.ndim, "diagonal"), one_axis(dim2, self.ndim, "diagonal")
        if d1 == d2:
            raise ValueError(f"diagonal: dim1 and dim2 cannot be identical ({dim1}, {dim2})")
        planes = self.movedim((d1, d2), (-2, -1))
        rows, cols = self.shape[d1], self.shape[d2]
        k = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
        i = np.arange(k) + max(-offset, 0)
        return planes[..., i, i + offset]

    def repeat_interleave(self, repeats: Any, dim: int | None = None, *,
                          output_size: int | None = None) -> Tensor:
        """Each element (dim=None: of the flattened tensor) or each slice along `dim` repeated
        `repeats` times: an int, or a 0-d or 1-d integer tensor with one count per slice."""
        if dim is None:
            x, axis = self.reshape(-1), 0
        else:
            if self.ndim == 0:
                raise IndexError(f"repeat_interleave: a 0-d tensor has no dim {dim}; leave dim=None")
            x, axis = self, one_axis(dim, self.ndim, "repeat_interleave")
        n = x.shape[axis]
        counts = check_index(_array(repeats), "repeat_interleave", "repeats")
        if counts.ndim > 1:
            raise ValueError(f"repeat_interleave: repeats must be an int or a 0-d or 1-d tensor, "
                             f"not of shape {counts.shape}")
        if counts.size != 1 and counts.size != n:
            raise ValueError(f"repeat_interleave: {counts.size} repeats for {n} slices along dim "
                             f"{dim} (tensor of shape {self.shape}); give one, or one per slice")
        if (counts < 0).any():
            raise ValueError(f"repeat_interleave: repeats must be >= 0, not {counts.tolist()}")
        idx = np.repeat(np.arange(n), np.broadcast_to(counts.reshape(-1), (n,)))
        if output_size is not None and output_size != idx.size:
            raise ValueError(f"repeat_interleave: output_size={output_size}, but the repeats "
                             f"give {idx.size} slices")
        return x.index_select(axis, idx)

    def broadcast_to(self, size: Sequence[int]) -> Tensor:
        """self expanded (without copying) to `size`, by broadcasting; a -1 in it keeps self's size."""
        try:
            return self.expand(tuple(size))
        except ValueError:
            raise ValueError(f"broadcast_to: shape {self.shape} cannot be broadcast to "
                             f"{tuple(size)}") from None

    # ------------------------------------------------------------------ matrix products

    def outer(self, vec2: Any) -> Tensor:
        """out[i, j] = self[i] * vec2[j], for two 1-d tensors (PyTorch's reshape and multiply)."""
        other = self._other(vec2)
        for name, t in (("self", self), ("vec2", other)):
            if t.ndim != 1:
                raise ValueError(f"outer: expected 1-D argument {name}, but got {t.ndim}-D (shape {t.shape})")
        return self.reshape(-1, 1) * other

    def mm(self, mat2: Any) -> Tensor:
        """The matrix product of two 2-d tensors (no broadcasting; matmul has it)."""
        other = self._other(mat2)
        for name, t in (("self", self), ("mat2", other)):
            if t.ndim != 2:
                raise ValueError(f"mm: {name} must be a matrix, not of shape {t.shape}")
        if self.shape[1] != other.shape[0]:
            raise ValueError(f"mm: mat1 and mat2 shapes cannot be multiplied "
                             f"({self.shape[0]}x{self.shape[1]} and {other.shape[0]}x{other.shape[1]})")
        return self @ other

    def bmm(self, mat2: Any) -> Tensor:
        """The products of two equal batches of matrices, (b, n, m) and (b, m, p) (no broadcasting)."""
        other = self._other(mat2)
        for name, t in (("batch1", self), ("batch2", other)):
            if t.ndim != 3:
                raise ValueError(f"bmm: {name} must be a 3D tensor, not of shape {t.shape}")
        want = [self.shape[0], self.shape[2]]
        if list(other.shape[:2]) != want:
            raise ValueError(f"bmm: expected size for first two dimensions of batch2 tensor to be: "
                             f"{want} but got: {list(other.shape[:2])} (batch1 {self.shape})")
        return self @ other

    # ------------------------------------------------------------------ assignment

    def __setitem__(self, index: Any, value: Any) -> None:
        """self[index] = value, in place (ints, slices, None, ..., boolean masks, int arrays).

        With a gradient wanted, self becomes the output of an IndexPut node whose inputs are
        the old self and value: the overwritten places get gradient 0, and value gets the
        gradient at its places (summed where it was broadcast). As in PyTorch, a leaf that
        requires grad cannot be written (clone() it, or write under no_grad()), and nodes that
        saved the old values make backward raise (the version counter). Ops that used self
        before the write keep the node self had then (the engine records each op's parents
        when it runs), so y[i] = f(y) and a use of y before the write get PyTorch's gradients.
        """
        try:
            index = _to_index(index)
        except IndexError as e:
            raise IndexError(str(e).replace("getitem", "setitem", 1)) from None
        steps = (_ints_first(index) if type(index) is tuple else None) or (index,)
        v = value if isinstance(value, IndexingMethods) else self._make(np.asarray(value, self.dtype), None)
        graph = grad_mode.is_grad_enabled() and (self.requires_grad or v.requires_grad)
        if graph:
            _check_writable_in_graph(self, v)
        if not self.data.flags.writeable:
            raise RuntimeError(f"setitem: this tensor's array (shape {self.shape}) is read-only, as "
                               "an expand or broadcast_to result, whose elements share memory; "
                               "clone() it first")
        if not graph:
            put(self.data, steps, v.data)
        else:
            old = self._make(self.data, self._node)
            old.requires_grad = self.requires_grad
            out = IndexPut.apply(old, v, steps=steps)
            if self._node is not None and self._node.retained is not None:
                self._node.retained = None  # retain_grad() asked for the gradient of the tensor,
                out._node.retained = weakref.ref(self)  # which is now the new value
            self._node, self.requires_grad = out._node, True
        versions.bump(self.data)


def _check_writable_in_graph(t: Tensor, value: Tensor) -> None:
    """PyTorch's leaf rule, and a refusal where minigrad's answer would be wrong: t a view of
    another tensor that requires grad (minigrad does not rewrite the graph of a view's base)."""
    if t.requires_grad and t._node is None:
        raise RuntimeError("setitem: a leaf Variable that requires grad is being used in an in-place "
                           "operation; write into a copy (y = x.clone(); y[i] = v) or under no_grad()")
    node = t._node
    while node is not None and type(node) is IndexPut:  # an earlier write: the same tensor
        node = node.inputs[0]._node
    if node is not None:
        s = versions.storage(t.data)
        for inp in node.inputs:
            if inp.requires_grad and versions.storage(inp.data) is s:
                base = "a leaf Variable" if inp._node is None else "a tensor"
                raise RuntimeError(f"setitem: a view of {base} that requires grad (made by "
                                   f"{node.name}) is being used in an in-place operation; "
                                   "clone() it first")

