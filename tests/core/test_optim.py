"""Tests for minigrad.optim: SGD, Adam, AdamW against hand-computed updates, state dicts and
flat checkpoints, gradient clipping, and learning-rate schedules."""

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.optim as optim
from minigrad.testing import arrays, shapes

P0 = np.array([1.0, -2.0, 0.5])
GRADS = [  # fixed gradients, one per step; magnitudes shrink so that AMSGrad's max matters
    np.array([0.5, -1.0, 2.0]),
    np.array([-0.25, 0.75, 1.5]),
    np.array([0.1, 0.05, -0.2]),
    np.array([0.3, -0.4, 0.0]),
    np.array([-0.02, 0.01, 0.05]),
    np.array([0.2, 0.3, -0.1]),
]


def param(values, dtype=np.float64) -> mg.Tensor:
    return mg.tensor(np.array(values, dtype=dtype), requires_grad=True)


def trajectory(opt, params, grads) -> list[list[np.ndarray]]:
    """Step `opt` once per entry of `grads` (one array per param); the params after each step."""
    out = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = np.array(g, dtype=p.dtype)
        opt.step()
        out.append([p.numpy().copy() for p in params])
    return out


# --------------------------------------------------------------------------- references
# Written from the papers' formulas, step by step, in float64.


def ref_sgd(p, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    p, buf, out = p.copy(), None, []
    for g in grads:
        g = (-g if maximize else g) + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
        out.append(p)
    return out


def ref_adam(p, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, decoupled=False):
    b1, b2 = betas
    p, m, v, v_max, out = p.copy(), 0.0, 0.0, 0.0, []
    for t, g in enumerate(grads, start=1):
        if decoupled:
            p = p - lr * weight_decay * p
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g**2
        v_max = np.maximum(v_max, v)
        m_hat = m / (1 - b1**t)
        v_hat = (v_max if amsgrad else v) / (1 - b2**t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        out.append(p)
    return out


# --------------------------------------------------------------------------- SGD


def test_sgd_momentum_by_hand():
    # buf: 1, 1.9, 2.71;  p: 1 - 0.1 * buf, cumulatively
    p = param([1.0])
    traj = trajectory(optim.SGD([p], lr=0.1, momentum=0.9), [p], [[[1.0]]] * 3)
    np.testing.assert_allclose([t[0][0] for t in traj], [0.9, 0.71, 0.439], rtol=1e-12)


def test_sgd_nesterov_by_hand():
    # d = g + 0.9 * buf: 1.9, 2.71, 3.439
    p = param([1.0])
    traj = trajectory(optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True), [p], [[[1.0]]] * 3)
    np.testing.assert_allclose([t[0][0] for t in traj], [0.81, 0.539, 0.1951], rtol=1e-12)


def test_sgd_dampening_by_hand():
    # the first step copies g (no dampening); then buf = 0.9 * buf + 0.5 * g: 1, 1.4, 1.76
    p = param([1.0])
    traj = trajectory(optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.5), [p], [[[1.0]]] * 3)
    np.testing.assert_allclose([t[0][0] for t in traj], [0.9, 0.76, 0.584], rtol=1e-12)


def test_sgd_weight_decay_by_hand():
    # zero gradient: the L2 term alone shrinks p by (1 - lr * wd) per step
    p = param([1.0, -2.0])
    traj = trajectory(optim.SGD([p], lr=0.1, weight_decay=0.5), [p], [[[0.0, 0.0]]] * 3)
    np.testing.assert_allclose(traj[-1][0], np.array([1.0, -2.0]) * 0.95**3, rtol=1e-12)


SGD_CASES = [
    pytest.param(dict(lr=0.1), id="plain"),
    pytest.param(dict(lr=0.1, momentum=0.9), id="momentum"),
    pytest.param(dict(lr=0.05, momentum=0.8, dampening=0.3), id="dampening"),
    pytest.param(dict(lr=0.1, momentum=0.9, nesterov=True), id="nesterov"),
    pytest.param(dict(lr=0.1, weight_decay=0.2), id="weight_decay"),
    pytest.param(dict(lr=0.1, momentum=0.7, weight_decay=0.1, nesterov=True), id="nesterov+wd"),
    pytest.param(dict(lr=0.1, momentum=0.5, maximize=True), id="maximize"),
]


