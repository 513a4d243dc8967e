"""minigrad.testing: the shared strategies draw what they say, and without hypothesis the
module names the extra to install."""

import subprocess
import sys

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad import testing
from minigrad.testing import attention_cases, attention_grads, dims, masks, shapes


@given(st.data())
def test_dims_are_what_reductions_take(data):
    shape = data.draw(shapes())
    dim = data.draw(dims(len(shape)))
    assert dim is None or isinstance(dim, (int, tuple))
    x = mg.tensor(np.ones(shape))
    assert x.sum(dim=dim).numpy().sum() == x.numpy().size  # every element summed once, whatever the dim
    axes = [dim] if isinstance(dim, int) else list(dim or ())
    assert len({a % max(len(shape), 1) for a in axes}) == len(axes)  # distinct axes


@given(st.integers(0, 3).flatmap(lambda n: st.tuples(st.just(n), dims(n, single=True))))
def test_a_single_dim_is_one_axis_in_range(case):
    ndim, dim = case
    assert isinstance(dim, int) and -max(ndim, 1) <= dim < max(ndim, 1)


def test_dims_draw_none_the_empty_tuple_and_several_axes():
    from hypothesis import find

    assert find(dims(3), lambda d: d is None) is None
    assert find(dims(3), lambda d: d == ()) == ()
    assert len(find(dims(3), lambda d: isinstance(d, tuple) and len(d) == 3)) == 3


@given(masks([(2, 3), (1, 3)], st.just(False)))
def test_masks_are_none_bool_or_float_of_the_shapes_given(mask):
    if mask is not None:
        assert mask.shape in [(2, 3), (1, 3)]
        if mask.dtype == bool:
            assert not mask.any()  # the elements asked for
        else:
            assert mask.dtype == np.float64 and np.all(np.abs(mask) <= 2)


@given(attention_cases(max_len=4, max_dim=2))
def test_attention_cases_fit_together(case):
    q, k, v, mask, is_causal = case
    (tq, d), (tk, dk), (tv, dv) = q.shape[-2:], k.shape[-2:], v.shape[-2:]
    assert d == dk and tk == tv and 1 <= tq <= 4 and 1 <= tk <= 4 and 1 <= d <= 2 and 1 <= dv <= 2
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if mask is not None:
        assert np.broadcast_shapes(mask.shape[-2:], (tq, tk)) == (tq, tk)
        np.broadcast_shapes(lead, mask.shape[:-2])  # raises when they do not broadcast
    assert isinstance(is_causal, bool)


def test_attention_grads_runs_backward_and_returns_every_gradient():
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.normal(size=s) for s in [(2, 3), (4, 3), (4, 2), (2, 2)])
    bias = rng.normal(size=(2, 4))

    def linear_attention(q, k, v, mask=None, scale=1.0):  # (q k^T * scale + mask) v
        return ((q @ k.transpose(-1, -2)) * scale + mask) @ v

    out, (dq, dk, dv, dmask) = attention_grads(linear_attention, q, k, v, bias, g, scale=0.5)
    s = q @ k.T * 0.5 + bias
    np.testing.assert_allclose(out, s @ v)
    ds = g @ v.T
    np.testing.assert_allclose(dv, s.T @ g)
    np.testing.assert_allclose(dmask, ds)
    np.testing.assert_allclose(dq, 0.5 * ds @ k)
    np.testing.assert_allclose(dk, 0.5 * ds.T @ q)
    _, grads = attention_grads(lambda q, k, v, mask: q @ k.T @ v, q, k, v, bias > 0, g)
    assert len(grads) == 3  # a bool mask has no gradient


def test_without_hypothesis_it_says_which_extra_to_install():
    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "try:\n    import minigrad.testing\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 'pip install "minigrad[test]"' in out and "hypothesis" in out


def test_every_public_strategy_is_documented():
    public = [n for n, f in vars(testing).items()
              if callable(f) and not n.startswith("_") and getattr(f, "__module__", "") == testing.__name__]
    assert {"dims", "masks", "attention_cases", "attention_grads", "arrays", "shapes"} <= set(public)
    for name in public:
        assert getattr(testing, name).__doc__, name
