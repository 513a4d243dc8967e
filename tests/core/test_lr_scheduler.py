"""minigrad.optim.lr_scheduler against torch.optim.lr_scheduler: the learning rates (and OneCycleLR's
momentum) of each scheduler over 30 steps and two parameter groups, equal to the last bit, for
tabled and drawn arguments; resuming (state dicts, last_epoch); the errors torch raises; and the
one StepLR shared with the older schedules."""

import json
import math

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import warnings  # noqa: E402

import numpy as np  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.optim as optim  # noqa: E402
from minigrad.optim import lr_scheduler as M  # noqa: E402

T = torch.optim.lr_scheduler

fewer = settings(max_examples=max(10, settings.default.max_examples // 2))
LRS = (0.1, 0.025)  # the two groups' learning rates
STEPS = 30


def optimizers(name="SGD", lrs=LRS, **kwargs):
    """The same optimizer, one parameter per group, in both libraries."""
    mine = getattr(optim, name)(
        [{"params": [mg.tensor(np.ones(2), requires_grad=True)], "lr": lr} for lr in lrs], **kwargs)
    theirs = getattr(torch.optim, name)(
        [{"params": [torch.ones(2, requires_grad=True)], "lr": lr} for lr in lrs], **kwargs)
    return mine, theirs


def momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum") for g in opt.param_groups]


def trace(sched, opt, steps, step_optimizer=None):
    """get_last_lr(), the groups' lr and their momentum after construction and each step."""
    out = [(sched.get_last_lr(), [g["lr"] for g in opt.param_groups], momenta(opt))]
    for _ in range(steps):
        if step_optimizer is not None:
            step_optimizer()
        sched.step()
        out.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups], momenta(opt)))
    return out


def compare(make, name="SGD", steps=STEPS, lrs=LRS, **kwargs):
    """make(module, optimizer) in both libraries; the traces must be equal (not just close)."""
    mine, theirs = optimizers(name, lrs, **kwargs)
    ms, ts = make(M, mine), make(T, theirs)
    assert ms.last_epoch == ts.last_epoch == 0
    got = trace(ms, mine, steps)
    want = trace(ts, theirs, steps, theirs.step)
    assert got == want
    assert ms.last_epoch == ts.last_epoch == steps
    return ms, mine


CASES = [
    pytest.param(lambda m, o: m.StepLR(o, step_size=7), id="step"),
    pytest.param(lambda m, o: m.StepLR(o, 3, gamma=0.5), id="step-gamma"),
    pytest.param(lambda m, o: m.MultiStepLR(o, milestones=[3, 10, 20]), id="multistep"),
    pytest.param(lambda m, o: m.MultiStepLR(o, [12, 4, 12], gamma=0.3), id="multistep-repeated"),
    pytest.param(lambda m, o: m.ExponentialLR(o, gamma=0.9), id="exponential"),
    pytest.param(lambda m, o: m.CosineAnnealingLR(o, T_max=10), id="cosine"),
    pytest.param(lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.01), id="cosine-eta_min"),
    pytest.param(lambda m, o: m.LambdaLR(o, lr_lambda=lambda e: 0.95**e), id="lambda"),
    pytest.param(lambda m, o: m.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: e // 4]), id="lambda-list"),
    pytest.param(lambda m, o: m.LinearLR(o), id="linear"),
    pytest.param(lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.0, total_iters=20),
                 id="linear-decay"),
    pytest.param(lambda m, o: m.OneCycleLR(o, max_lr=1.0, total_steps=STEPS), id="onecycle"),
    pytest.param(lambda m, o: m.OneCycleLR(o, [0.5, 2.0], epochs=5, steps_per_epoch=6, pct_start=0.25,
                                           anneal_strategy="linear", div_factor=10.0), id="onecycle-linear"),
    pytest.param(lambda m, o: m.OneCycleLR(o, 1.0, total_steps=STEPS + 1, three_phase=True,
                                           base_momentum=[0.8, 0.7], max_momentum=0.9), id="onecycle-3"),
    pytest.param(lambda m, o: m.OneCycleLR(o, 0.3, total_steps=STEPS, cycle_momentum=False),
                 id="onecycle-no-momentum"),
    pytest.param(lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=7), id="warm-restarts"),
    pytest.param(lambda m, o: m.CosineAnnealingWarmRestarts(o, 3, T_mult=2, eta_min=0.001),
                 id="warm-restarts-mult"),
    pytest.param(lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5), m.CosineAnnealingLR(o, T_max=10),
            m.StepLR(o, 4, gamma=0.5)], milestones=[5, 15]), id="sequential"),
    pytest.param(lambda m, o: m.SequentialLR(
        o, [m.ExponentialLR(o, 0.8), m.LambdaLR(o, lambda e: 1 + e), m.MultiStepLR(o, [2, 3])],
        milestones=[4, 10]), id="sequential-restarts"),
]