@pytest.mark.parametrize("kwargs", SGD_CASES)
def test_sgd_matches_reference_over_six_steps(kwargs):
    p = param(P0)
    traj = trajectory(optim.SGD([p], **kwargs), [p], [[g] for g in GRADS])
    for got, want in zip(traj, ref_sgd(P0, GRADS, **kwargs)):
        np.testing.assert_allclose(got[0], want, rtol=1e-12, atol=1e-15)


@given(shapes(max_side=4).flatmap(lambda s: st.tuples(arrays(s, -10, 10), arrays(s, -10, 10))),
       st.floats(0, 1))
def test_plain_sgd_is_p_minus_lr_g(values_and_grad, lr):
    values, g = values_and_grad
    p = param(values)
    before = p.numpy()
    p.grad = g.copy()
    optim.SGD([p], lr=lr).step()
    assert p.numpy() is before  # updated in place
    np.testing.assert_array_equal(p.numpy(), values - lr * g)
    np.testing.assert_array_equal(p.grad, g)


# --------------------------------------------------------------------------- Adam, AdamW


def test_adam_with_constant_gradient_moves_lr_per_step():
    # m_hat = g and v_hat = g^2 at every step, so each step is lr * g / (|g| + eps)
    p = param(P0)
    traj = trajectory(optim.Adam([p], lr=0.1), [p], [[GRADS[0]]] * 3)
    sign = np.sign(GRADS[0])
    for t, got in enumerate(traj, start=1):
        np.testing.assert_allclose(got[0], P0 - 0.1 * t * sign, rtol=1e-7)


ADAM_CASES = [
    pytest.param(dict(lr=0.1), id="default"),
    pytest.param(dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6), id="betas+eps"),
    pytest.param(dict(lr=0.1, weight_decay=0.3), id="l2"),
    pytest.param(dict(lr=0.1, amsgrad=True), id="amsgrad"),
    pytest.param(dict(lr=0.1, weight_decay=0.1, amsgrad=True, betas=(0.5, 0.9)), id="l2+amsgrad"),
]


@pytest.mark.parametrize("kwargs", ADAM_CASES)
def test_adam_matches_reference_over_six_steps(kwargs):
    p = param(P0)
    traj = trajectory(optim.Adam([p], **kwargs), [p], [[g] for g in GRADS])
    for got, want in zip(traj, ref_adam(P0, GRADS, **kwargs)):
        np.testing.assert_allclose(got[0], want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kwargs", [
    pytest.param(dict(lr=0.1, weight_decay=0.3), id="default"),
    pytest.param(dict(lr=0.05, weight_decay=0.1, amsgrad=True), id="amsgrad"),
])
def test_adamw_matches_reference_over_six_steps(kwargs):
    p = param(P0)
    traj = trajectory(optim.AdamW([p], **kwargs), [p], [[g] for g in GRADS])
    for got, want in zip(traj, ref_adam(P0, GRADS, decoupled=True, **kwargs)):
        np.testing.assert_allclose(got[0], want, rtol=1e-12, atol=1e-15)


def test_amsgrad_keeps_the_largest_second_moment():
    p, q = param(P0), param(P0)
    ams, plain = optim.Adam([p], lr=0.1, amsgrad=True), optim.Adam([q], lr=0.1)
    trajectory(ams, [p], [[g] for g in GRADS])
    trajectory(plain, [q], [[g] for g in GRADS])
    v, history = 0.0, []
    for g in GRADS:
        v = 0.999 * v + 0.001 * g**2
        history.append(v)
    np.testing.assert_allclose(ams.state[0]["max_exp_avg_sq"], np.max(history, axis=0), rtol=1e-12)
    assert "max_exp_avg_sq" not in plain.state[0]
    assert not np.allclose(p.numpy(), q.numpy())  # shrinking gradients: the max matters


