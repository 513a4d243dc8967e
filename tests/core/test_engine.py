"""The autograd engine: accumulation over shared subgraphs, long chains, freeing memory, hooks,
retain_grad, backward(g), retain_graph, grad mode, detach, unbroadcast and broken ops."""

import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad import Function, unbroadcast
from minigrad.testing import arrays, shapes

# ----------------------------------------------------------------------------- accumulation

# (f, df/dx) for expressions that use x several times
SHARED = [
    pytest.param(lambda x: x * x + x, lambda v: 2 * v + 1, id="diamond"),
    pytest.param(lambda x: x * x * x, lambda v: 3 * v**2, id="cube-by-products"),
    pytest.param(lambda x: sum([x] * 10, start=mg.zeros(x.shape)), lambda v: np.full_like(v, 10),
                 id="ten-uses"),
    pytest.param(lambda x: (x * 2).exp() * (x * 2), lambda v: np.exp(2 * v) * (4 * v + 2), id="shared-node"),
    pytest.param(lambda x: x - x, lambda v: np.zeros_like(v), id="cancel"),
]


@pytest.mark.parametrize("f, df", SHARED)
@given(x=arrays(shapes(), -2, 2))
def test_gradients_accumulate_over_every_use(f, df, x):
    t = mg.tensor(x, requires_grad=True)
    f(t).sum().backward()
    np.testing.assert_allclose(t.grad, df(x), rtol=1e-10, atol=1e-12)


def test_a_100k_node_chain_backpropagates():
    x = mg.tensor(0.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1.0
    y.backward()
    assert y.item() == 100_000.0
    assert x.grad == 1.0


def test_leaf_gradients_accumulate_across_backward_calls():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [5.0, 7.0])
    x.zero_grad()
    assert x.grad is None


def test_only_inputs_that_need_a_gradient_get_one():
    seen = []

    class Recorder(Function):
        """z = a * b     (records which inputs need a gradient)"""

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            a, b = ctx.saved
            return g * b if ctx.needs_input_grad[0] else None, g * a if ctx.needs_input_grad[1] else None

    x, c = mg.tensor([2.0], requires_grad=True), mg.tensor([3.0])
    Recorder.apply(x, c).backward(np.ones(1))
    assert seen == [(True, False)] and x.grad[0] == 3.0 and c.grad is None
    assert Recorder.apply(c, c).grad_fn is None  # nothing to differentiate: no node is recorded


# ----------------------------------------------------------------------------- memory


def test_saved_arrays_are_freed_by_backward():
    x = mg.tensor(np.arange(4.0), requires_grad=True)
    y = x.var()  # saves x - mean, an array nothing else holds
    saved = weakref.ref(y.grad_fn.saved[0])
    y.backward()
    assert saved() is None and y.grad_fn.saved is None


def test_retain_graph_keeps_saved_arrays():
    x = mg.tensor(np.arange(4.0), requires_grad=True)
    y = x.var()
    saved = weakref.ref(y.grad_fn.saved[0])
    y.backward(retain_graph=True)
    assert saved() is not None


def test_the_graph_lives_only_as_long_as_its_output():
    x = mg.tensor(np.ones(3), requires_grad=True)
    h = x.exp()
    loss = (h * 3).sum()
    h_ref, node_ref = weakref.ref(h), weakref.ref(h.grad_fn)
    del h
    assert h_ref() is not None  # the graph of loss holds it
    loss.backward()
    del loss  # no reference cycles: freed at once, without the garbage collector
    assert h_ref() is None and node_ref() is None
    np.testing.assert_allclose(x.grad, 3 * np.e)


def test_intermediate_gradients_are_not_kept():
    x = mg.tensor(np.ones(3), requires_grad=True)
    h = x * 2
    grads = []
    h.register_hook(lambda g: grads.append(weakref.ref(g)))
    (h * h).sum().backward()
    assert len(grads) == 1 and grads[0]() is None and h.grad is None


# ----------------------------------------------------------------------------- hooks, retain_grad


def test_leaf_hook_fires_once_with_the_summed_gradient():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(g.clone()))
    (x * x + x).sum().backward()
    assert len(calls) == 1
    np.testing.assert_array_equal(calls[0], [3.0, 5.0])


def test_intermediate_hook_fires_once_when_used_twice():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    calls = []
    h.register_hook(lambda g: calls.append(g.clone()))
    (h * h + h).sum().backward()
    assert len(calls) == 1
    np.testing.assert_array_equal(calls[0], 2 * h.numpy() + 1)