@pytest.mark.parametrize("make", CASES)
def test_learning_rates_equal_torchs(make):
    compare(make)


@pytest.mark.parametrize("make", [c for c in CASES if "onecycle" in c.id])
@pytest.mark.parametrize("name", ["Adam", "RMSprop"])
def test_onecycle_cycles_beta1_or_momentum_like_torch(make, name):
    compare(make, name)  # momenta() reads Adam's beta1 and RMSprop's momentum


def test_cosine_annealing_goes_on_past_t_max_like_torch():
    compare(lambda m, o: m.CosineAnnealingLR(o, T_max=3, eta_min=0.001), steps=40)


@fewer
@given(step_size=st.integers(1, 12), gamma=st.floats(0.05, 1.0), milestones=st.lists(st.integers(0, 35)))
def test_drawn_step_schedules_equal_torchs(step_size, gamma, milestones):
    compare(lambda m, o: m.StepLR(o, step_size, gamma))
    compare(lambda m, o: m.MultiStepLR(o, milestones, gamma))
    compare(lambda m, o: m.ExponentialLR(o, gamma))


@fewer
@given(t_max=st.integers(1, 40), eta_min=st.floats(0.0, 0.02), start=st.floats(0.01, 1.0),
       end=st.floats(0.0, 1.0), total_iters=st.integers(1, 40))
def test_drawn_cosine_and_linear_equal_torchs(t_max, eta_min, start, end, total_iters):
    compare(lambda m, o: m.CosineAnnealingLR(o, t_max, eta_min))
    compare(lambda m, o: m.LinearLR(o, start, end, total_iters))


@fewer
@given(total=st.integers(STEPS, 60), pct_start=st.floats(0.05, 0.95), div=st.floats(1.0, 100.0),
       final_div=st.floats(1.0, 1e5), three_phase=st.booleans(), anneal=st.sampled_from(["cos", "linear"]))
def test_drawn_onecycle_equals_torchs(total, pct_start, div, final_div, three_phase, anneal):
    compare(lambda m, o: m.OneCycleLR(o, [1.0, 0.1], total_steps=total, pct_start=pct_start, div_factor=div,
                                      final_div_factor=final_div, three_phase=three_phase,
                                      anneal_strategy=anneal))


def test_construction_sets_the_first_lr_and_initial_lr_like_torch():
    mine, theirs = optimizers()
    M.LinearLR(mine, start_factor=0.5)
    T.LinearLR(theirs, start_factor=0.5)
    assert [g["lr"] for g in mine.param_groups] == [g["lr"] for g in theirs.param_groups] == [0.05, 0.0125]
    assert [g["initial_lr"] for g in mine.param_groups] == list(LRS)
    s = M.OneCycleLR(mine, max_lr=2.0, total_steps=10)
    assert s.base_lrs == [2.0 / 25] * 2 and mine.param_groups[0]["min_lr"] == 2.0 / 25 / 1e4
    assert mine.param_groups[0]["momentum"] == 0.95  # SGD's momentum, cycled from its max


# --------------------------------------------------------------------------- resuming


@pytest.mark.parametrize("make", CASES)
def test_state_dict_round_trip_mid_run_continues_identically(make, tmp_path):
    opt, _ = optimizers()
    straight = trace(make(M, opt), opt, STEPS)

    opt, _ = optimizers()
    sched = make(M, opt)
    before = trace(sched, opt, 11)
    ckpt = {**optim.flatten_state(opt.state_dict(), "optim."),
            **optim.flatten_state(sched.state_dict(), "s.")}
    mg.save(ckpt, tmp_path / "ckpt.npz")
    as_json = json.loads(json.dumps(sched.state_dict()))  # the training loop keeps it as JSON

    for sd in (optim.unflatten_state(mg.load(tmp_path / "ckpt.npz"), "s."), as_json):
        opt2, _ = optimizers(lrs=(7.0, 9.0))
        sched2 = make(M, opt2)
        opt2.load_state_dict(optim.unflatten_state(mg.load(tmp_path / "ckpt.npz"), "optim."))
        sched2.load_state_dict(sd)
        assert sched2.last_epoch == 11
        after = trace(sched2, opt2, STEPS - 11)
        assert before[:-1] + after == straight