def test_adam_and_adamw_differ_exactly_by_the_decoupled_decay():
    lr, wd = 0.1, 0.2
    w, a = param(P0), param(P0)
    adamw, adam = optim.AdamW([w], lr=lr, weight_decay=wd), optim.Adam([a], lr=lr, weight_decay=0.0)
    prev_w, prev_a = P0, P0
    for g in GRADS:
        w.grad, a.grad = g.copy(), g.copy()
        adamw.step()
        adam.step()
        # the moments see only the gradients, so the Adam step is the same for both ...
        np.testing.assert_array_equal(adamw.state[0]["exp_avg"], adam.state[0]["exp_avg"])
        np.testing.assert_array_equal(adamw.state[0]["exp_avg_sq"], adam.state[0]["exp_avg_sq"])
        # ... and AdamW shrinks the weights by (1 - lr * wd) before taking it
        np.testing.assert_allclose(w, prev_w * (1 - lr * wd) + (a.numpy() - prev_a), rtol=1e-13, atol=1e-15)
        prev_w, prev_a = w.numpy().copy(), a.numpy().copy()
    # L2 decay in Adam is a different rule: it goes through the moments
    l2 = param(P0)
    trajectory(optim.Adam([l2], lr=lr, weight_decay=wd), [l2], [[g] for g in GRADS])
    assert not np.allclose(l2.numpy(), w.numpy())


def test_adam_with_decoupled_weight_decay_is_adamw():
    p, q = param(P0), param(P0)
    steps = [[g] for g in GRADS]
    trajectory(optim.Adam([p], lr=0.1, weight_decay=0.3, decoupled_weight_decay=True), [p], steps)
    trajectory(optim.AdamW([q], lr=0.1, weight_decay=0.3), [q], steps)
    np.testing.assert_array_equal(p.numpy(), q.numpy())


@pytest.mark.parametrize("make", [
    pytest.param(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, maximize=True), id="sgd"),
    pytest.param(lambda ps: optim.Adam(ps, lr=0.1, maximize=True), id="adam"),
])
def test_maximize_climbs(make):
    p = param([0.0])
    trajectory(make([p]), [p], [[[1.0]]] * 3)
    assert p.numpy()[0] > 0.25


# --------------------------------------------------------------------------- the base class


def test_parameter_groups_have_their_own_hyperparameters():
    a, b = param(P0), param(P0)
    opt = optim.SGD([{"params": [a], "lr": 0.1}, {"params": b, "momentum": 0.9}], lr=0.01)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    assert [g["momentum"] for g in opt.param_groups] == [0.0, 0.9]
    assert opt.param_groups[1]["params"][0] is b
    traj = trajectory(opt, [a, b], [[g, g] for g in GRADS[:3]])
    np.testing.assert_allclose(traj[-1][0], ref_sgd(P0, GRADS[:3], lr=0.1)[-1], rtol=1e-12)
    np.testing.assert_allclose(traj[-1][1], ref_sgd(P0, GRADS[:3], lr=0.01, momentum=0.9)[-1], rtol=1e-12)
    assert set(opt.state) == {1}  # plain SGD keeps no buffers; indices count over all groups


def test_parameters_without_grad_are_skipped():
    a, b = param(P0), param(P0)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = GRADS[0].copy()
    opt.step()
    np.testing.assert_array_equal(b.numpy(), P0)
    assert list(opt.state) == [0] and opt.state[0]["step"] == 1
    b.grad = GRADS[0].copy()
    opt.step()
    assert opt.state[0]["step"] == 2 and opt.state[1]["step"] == 1
    np.testing.assert_allclose(b.numpy(), P0 - 0.1 * np.sign(GRADS[0]), rtol=1e-7)


