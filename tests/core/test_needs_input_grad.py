"""The needs_input_grad rule of minigrad/ops/__init__.py: for an input that needs no gradient,
backward returns None, or something that cost nothing (g itself or a view of it, or an array
computed anyway for another input); and what it returns for the others does not change."""

import inspect
import itertools

import numpy as np
import pytest

from minigrad import ops
from minigrad.autograd import Function
from minigrad.ops import arithmetic, indexing, linalg, pointwise, reduce, shape

rng = np.random.default_rng(0)
A, B = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
B[0, 0] = A[0, 0]  # a tie for maximum/minimum
COND = np.array([[True, False, True], [False, True, True]])

# (op, input arrays, options, the inputs that may carry a gradient)
CASES = {
    "Add": (arithmetic.Add, [A, B], {}, (0, 1)),
    "Sub": (arithmetic.Sub, [A, B], {}, (0, 1)),
    "Mul": (arithmetic.Mul, [A, B], {}, (0, 1)),
    "Div": (arithmetic.Div, [A, B + 3.0], {}, (0, 1)),
    "Pow": (arithmetic.Pow, [np.abs(A) + 0.5, B], {}, (0, 1)),
    "Maximum": (pointwise.Maximum, [A, B], {}, (0, 1)),
    "Minimum": (pointwise.Minimum, [A, B], {}, (0, 1)),
    "Clip": (pointwise.Clip, [A, np.array(-0.5), np.full(3, 0.5)], {}, (0, 1, 2)),
    "Clip low": (pointwise.Clip, [A, np.array(-0.5)], {"high": False}, (0, 1)),
    "Atan2": (pointwise.Atan2, [A, B + 3.0], {}, (0, 1)),
    "Hypot": (pointwise.Hypot, [A, B], {}, (0, 1)),
    "LogAddExp": (pointwise.LogAddExp, [A, B], {}, (0, 1)),
    "XLogY": (pointwise.XLogY, [A, np.abs(B) + 0.5], {}, (0, 1)),
    "CopySign": (pointwise.CopySign, [A, B], {}, (0, 1)),
    "Scatter": (indexing.Scatter, [A, B], {"dim": 1, "index": np.array([[0, 1, 2], [2, 1, 0]])}, (0, 1)),
    "ScatterAdd": (indexing.ScatterAdd, [A, B], {"dim": 1, "index": np.array([[0, 0, 2], [2, 1, 0]])},
                   (0, 1)),
    "ScatterReduce": (indexing.ScatterReduce, [A, B], {
        "dim": 1, "index": np.array([[0, 0, 2], [2, 1, 0]]), "reduce": "prod", "include_self": True}, (0, 1)),
    "IndexAdd": (indexing.IndexAdd, [A, B[:, :2]], {"dim": 1, "index": np.array([0, 2])}, (0, 1)),
    "IndexFill": (indexing.IndexFill, [A, np.array(2.0)], {"dim": 1, "index": np.array([0, 2, 0])}, (0, 1)),
    "IndexPut": (indexing.IndexPut, [A.copy(), np.array(2.0)], {"steps": ((slice(None), 1),)}, (0, 1)),
    "Einsum": (linalg.Einsum, [A, B], {"equation": "ij,ij->i"}, (0, 1)),
    "Where": (indexing.Where, [COND, A, B], {}, (1, 2)),
    "MaskedFill": (indexing.MaskedFill, [A, COND, np.array(2.0)], {}, (0, 2)),
    "MatMul": (linalg.MatMul, [A, B.T], {}, (0, 1)),
    "MatMul dot": (linalg.MatMul, [A[0], B[0]], {}, (0, 1)),
    "MatMul batched": (linalg.MatMul, [np.stack([A, B]), B.T], {}, (0, 1)),
    "Cat": (shape.Cat, [A, B, A], {"dim": 1}, (0, 1, 2)),
    "Stack": (shape.Stack, [A, B], {"dim": 0}, (0, 1)),
}
# Gradients a backward computes anyway, because another input's gradient is built from them.
COMPUTED_ANYWAY = {("Div", 0)}  # da = g / b; db = -da * z


def _backward(op, arrays, options, wanted, g):
    """backward's gradients with needs_input_grad True for the inputs in `wanted`."""
    ctx = op()
    op.forward(ctx, *arrays, **options)
    ctx.needs_input_grad = tuple(i in wanted for i in range(len(arrays)))
    grads = op.backward(ctx, g)
    return grads if isinstance(grads, tuple) else (grads,)


@pytest.mark.parametrize("name", CASES)
def test_backward_computes_only_the_gradients_asked_for(name):
    op, arrays, options, differentiable = CASES[name]
    g = rng.normal(size=np.shape(op.forward(op(), *arrays, **options)))
    full = _backward(op, arrays, options, differentiable, g)
    subsets = [c for k in range(1, len(differentiable)) for c in itertools.combinations(differentiable, k)]
    for wanted in subsets:
        grads = _backward(op, arrays, options, wanted, g)
        assert len(grads) == len(arrays)
        for i, gi in enumerate(grads):
            if i in wanted:  # what is asked for does not depend on what else is
                np.testing.assert_allclose(gi, full[i], rtol=1e-12, err_msg=f"{name} input {i}")
            elif gi is not None:
                free = np.shares_memory(gi, g) or (name, i) in COMPUTED_ANYWAY
                assert free, f"{name}.backward computed the gradient of input {i}, which needs none"


def _array_inputs(op) -> int | None:
    """How many array inputs forward takes (None: any number), from its signature."""
    params = list(inspect.signature(op.forward).parameters.values())[1:]  # after ctx
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind is p.POSITIONAL_OR_KEYWORD for p in params)


def test_every_op_with_several_inputs_is_held_to_the_rule():
    ops_here = {
        cls for module in (arithmetic, pointwise, indexing, linalg, reduce, shape)
        for cls in vars(module).values()
        if isinstance(cls, type) and issubclass(cls, Function) and cls.__module__ == module.__name__
    }
    several = {cls for cls in ops_here if _array_inputs(cls) != 1}
    assert several == {case[0] for case in CASES.values()}
    assert "needs_input_grad rule" in ops.__doc__