def test_last_epoch_resumes_like_torch():
    mine, theirs = optimizers()
    for g, h in zip(mine.param_groups, theirs.param_groups):
        g["initial_lr"] = h["initial_lr"] = g["lr"] * 2
    for make in (lambda m, o: m.StepLR(o, 3, last_epoch=5),
                 lambda m, o: m.CosineAnnealingLR(o, 9, last_epoch=4),
                 lambda m, o: m.LambdaLR(o, lambda e: 0.5**e, last_epoch=2)):
        ms, ts = make(M, mine), make(T, theirs)
        assert ms.last_epoch == ts.last_epoch
        assert trace(ms, mine, 10) == trace(ts, theirs, 10, theirs.step)


def test_resuming_without_initial_lr_is_a_key_error_like_torch():
    mine, theirs = optimizers()
    with pytest.raises(KeyError):
        T.StepLR(theirs, 3, last_epoch=4)
    with pytest.raises(KeyError, match="initial_lr"):
        M.StepLR(mine, 3, last_epoch=4)


def test_sequential_state_dict_holds_each_schedulers_state():
    opt, _ = optimizers()
    sched = M.SequentialLR(opt, [M.ExponentialLR(opt, 0.5), M.StepLR(opt, 2)], milestones=[3])
    for _ in range(5):
        sched.step()
    sd = sched.state_dict()
    assert [s["last_epoch"] for s in sd["_schedulers"]] == [2, 2] and sd["last_epoch"] == 5
    flat = optim.flatten_state(sd)
    assert "_schedulers.1.last_epoch" in flat
    assert optim.unflatten_state(flat) == sd
    with pytest.raises(ValueError, match="2 schedulers"):
        M.SequentialLR(opt, [M.StepLR(opt, 2)], milestones=[]).load_state_dict(sd)


def test_bad_scheduler_state_dict_is_refused():
    opt, _ = optimizers()
    sched = M.StepLR(opt, 2)
    with pytest.raises(ValueError, match="1 learning rates in the checkpoint, 2 parameter groups"):
        sched.load_state_dict({"last_epoch": 3, "base_lrs": [0.1], "last_lr": [0.1]})


# --------------------------------------------------------------------------- errors


TORCH_RAISES = [  # (make, exception, minigrad's message)
    pytest.param(lambda m, o: m.LinearLR(o, start_factor=0.0), ValueError, "start_factor",
                 id="linear-start0"),
    pytest.param(lambda m, o: m.LinearLR(o, start_factor=1.5), ValueError, "start_factor", id="linear-start"),
    pytest.param(lambda m, o: m.LinearLR(o, end_factor=-0.1), ValueError, "end_factor", id="linear-end"),
    pytest.param(lambda m, o: m.LambdaLR(o, [lambda e: 1.0]), ValueError, "2 lr_lambdas", id="lambda-count"),
    pytest.param(lambda m, o: m.OneCycleLR(o, 1.0), ValueError, "total_steps OR", id="onecycle-no-steps"),
    pytest.param(lambda m, o: m.OneCycleLR(o, 1.0, total_steps=0), ValueError, "total_steps",
                 id="onecycle-steps0"),
    pytest.param(lambda m, o: m.OneCycleLR(o, 1.0, total_steps=2.5), ValueError, "total_steps",
                 id="onecycle-steps-float"),
    pytest.param(lambda m, o: m.OneCycleLR(o, 1.0, epochs=0, steps_per_epoch=3), ValueError, "epochs",
                 id="onecycle-epochs"),
    pytest.param(lambda m, o: m.OneCycleLR(o, 1.0, epochs=2, steps_per_epoch=-3), ValueError,
                 "steps_per_epoch", id="onecycle-steps-per-epoch"),
    pytest.param(lambda m, o: m.OneCycleLR(o, 1.0, 10, pct_start=1.5), ValueError, "pct_start",
                 id="onecycle-pct"),
    pytest.param(lambda m, o: m.OneCycleLR(o, 1.0, 10, pct_start=0), ValueError, "pct_start",
                 id="onecycle-pct-int"),
    pytest.param(lambda m, o: m.OneCycleLR(o, 1.0, 10, anneal_strategy="exp"), ValueError, "anneal_strategy",
                 id="onecycle-anneal"),
    pytest.param(lambda m, o: m.OneCycleLR(o, [1.0, 2.0, 3.0], 10), ValueError, "max_lr",
                 id="onecycle-max_lr"),
    pytest.param(lambda m, o: m.SequentialLR(o, [], milestones=[]), ValueError, "at least one",
                 id="sequential-empty"),
    pytest.param(lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2), m.StepLR(o, 3)], milestones=[]), ValueError,
                 "milestone", id="sequential-milestones"),
    pytest.param(lambda m, o: m.SequentialLR(o, [object()], milestones=[]), TypeError, "schedulers",
                 id="sequential-not-a-scheduler"),
    pytest.param(lambda m, o: m.StepLR(object(), 2), TypeError, "Optimizer", id="not-an-optimizer"),
]