def test_zero_grad():
    a, b = param(P0), param(P0)
    opt = optim.SGD([a, b])
    a.grad, b.grad = GRADS[0].copy(), GRADS[1].copy()
    held = a.grad.numpy()
    opt.zero_grad(set_to_none=False)
    assert held is a.grad.numpy() and not a.grad.any() and not b.grad.any()
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_updates_do_not_touch_the_gradient_or_record_a_graph():
    for opt_cls, kwargs in [(optim.SGD, dict(momentum=0.9)),
                            (optim.SGD, dict(momentum=0.9, weight_decay=0.1, maximize=True)),
                            (optim.Adam, dict(weight_decay=0.1, maximize=True)), (optim.AdamW, {})]:
        p = param(P0)
        p.grad = GRADS[0].copy()
        opt = opt_cls([p], lr=0.1, **kwargs)
        for _ in range(2):  # the second step updates any buffer the first one made
            opt.step()
        np.testing.assert_array_equal(p.grad, GRADS[0])
        assert p.is_leaf and p.grad_fn is None


@pytest.mark.parametrize("make", [
    pytest.param(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1), id="sgd"),
    pytest.param(lambda ps: optim.Adam(ps, lr=0.1, weight_decay=0.1, amsgrad=True), id="adam"),
    pytest.param(lambda ps: optim.AdamW(ps, lr=0.1), id="adamw"),
])
def test_float32_stays_float32_and_in_place(make):
    p = param([[1.0, -2.0], [0.5, 3.0]], dtype=np.float32)
    s = param(0.5, dtype=np.float32)  # a 0-d parameter
    arrays = (p.numpy(), s.numpy())
    opt = make([p, s])
    for g in GRADS[:3]:
        p.grad = g[:2].reshape(1, 2).repeat(2, 0).astype(np.float32)
        s.grad = np.array(g[2], dtype=np.float32)
        opt.step()
    assert p.numpy() is arrays[0] and s.numpy() is arrays[1]
    assert p.dtype == np.float32 and s.dtype == np.float32
    for buffers in opt.state.values():
        for k, v in buffers.items():
            assert k == "step" or v.dtype == np.float32, k
    assert not np.array_equal(p.numpy(), [[1.0, -2.0], [0.5, 3.0]]) and s.numpy() != 0.5


@pytest.mark.parametrize("make, steps", [
    pytest.param(lambda ps: optim.SGD(ps, lr=0.1), 60, id="sgd"),
    pytest.param(lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True), 100, id="nesterov"),
    pytest.param(lambda ps: optim.Adam(ps, lr=0.1), 300, id="adam"),
    pytest.param(lambda ps: optim.AdamW(ps, lr=0.1, weight_decay=1e-4, amsgrad=True), 300, id="adamw"),
])
def test_converges_on_a_quadratic(make, steps):
    target = mg.tensor([1.0, -2.0, 3.0])
    w = mg.zeros(3, requires_grad=True)
    opt = make([w])
    for _ in range(steps):
        opt.zero_grad()
        loss = ((w - target) ** 2).sum()
        loss.backward()
        opt.step()
    np.testing.assert_allclose(w.numpy(), target.numpy(), atol=2e-2)
    assert ((w - target) ** 2).sum().item() < 1e-3