def test_hooks_may_replace_the_gradient():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    h.register_hook(lambda g: g * 10)  # seen by everything upstream of h
    x.register_hook(lambda g: g + 1)
    h.sum().backward()
    np.testing.assert_array_equal(x.grad, [31.0, 31.0])


def test_hooks_fire_once_per_backward_and_can_be_removed():
    x = mg.tensor([1.0], requires_grad=True)
    y = (x * 2).sum()
    calls = []
    handle = x.register_hook(lambda g: calls.append(1))
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    handle.remove()
    handle.remove()  # a second remove does nothing, as in torch
    y.backward()
    assert len(calls) == 2
    with x.register_hook(lambda g: calls.append(2)):
        (x * 3).sum().backward()
    (x * 3).sum().backward()
    assert calls == [1, 1, 2]


def test_retain_grad_keeps_intermediate_gradients():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.retain_grad()
    other = h + 1
    loss = (other * h).sum()
    loss.backward(retain_graph=True)
    np.testing.assert_array_equal(h.grad, 2 * h.numpy() + 1)
    assert other.grad is None and x.grad is not None
    loss.backward()
    np.testing.assert_array_equal(h.grad, 2 * (2 * h.numpy() + 1))  # accumulates like a leaf


# ----------------------------------------------------------------------------- backward(g), twice


def test_backward_with_an_upstream_gradient():
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * 2).backward(np.array([1.0, 0.5, -1.0]))  # a float64 gradient is cast to x's dtype
    np.testing.assert_array_equal(x.grad, [2.0, 1.0, -2.0])
    assert x.grad.dtype == np.float32


def test_backward_of_a_one_element_tensor_needs_no_gradient():
    x = mg.tensor([[3.0]], requires_grad=True)
    (x * x).backward()
    assert x.grad.shape == (1, 1) and x.grad[0, 0] == 6.0


def test_backward_of_a_vector_without_gradient_says_what_to_do():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"output has shape \(2,\), not a scalar.*y.backward\(g\)"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match=r"gradient of shape \(3,\) for an output of shape \(2,\)"):
        (x * 2).backward(np.ones(3))


def test_backward_twice_raises_unless_the_graph_is_retained():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(x.grad, 2 * 2 * x.numpy())  # two passes accumulate
    with pytest.raises(RuntimeError, match="already freed by an earlier backward; pass retain_graph=True"):
        y.backward()


def test_backward_through_a_freed_node_without_saved_arrays_also_raises():
    x = mg.tensor([1.0], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="already freed"):
        y.backward()


# ----------------------------------------------------------------------------- grad mode


def test_no_grad_as_context_manager():
    x = mg.tensor([1.0], requires_grad=True)
    with mg.no_grad():
        assert not mg.is_grad_enabled()
        y = x * 2
        with mg.enable_grad():
            z = x * 2
    assert mg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None


def test_no_grad_as_decorator_including_recursion():
    @mg.no_grad()
    def double(t, depth):
        assert not mg.is_grad_enabled()
        return double(t, depth - 1) * 2 if depth else t * 2

    x = mg.tensor([1.0], requires_grad=True)
    y = double(x, 3)
    assert y.item() == 16.0 and not y.requires_grad
    assert mg.is_grad_enabled()


def test_no_grad_restores_grad_mode_after_an_error():
    with pytest.raises(ZeroDivisionError):
        with mg.no_grad():
            mg.tensor(1.0).item() / 0
    assert mg.is_grad_enabled()


def test_detach_shares_values_and_stops_gradients():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()
    assert d.numpy() is x.numpy() and not d.requires_grad and d.grad_fn is None
    (x * x.detach()).sum().backward()
    np.testing.assert_array_equal(x.grad, [1.0, 2.0])


def test_requires_grad_():
    x = mg.tensor([1.0])
    assert x.requires_grad_() is x and x.requires_grad
    assert not x.requires_grad_(False).requires_grad
    with pytest.raises(RuntimeError, match="only floating-point tensors can require grad, not int64"):
        mg.arange(3).requires_grad_()
    y = mg.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="non-leaf.*detach"):
        y.requires_grad_(False)


# ----------------------------------------------------------------------------- unbroadcast


@st.composite
def broadcast_pairs(draw):
    """A shape and a shape it broadcasts to."""
    shape = draw(shapes())
    return shape, np.broadcast_shapes(shape, draw(hnp.broadcastable_shapes(shape, max_side=3)))