@pytest.mark.parametrize("make, error, message", TORCH_RAISES)
def test_bad_arguments_raise_like_torch(make, error, message):
    mine, theirs = optimizers()
    with pytest.raises(error), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make(T, theirs)
    with pytest.raises(error, match=message):
        make(M, mine)


def test_sequential_schedulers_must_share_the_optimizer():
    (mine, theirs), (other, tother) = optimizers(), optimizers()
    with pytest.raises(ValueError):
        T.SequentialLR(theirs, [T.StepLR(tother, 2)], milestones=[])
    with pytest.raises(ValueError, match="same optimizer"):
        M.SequentialLR(mine, [M.StepLR(other, 2)], milestones=[])


def test_onecycle_past_its_end_and_without_momentum_raise_like_torch():
    mine, theirs = optimizers()
    ms, ts = M.OneCycleLR(mine, 1.0, total_steps=3), T.OneCycleLR(theirs, 1.0, total_steps=3)
    for _ in range(3):
        theirs.step()
        ts.step()
        ms.step()
    with pytest.raises(ValueError):
        ts.step()
    with pytest.raises(ValueError, match="tried to step 4 times"):
        ms.step()
    mine, theirs = optimizers("Adagrad")
    with pytest.raises(ValueError):
        T.OneCycleLR(theirs, 1.0, total_steps=3)
    with pytest.raises(ValueError, match="momentum or beta1"):
        M.OneCycleLR(mine, 1.0, total_steps=3)


@pytest.mark.parametrize("make, message", [
    pytest.param(lambda o: M.StepLR(o, 0), "step_size", id="step_size"),
    pytest.param(lambda o: M.CosineAnnealingLR(o, T_max=0), "T_max", id="t_max"),
    pytest.param(lambda o: M.LambdaLR(o, 0.5), "function", id="lambda-not-callable"),
])
def test_arguments_torch_fails_on_later_are_refused_at_once(make, message):
    # torch divides by zero (or calls a float) at some later step; here the constructor says why
    with pytest.raises((ValueError, TypeError), match=message):
        make(optimizers()[0])


# --------------------------------------------------------------------------- one StepLR


def test_one_steplr_and_the_older_schedules_share_the_base():
    assert optim.StepLR is M.StepLR and optim.LRScheduler is M.LRScheduler
    assert issubclass(optim.WarmupCosine, M.LRScheduler) and issubclass(optim.InverseSqrt, M.LRScheduler)
    assert set(M.__all__) <= set(optim.__all__) and "lr_scheduler" in optim.__all__
    opt, _ = optimizers()
    sched = optim.StepLR(opt, step_size=3, gamma=0.5)
    lrs = [sched.get_last_lr()[0]] + [(sched.step(), sched.get_last_lr()[0])[1] for _ in range(7)]
    assert lrs == pytest.approx([optim.step_lr(s, 0.1, 3, 0.5) for s in range(8)], rel=1e-15)


def test_warmup_cosine_inside_sequential_lr():
    # the closed-form schedules restart at their step 0 when SequentialLR hands over
    opt, _ = optimizers(lrs=(1.0,))
    sched = M.SequentialLR(opt, [M.ExponentialLR(opt, 0.5), optim.WarmupCosine(opt, 2, 10)], milestones=[3])
    lrs = [sched.get_last_lr()[0]] + [(sched.step(), sched.get_last_lr()[0])[1] for _ in range(8)]
    want = [1.0, 0.5, 0.25] + [optim.cosine_lr(s, 1.0, 2, 10) for s in range(6)]
    assert lrs == pytest.approx(want, rel=1e-15)
    assert math.isclose(opt.param_groups[0]["lr"], want[-1])


def test_a_subclass_defines_get_lr_as_in_torch():
    class Halving(M.LRScheduler):
        def get_lr(self):
            return [base * 0.5**self.last_epoch for base in self.base_lrs]

    class Torchs(T.LRScheduler):
        def get_lr(self):
            return [base * 0.5**self.last_epoch for base in self.base_lrs]

    compare(lambda m, o: (Halving if m is M else Torchs)(o), steps=6)

    class Unfinished(M.LRScheduler):
        pass

    with pytest.raises(TypeError, match="get_lr"):
        Unfinished(optimizers()[0])