def test_step_runs_the_closure_and_returns_its_loss():
    w = mg.tensor([2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with mg.no_grad():  # the closure still records its graph
        loss = opt.step(closure)
    assert loss.item() == 4.0
    np.testing.assert_allclose(w.numpy(), [1.0])  # 2 - 0.25 * 4


BAD_HYPERPARAMETERS = [
    pytest.param(lambda ps: optim.SGD(ps, lr=-0.1), "learning rate", id="sgd-lr"),
    pytest.param(lambda ps: optim.SGD(ps, momentum=-0.5), "momentum", id="sgd-momentum"),
    pytest.param(lambda ps: optim.SGD(ps, weight_decay=-1), "weight_decay", id="sgd-wd"),
    pytest.param(lambda ps: optim.SGD(ps, nesterov=True), "Nesterov", id="nesterov-no-momentum"),
    pytest.param(lambda ps: optim.SGD(ps, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov",
                 id="nesterov-dampening"),
    pytest.param(lambda ps: optim.Adam(ps, lr=-1e-3), "learning rate", id="adam-lr"),
    pytest.param(lambda ps: optim.Adam(ps, betas=(1.0, 0.999)), "beta1", id="adam-beta1"),
    pytest.param(lambda ps: optim.Adam(ps, betas=(0.9, -0.1)), "beta2", id="adam-beta2"),
    pytest.param(lambda ps: optim.Adam(ps, betas=(0.9,)), "two numbers", id="adam-betas-length"),
    pytest.param(lambda ps: optim.Adam(ps, eps=-1e-8), "eps", id="adam-eps"),
    pytest.param(lambda ps: optim.AdamW(ps, weight_decay=-0.01), "weight_decay", id="adamw-wd"),
    pytest.param(lambda ps: optim.AdamW([{"params": ps, "lr": -1.0}]), "learning rate", id="group-lr"),
]


@pytest.mark.parametrize("make, message", BAD_HYPERPARAMETERS)
def test_bad_hyperparameters_are_clear_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make([param(P0)])


def test_bad_parameter_lists_are_clear_errors():
    p = param(P0)
    with pytest.raises(TypeError, match="iterable"):
        optim.SGD(p)
    with pytest.raises(ValueError, match="empty"):
        optim.SGD([])
    with pytest.raises(ValueError, match="more than once"):
        optim.SGD([{"params": [p]}, {"params": [p]}])
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([p * 2])
    with pytest.raises(TypeError, match="floating-point"):
        optim.SGD([mg.tensor(np.array([1, 2]))])
    with pytest.raises(TypeError, match="Tensors"):
        optim.SGD([P0])


# --------------------------------------------------------------------------- checkpoints

CHECKPOINT_CASES = [
    pytest.param(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01), id="sgd"),
    pytest.param(lambda ps: optim.Adam(ps, lr=0.1, betas=(0.8, 0.99), amsgrad=True), id="adam"),
    pytest.param(lambda ps: optim.AdamW([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.01}], lr=0.1),
                 id="adamw-groups"),
]


def two_params():
    return [param([[1.0, -2.0], [0.5, 3.0]], np.float32), param([0.25, -0.75, 1.5], np.float32)]


def step_grads(k):
    g = GRADS[k]
    return [np.array([g[:2], g[1:]]), g[::-1]]


@pytest.mark.parametrize("make", CHECKPOINT_CASES)
def test_resuming_from_an_npz_checkpoint_is_bit_identical(make, tmp_path):
    straight = two_params()
    opt = make(straight)
    sched = optim.WarmupCosine(opt, warmup_steps=2, total_steps=6, min_lr=1e-3)
    for k in range(6):
        trajectory(opt, straight, [step_grads(k)])
        sched.step()

    first = two_params()
    opt = make(first)
    sched = optim.WarmupCosine(opt, warmup_steps=2, total_steps=6, min_lr=1e-3)
    for k in range(3):
        trajectory(opt, first, [step_grads(k)])
        sched.step()
    ckpt = {f"param.{i}": p.numpy() for i, p in enumerate(first)}
    ckpt.update(optim.flatten_state(opt.state_dict(), "optim."))
    ckpt.update(optim.flatten_state(sched.state_dict(), "sched."))
    mg.save(ckpt, tmp_path / "ckpt.npz")

    loaded = mg.load(tmp_path / "ckpt.npz")
    resumed = [param(loaded[f"param.{i}"], np.float32) for i in range(2)]
    opt = make(resumed)
    sched = optim.WarmupCosine(opt, warmup_steps=2, total_steps=6, min_lr=1e-3)
    opt.load_state_dict(optim.unflatten_state(loaded, "optim."))
    sched.load_state_dict(optim.unflatten_state(loaded, "sched."))
    for k in range(3, 6):
        trajectory(opt, resumed, [step_grads(k)])
        sched.step()
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert b.dtype == np.float32


def assert_same_state(a, b):
    """Deep equality with types: arrays equal in dtype and value, numbers equal in type."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same_state(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same_state(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


@pytest.mark.parametrize("make", CHECKPOINT_CASES)
def test_flatten_unflatten_round_trip(make):
    params = two_params()
    opt = make(params)
    optim.StepLR(opt, step_size=2)  # adds "initial_lr" to the groups
    trajectory(opt, params, [step_grads(0), step_grads(1)])
    sd = opt.state_dict()
    flat = optim.flatten_state(sd)
    assert all(isinstance(k, str) and isinstance(v, np.ndarray) for k, v in flat.items())
    back = optim.unflatten_state(flat)
    assert_same_state(back, sd)
    assert isinstance(back["param_groups"][0]["lr"], float)


def test_state_dict_is_a_snapshot_and_loading_copies():
    p = param(P0)
    opt = optim.Adam([p], lr=0.1)
    trajectory(opt, [p], [[GRADS[0]]])
    sd = opt.state_dict()
    saved = sd["state"][0]["exp_avg"].copy()
    other = optim.Adam([param(P0)], lr=0.1)
    other.load_state_dict(sd)
    trajectory(opt, [p], [[GRADS[1]]])
    other.param_groups[0]["params"][0].grad = GRADS[1].copy()
    other.step()
    np.testing.assert_array_equal(sd["state"][0]["exp_avg"], saved)
    assert sd["state"][0]["step"] == 1 and other.state[0]["step"] == 2
    np.testing.assert_array_equal(other.state[0]["exp_avg"], opt.state[0]["exp_avg"])


def test_load_state_dict_restores_hyperparameters():
    p = param(P0)
    sd = optim.SGD([p], lr=0.5, momentum=0.3).state_dict()
    opt = optim.SGD([param(P0)], lr=0.1)
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[0]["momentum"] == 0.3


def test_bad_state_dicts_are_rejected_without_changes():
    p = param(P0)
    opt = optim.Adam([p], lr=0.1)
    trajectory(opt, [p], [[GRADS[0]]])
    sd = opt.state_dict()
    small = optim.Adam([param([1.0, 2.0])], lr=0.2)
    with pytest.raises(ValueError, match=r"exp_avg of parameter 0 has shape \(3,\)"):
        small.load_state_dict(sd)
    assert small.state == {} and small.param_groups[0]["lr"] == 0.2
    with pytest.raises(ValueError, match="1 parameter groups, the optimizer 2"):
        optim.Adam([{"params": [param(P0)]}, {"params": [param(P0)]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="group 0 has 1 parameters"):
        optim.Adam([param(P0), param(P0)]).load_state_dict(sd)


def test_flatten_rejects_what_an_npz_cannot_hold():
    with pytest.raises(TypeError, match="None"):
        optim.flatten_state({"param_groups": [{"params": [0], "lr": None}], "state": {}})
    with pytest.raises(TypeError, match="dot"):
        optim.flatten_state({"param_groups": [{"params": [0], "a.b": 1.0}], "state": {}})
    flat = {"weight": np.ones(2), **optim.flatten_state({"last_epoch": 3, "base_lrs": [0.1, 0.2]}, "s.")}
    assert optim.unflatten_state(flat, "s.") == {"last_epoch": 3, "base_lrs": [0.1, 0.2]}


# --------------------------------------------------------------------------- clip_grad_norm_


def with_grads(*grads):
    params = [mg.tensor(np.zeros_like(np.asarray(g, dtype=np.float64)), requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = np.array(g, dtype=np.float64)
    return params


def test_clip_grad_norm_by_hand():
    a, b = with_grads([3.0, 4.0], [[12.0]])  # one vector (3, 4, 12): norm 13
    assert optim.clip_grad_norm_([a, b], max_norm=6.5) == pytest.approx(13.0)
    scale = 6.5 / (13.0 + 1e-6)
    np.testing.assert_allclose(a.grad, [3 * scale, 4 * scale], rtol=1e-15)
    np.testing.assert_allclose(b.grad, [[12 * scale]], rtol=1e-15)


def test_clip_grad_norm_leaves_small_gradients_alone():
    a, b = with_grads([3.0, 4.0], [[12.0]])
    assert optim.clip_grad_norm_(iter([a, b]), max_norm=20.0) == pytest.approx(13.0)
    np.testing.assert_array_equal(a.grad, [3.0, 4.0])
    np.testing.assert_array_equal(b.grad, [[12.0]])


@pytest.mark.parametrize("norm_type, total", [
    pytest.param(float("inf"), 7.0, id="inf"),
    pytest.param("inf", 7.0, id="inf-string"),
    pytest.param(1.0, 11.0, id="l1"),
    pytest.param(3.0, 371 ** (1 / 3), id="l3"),  # 1 + 343 + 27
])
def test_clip_grad_norm_other_norms(norm_type, total):
    a, b = with_grads([1.0, -7.0], [3.0])
    assert optim.clip_grad_norm_([a, b], 3.5, norm_type=norm_type) == pytest.approx(total, rel=1e-12)
    scale = 3.5 / (total + 1e-6)
    np.testing.assert_allclose(a.grad, [scale, -7 * scale], rtol=1e-12)


def test_clip_grad_norm_edges():
    a, b = with_grads([3.0, 4.0], [1.0])
    b.grad = None
    assert optim.clip_grad_norm_(a, 1.0) == pytest.approx(5.0)  # a single tensor, None skipped
    assert optim.clip_grad_norm_([b], 1.0) == 0.0
    f32 = mg.tensor([1.0, 1.0], requires_grad=True)
    f32.grad = np.array([30.0, 40.0], dtype=np.float32)
    optim.clip_grad_norm_([f32], 1.0)
    assert f32.grad.dtype == np.float32
    np.testing.assert_allclose(f32.grad, [0.6, 0.8], rtol=1e-6)
    (c,) = with_grads([np.nan, 1.0])
    with pytest.raises(RuntimeError, match="nan"):
        optim.clip_grad_norm_([c], 1.0, error_if_nonfinite=True)
    with pytest.raises(ValueError, match="norm_type"):
        optim.clip_grad_norm_([c], 1.0, norm_type=0)


@given(st.lists(arrays(shapes(max_dims=2, max_side=4), -100, 100), min_size=1, max_size=3),
       st.floats(0.1, 10))
def test_clip_grad_norm_caps_the_joint_norm_and_keeps_the_direction(grads, max_norm):
    params = with_grads(*grads)
    whole = np.concatenate([g.ravel() for g in grads])
    total = optim.clip_grad_norm_(params, max_norm)
    assert total == pytest.approx(np.linalg.norm(whole), rel=1e-12, abs=1e-12)
    clipped = np.concatenate([p.grad.numpy().ravel() for p in params])
    assert np.linalg.norm(clipped) <= max(max_norm, total) * (1 + 1e-12)
    np.testing.assert_allclose(clipped, whole * min(1.0, max_norm / (total + 1e-6)), rtol=1e-12)


# --------------------------------------------------------------------------- schedules


def test_cosine_lr_at_key_steps():
    base, lo, w, t = 1.0, 0.1, 4, 12
    assert optim.cosine_lr(0, base, w, t, lo) == pytest.approx(0.2)  # base / (w + 1): near 0
    assert optim.cosine_lr(w - 1, base, w, t, lo) == pytest.approx(0.8)
    assert optim.cosine_lr(w, base, w, t, lo) == pytest.approx(1.0)  # warmup end: the peak
    assert optim.cosine_lr(8, base, w, t, lo) == pytest.approx(0.55)  # middle: mean of base, min
    three_quarters = 0.1 + 0.9 * (1 + math.cos(0.75 * math.pi)) / 2
    assert optim.cosine_lr(10, base, w, t, lo) == pytest.approx(three_quarters)
    assert optim.cosine_lr(t, base, w, t, lo) == pytest.approx(0.1)  # end
    assert optim.cosine_lr(t + 50, base, w, t, lo) == 0.1
    assert optim.cosine_lr(0, base, 0, t) == 1.0  # no warmup
    lrs = [optim.cosine_lr(s, base, w, t, lo) for s in range(t + 2)]
    assert lrs[: w + 1] == sorted(lrs[: w + 1]) and lrs[w:] == sorted(lrs[w:], reverse=True)


def test_warmup_cosine_sets_each_groups_lr():
    opt = optim.SGD([{"params": [param(P0)], "lr": 1.0}, {"params": [param(P0)], "lr": 0.1}])
    sched = optim.WarmupCosine(opt, warmup_steps=4, total_steps=12, min_lr=0.01)
    assert sched.get_last_lr() == pytest.approx([0.2, 0.02])
    assert [g["lr"] for g in opt.param_groups] == sched.get_last_lr()
    seen = {0: sched.get_last_lr()}
    for s in range(1, 14):
        sched.step()
        seen[s] = sched.get_last_lr()
    assert seen[4] == pytest.approx([1.0, 0.1])
    assert seen[8] == pytest.approx([0.505, 0.055])
    assert seen[12] == pytest.approx([0.01, 0.01]) and seen[13] == pytest.approx([0.01, 0.01])
    assert [g["lr"] for g in opt.param_groups] == seen[13]
    assert [g["initial_lr"] for g in opt.param_groups] == [1.0, 0.1]


def test_inverse_sqrt_at_key_steps():
    assert optim.inverse_sqrt_lr(0, 1.0, 4) == pytest.approx(0.25)  # base / warmup
    assert optim.inverse_sqrt_lr(3, 1.0, 4) == pytest.approx(1.0)  # the peak at step n = warmup
    assert optim.inverse_sqrt_lr(15, 1.0, 4) == pytest.approx(0.5)  # n = 16: sqrt(4 / 16)
    # the paper's absolute scale: d_model^-0.5 * warmup^-0.5 at the peak, base lr unused
    assert optim.inverse_sqrt_lr(3, 123.0, 4, d_model=16) == pytest.approx(0.125)
    assert optim.inverse_sqrt_lr(3999, 1e-3, 4000, d_model=512) == pytest.approx(512**-0.5 * 4000**-0.5)
    opt = optim.Adam([param(P0)], lr=2.0)
    sched = optim.InverseSqrt(opt, warmup_steps=4)
    for _ in range(3):
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(2.0)


def test_step_lr():
    assert [optim.step_lr(s, 1.0, 3, 0.5) for s in range(8)] == [1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25]
    opt = optim.SGD([param(P0)], lr=0.1)
    sched = optim.StepLR(opt, step_size=2)
    lrs = [sched.get_last_lr()[0]]
    for _ in range(4):
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs == pytest.approx([0.1, 0.1, 0.01, 0.01, 0.001])


def test_scheduler_state_dict_round_trip():
    opt = optim.AdamW([param(P0)], lr=0.5)
    sched = optim.WarmupCosine(opt, warmup_steps=3, total_steps=10)
    for _ in range(5):
        sched.step()
    sd = optim.unflatten_state(optim.flatten_state(sched.state_dict()))
    opt2 = optim.AdamW([param(P0)], lr=0.5)
    sched2 = optim.WarmupCosine(opt2, warmup_steps=3, total_steps=10)
    sched2.load_state_dict(sd)
    assert sched2.last_epoch == 5 and opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    sched.step()
    sched2.step()
    assert sched2.get_last_lr() == sched.get_last_lr()


@pytest.mark.parametrize("make, message", [
    pytest.param(lambda o: optim.WarmupCosine(o, 10, 10), "exceed", id="cosine-total"),
    pytest.param(lambda o: optim.WarmupCosine(o, -1, 10), "warmup_steps", id="cosine-warmup"),
    pytest.param(lambda o: optim.WarmupCosine(o, 1, 10, min_lr=-1), "min_lr", id="cosine-min"),
    pytest.param(lambda o: optim.InverseSqrt(o, 0), "warmup_steps", id="inverse-sqrt"),
    pytest.param(lambda o: optim.StepLR(o, 0), "step_size", id="step"),
])
def test_bad_schedules_are_clear_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make(optim.SGD([param(P0)]))


# --------------------------------------------------------------------------- packaging


def test_optim_imports_alone_and_not_nn():
    code = "import sys, minigrad.optim as o; assert o.AdamW; assert 'minigrad.nn' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