@given(data=st.data())
def test_unbroadcast_is_the_adjoint_of_broadcast(data):
    shape, big = data.draw(broadcast_pairs(), label="shapes")
    x = data.draw(arrays(shape), label="x")
    y = data.draw(arrays(big), label="y")
    lhs = np.sum(np.broadcast_to(x, big) * y)  # <broadcast(x), y>
    rhs = np.sum(x * unbroadcast(y, shape))  # <x, unbroadcast(y)>
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)
    assert unbroadcast(y, shape).shape == shape


@pytest.mark.parametrize("grad_shape, shape, expected", [
    pytest.param((2, 3), (3,), [2, 2, 2], id="leading-axis"),
    pytest.param((2, 3), (2, 1), [[3], [3]], id="stretched-axis"),
    pytest.param((2, 3), (1, 3), [[2, 2, 2]], id="stretched-first-axis"),
    pytest.param((2, 3), (), 6, id="to-0d"),
    pytest.param((4, 2, 1), (2, 1), [[4], [4]], id="leading-only-keeps-size-1"),
    pytest.param((2, 0), (1, 0), np.zeros((1, 0)), id="empty"),
])
def test_unbroadcast_sums_added_and_stretched_axes(grad_shape, shape, expected):
    out = unbroadcast(np.ones(grad_shape), shape)
    assert out.shape == shape
    np.testing.assert_array_equal(out, expected)


def test_unbroadcast_same_shape_and_bad_shape():
    g = np.ones((2, 3))
    assert unbroadcast(g, (2, 3)) is g
    with pytest.raises(ValueError, match=r"unbroadcast: shape \(2,\) does not broadcast to \(2, 3\)"):
        unbroadcast(g, (2,))
    with pytest.raises(ValueError, match="does not broadcast"):
        unbroadcast(np.ones(3), (2, 3))


# ----------------------------------------------------------------------------- broken ops


class WrongShape(Function):
    """z = 2x, with a backward that drops the last element (broken on purpose)."""

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return 2 * g[:-1]


class TooFewGradients(Function):
    """z = a + b, with a backward that forgets b (broken on purpose)."""

    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g


def test_engine_names_the_op_whose_backward_returns_a_wrong_shape():
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"WrongShape.backward returned a gradient of shape \(2,\) "
                                           r"for an input of shape \(3,\)"):
        WrongShape.apply(x).sum().backward()


def test_engine_names_the_op_whose_backward_returns_too_few_gradients():
    x, y = mg.tensor([1.0], requires_grad=True), mg.tensor([2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="TooFewGradients.backward returned 1 gradients for 2 inputs"):
        TooFewGradients.apply(x, y).sum().backward()


def test_engine_sums_a_broadcast_gradient_back_to_the_input_shape():
    a = mg.tensor(np.ones((2, 1)), requires_grad=True)
    b = mg.tensor(np.ones(3), requires_grad=True)
    (a * b).backward(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(a.grad, [[3.0], [12.0]])
    np.testing.assert_array_equal(b.grad, [3.0, 5.0, 7.0])


# ----------------------------------------------------------------------------- next_functions


def _walk(fn):
    """Every node reachable from fn through next_functions, once each (a set of the seen nodes,
    as a student's graph walk keeps), and the leaves their AccumulateGrad nodes name."""
    seen, leaves, stack = set(), [], [fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if type(node).__name__ == "AccumulateGrad":
            leaves.append(node.variable)
        stack.extend(n for n, _ in node.next_functions)
    return seen, leaves


def test_next_functions_walk_the_graph_as_torchs_do():
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    counts = []
    for lib in (mg, torch):
        a, b, c = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True), lib.ones(2)
        y = ((a * b + a) * c).sum()
        first = y.grad_fn.next_functions
        assert len(first) == 1 and first[0][1] == 0
        mul = first[0][0].next_functions
        assert mul[1] == (None, 0)  # c needs no gradient
        seen, leaves = _walk(y.grad_fn)
        assert sorted(id(t) for t in leaves) == sorted([id(a), id(b)])  # a once, though used twice
        counts.append(len(seen))
    assert counts[0] == counts[1] == 6  # sum, mul, add, mul, and a's and b's AccumulateGrad
    del a, y, seen, leaves, first, mul
    import gc

    from minigrad.autograd import AccumulateGrad
    gc.collect()
    assert all(n.variable is not None for n in AccumulateGrad._of.values())  # dead leaves leave the table