def test_unflatten_refuses_names_flatten_does_not_write():
    with pytest.raises(ValueError, match="not a name that flatten_state writes"):
        optim.unflatten_state({"_schedulers.x.last_epoch": np.array(1)})


# --------------------------------------------------------------------------- warm restarts, plateaus


@pytest.mark.parametrize("T_mult", [1, 2, 3])
def test_warm_restarts_at_fractional_epochs_like_torch(T_mult):
    mine, theirs = optimizers()
    ms, ts = M.CosineAnnealingWarmRestarts(mine, 4, T_mult), T.CosineAnnealingWarmRestarts(theirs, 4, T_mult)
    for epoch in [0.25, 1.5, 3.99, 4.0, 7.3, 12.0, 30.5, 2.0]:  # as step(epoch + i / len(loader)), and back
        ms.step(epoch)
        ts.step(epoch)
        assert ms.get_last_lr() == ts.get_last_lr() and ms.last_epoch == ts.last_epoch
        assert (ms.T_cur, ms.T_i) == (ts.T_cur, ts.T_i)
    ms.step()
    ts.step()
    assert ms.get_last_lr() == ts.get_last_lr()
    with pytest.raises(ValueError, match="expected a non-negative epoch, but got -1"):
        ms.step(-1)


def plateau_trace(lib, make, metrics):
    opt = optimizers()[0 if lib is M else 1]
    sched = make(lib, opt)
    out = []
    for m in metrics:
        sched.step(m)
        out.append(([g["lr"] for g in opt.param_groups], sched.num_bad_epochs, sched.cooldown_counter,
                    sched.best, sched.last_epoch))
    return out


PLATEAU_METRICS = [1.0, 0.9, 0.9, 0.95, 0.9, 0.91, 0.8, 0.85, 0.85, 0.85, 0.85, 0.7, 0.7, 0.7, 0.71, 0.72] * 2


@pytest.mark.parametrize("make", [
    pytest.param(lambda m, o: m.ReduceLROnPlateau(o), id="defaults"),
    pytest.param(lambda m, o: m.ReduceLROnPlateau(o, patience=1, factor=0.5), id="patience-1"),
    pytest.param(lambda m, o: m.ReduceLROnPlateau(o, "max", 0.3, 2, threshold=0.05), id="max"),
    pytest.param(lambda m, o: m.ReduceLROnPlateau(o, patience=0, threshold=0.02, threshold_mode="abs",
                                                  cooldown=2, min_lr=[0.01, 0.02]), id="abs-cooldown-min"),
    pytest.param(lambda m, o: m.ReduceLROnPlateau(o, patience=0, factor=0.9, eps=0.02), id="eps"),
])
def test_reduce_on_plateau_like_torch(make):
    assert plateau_trace(M, make, PLATEAU_METRICS) == plateau_trace(T, make, PLATEAU_METRICS)


def test_reduce_on_plateau_takes_a_tensor_and_resumes():
    opt, _ = optimizers()
    sched = M.ReduceLROnPlateau(opt, patience=1)
    for m in (1.0, 1.0, 1.0):
        sched.step(mg.tensor(m))
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.01, 0.0025])
    again = M.ReduceLROnPlateau(opt, patience=1)
    again.load_state_dict(json.loads(json.dumps(sched.state_dict())))
    assert (again.best, again.num_bad_epochs, again.last_epoch) == (1.0, 0, 3)
    with pytest.raises(TypeError, match="ReduceLROnPlateau.step: the metric must be a number or a 0-d"):
        again.step(None)


@pytest.mark.parametrize("make, error, message", [
    (lambda m, o: m.ReduceLROnPlateau(o, factor=1.0), ValueError, "factor should be < 1.0"),
    (lambda m, o: m.ReduceLROnPlateau(o, mode="up"), ValueError, "mode 'up' is unknown"),
    (lambda m, o: m.ReduceLROnPlateau(o, threshold_mode="pct"), ValueError,
     "threshold mode 'pct' is unknown"),
    (lambda m, o: m.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError, "expected 2 min_lrs, got 1"),
    (lambda m, o: m.CosineAnnealingWarmRestarts(o, 0), ValueError, "expected a positive integer T_0"),
    (lambda m, o: m.CosineAnnealingWarmRestarts(o, 2, T_mult=0), ValueError, "integer T_mult >= 1"),
])
def test_warm_restarts_and_plateau_arguments_are_checked(make, error, message):
    mine, theirs = optimizers()
    with pytest.raises(error, match=message):
        make(M, mine)
    with pytest.raises(error):
        make(T, theirs)
