"""PyTorch's learning-rate schedulers (`torch.optim.lr_scheduler`), with its names, arguments,
defaults and numbers: StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR,
CosineAnnealingWarmRestarts, LambdaLR, LinearLR, SequentialLR, OneCycleLR, and
ReduceLROnPlateau (which steps on a measured metric instead of a count).

    sched = lr_scheduler.StepLR(opt, step_size=30, gamma=0.1)
    for epoch in range(100):
        train(...); sched.step()

Like PyTorch's, the chainable schedules compute the next lr from the group's current one, so
the floating-point values are PyTorch's to the last bit.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable, Iterable, Mapping, Sequence

from .one_cycle import OneCycleLR
from .optimizer import Optimizer
from .scheduler import LRScheduler, _require

__all__ = [
    "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "ExponentialLR", "LRScheduler", "LambdaLR",
    "LinearLR", "MultiStepLR", "OneCycleLR", "ReduceLROnPlateau", "SequentialLR", "StepLR",
]


class LambdaLR(LRScheduler):
    """Each group's lr is its initial lr times a function of the step:  lr = base_lr * f(step).

    Args:
        optimizer: the optimizer whose learning rates are set.
        lr_lambda: a function of the step (an int) giving the factor, or a list of such
            functions, one per parameter group.
        last_epoch: the index of the last step (-1 starts a new schedule).
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | Sequence[Callable],
                 last_epoch: int = -1):
        groups = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            _require(len(lr_lambda) == groups,
                     f"LambdaLR: expected {groups} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * groups
        for f in self.lr_lambdas:
            if not callable(f):
                raise TypeError(f"LambdaLR: lr_lambda should be a function, but got {type(f).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    """Multiply each group's lr by gamma every step_size steps:
        lr = base_lr * gamma^(step // step_size)

    Args:
        optimizer: the optimizer whose learning rates are set.
        step_size: steps between decays (>= 1).
        gamma: the decay factor.
        last_epoch: the index of the last step (-1 starts a new schedule).
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        _require(step_size >= 1, f"StepLR: step_size must be >= 1, not {step_size}")
        self.step_size, self.gamma = int(step_size), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lrs = [group["lr"] for group in self.optimizer.param_groups]
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return lrs
        return [lr * self.gamma for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply each group's lr by gamma at each milestone step:
        lr = base_lr * gamma^(number of milestones <= step)
    A milestone listed twice decays twice.

    Args:
        optimizer: the optimizer whose learning rates are set.
        milestones: the steps at which to decay.
        gamma: the decay factor.
        last_epoch: the index of the last step (-1 starts a new schedule).
    """

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lrs = [group["lr"] for group in self.optimizer.param_groups]
        if self.last_epoch not in self.milestones:
            return lrs
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        n = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma**n for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply each group's lr by gamma every step:  lr = base_lr * gamma^step.

    Args:
        optimizer: the optimizer whose learning rates are set.
        gamma: the decay factor.
        last_epoch: the index of the last step (-1 starts a new schedule).
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lrs = [group["lr"] for group in self.optimizer.param_groups]
        return lrs if self._is_initial else [lr * self.gamma for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale each group's lr by a factor that moves linearly from start_factor to end_factor over
    total_iters steps, then stays:
        lr = base_lr * (start + (end - start) * min(step, total_iters) / total_iters)

    Args:
        optimizer: the optimizer whose learning rates are set.
        start_factor: the factor at step 0, in (0, 1].
        end_factor: the factor from step total_iters on, in [0, 1].
        total_iters: the steps the factor takes to reach end_factor.
        last_epoch: the index of the last step (-1 starts a new schedule).
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], not {start_factor}")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], not {end_factor}")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lrs = [group["lr"] for group in self.optimizer.param_groups]
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in lrs]
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        # the ratio of this step's factor to the previous step's
        rise = self.end_factor - self.start_factor
        ratio = 1.0 + rise / (self.total_iters * self.start_factor + (self.last_epoch - 1) * rise)
        return [lr * ratio for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * done)
                for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """A half cosine from each group's initial lr down to eta_min over T_max steps:
        lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * step / T_max)) / 2
    computed, as in PyTorch, from the previous lr; past T_max it rises again (a full cosine
    period is 2 T_max). SGDR (Loshchilov & Hutter, 2017) without the restarts.

    Args:
        optimizer: the optimizer whose learning rates are set.
        T_max: steps from the initial lr to eta_min (> 0).
        eta_min: the smallest learning rate.
        last_epoch: the index of the last step (-1 starts a new schedule).
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        _require(T_max > 0, f"CosineAnnealingLR: T_max must be > 0, not {T_max}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups, t, T, lo = self.optimizer.param_groups, self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return [group["lr"] for group in groups]
        if (t - 1 - T) % (2 * T) == 0:  # leaving the trough: the ratio below would divide by 0
            return [group["lr"] + (base - lo) * (1 - math.cos(math.pi / T)) / 2
                    for base, group in zip(self.base_lrs, groups)]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (group["lr"] - lo) + lo for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        cos = math.cos(math.pi * self.last_epoch / self.T_max)
        return [self.eta_min + (base - self.eta_min) * (1 + cos) / 2 for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov & Hutter, 2017): a half cosine from each group's initial lr down to
    eta_min over T_i steps, then a restart at the initial lr, each period T_mult times longer:
        lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2
    where T_cur counts the steps since the last restart (T_0 the first period).

    `step()` advances one step; `step(epoch)` jumps to `epoch`, which may be fractional, as in
    PyTorch's `scheduler.step(epoch + i / len(loader))` inside an epoch.

    Args:
        optimizer: the optimizer whose learning rates are set.
        T_0: steps of the first period (a positive int).
        T_mult: how many times longer each period is than the one before (an int >= 1).
        eta_min: the smallest learning rate.
        last_epoch: the index of the last step (-1 starts a new schedule).
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        _require(isinstance(T_0, int) and T_0 > 0, f"CosineAnnealingWarmRestarts: expected a positive "
                 f"integer T_0, but got {T_0}")
        _require(isinstance(T_mult, int) and T_mult >= 1, f"CosineAnnealingWarmRestarts: expected an "
                 f"integer T_mult >= 1, but got {T_mult}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur: float = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        cos = math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (base - self.eta_min) * (1 + cos) / 2 for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """One step on, or to `epoch` (>= 0, may be fractional)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:  # a restart
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected a non-negative epoch, "
                             f"but got {epoch}")
        elif epoch >= self.T_0 and self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        elif epoch >= self.T_0:  # the period holding epoch: T_0 (T_mult^n - 1) / (T_mult - 1) <= epoch
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult ** n
        else:
            self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        self._set(self.get_lr())

    def state_dict(self) -> dict[str, Any]:
        """The base state and where the schedule is in its period (T_cur of T_i)."""
        return {**super().state_dict(), "T_cur": self.T_cur, "T_i": self.T_i}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self.T_cur, self.T_i = float(state_dict["T_cur"]), int(state_dict["T_i"])


class ReduceLROnPlateau(LRScheduler):
    """Multiply each group's lr by `factor` when a metric has stopped improving for more than
    `patience` steps: `scheduler.step(val_loss)` once per evaluation, as PyTorch's.

    "Improving" is, for mode "min", a value below best * (1 - threshold) (threshold_mode
    "rel") or below best - threshold ("abs"); for "max" above best * (1 + threshold) or best +
    threshold. After a reduction, `cooldown` steps pass before bad steps count again. No lr
    goes below its min_lr, and a change smaller than eps is not made.

    Args:
        optimizer: the optimizer whose learning rates are set.
        mode: "min" (a loss) or "max" (an accuracy).
        factor: the factor of a reduction (< 1).
        patience: how many steps without improvement are tolerated.
        threshold: the least change that counts as an improvement.
        threshold_mode: "rel" or "abs".
        cooldown: steps to wait after a reduction.
        min_lr: the lowest lr, one for all groups or a list with one per group.
        eps: the smallest change of lr that is made.
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | Sequence[float] = 0, eps: float = 1e-8):
        _require(factor < 1.0, f"ReduceLROnPlateau: factor should be < 1.0, got {factor}")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"ReduceLROnPlateau: expected an Optimizer, not {type(optimizer).__name__}")
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode {mode!r} is unknown (use 'min' or 'max')")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold mode {threshold_mode!r} is unknown "
                             "(use 'rel' or 'abs')")
        groups = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            _require(len(min_lr) == groups,
                     f"ReduceLROnPlateau: expected {groups} min_lrs, got {len(min_lr)}")
            self.min_lrs = [float(m) for m in min_lr]
        else:
            self.min_lrs = [float(min_lr)] * groups
        self.optimizer, self.mode, self.factor, self.patience = optimizer, mode, factor, patience
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.cooldown, self.eps = cooldown, eps
        self.last_epoch = 0
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def get_lr(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def is_better(self, a: float, best: float) -> bool:
        """Whether the metric a improves on best, by the mode and threshold."""
        rel = self.threshold_mode == "rel"
        if self.mode == "min":
            return a < (best * (1 - self.threshold) if rel else best - self.threshold)
        return a > (best * (1 + self.threshold) if rel else best + self.threshold)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def step(self, metrics: Any) -> None:  # type: ignore[override]
        """Take the metric of this evaluation (a number or a 0-d tensor) and reduce if due."""
        try:
            current = float(metrics)
        except (TypeError, ValueError):
            raise TypeError(f"ReduceLROnPlateau.step: the metric must be a number or a 0-d tensor, "
                            f"not {metrics!r:.60}") from None
        self.last_epoch += 1
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad steps in the cooldown do not count
        if self.num_bad_epochs > self.patience:
            for group, low in zip(self.optimizer.param_groups, self.min_lrs):
                new = max(group["lr"] * self.factor, low)
                if group["lr"] - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        return {"last_epoch": self.last_epoch, "best": self.best, "num_bad_epochs": self.num_bad_epochs,
                "cooldown_counter": self.cooldown_counter, "last_lr": list(self._last_lr)}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        self.last_epoch = int(state_dict["last_epoch"])
        self.best = float(state_dict["best"])
        self.num_bad_epochs = int(state_dict["num_bad_epochs"])
        self.cooldown_counter = int(state_dict["cooldown_counter"])
        self._last_lr = [float(x) for x in state_dict["last_lr"]]


class SequentialLR(LRScheduler):
    """Run schedules one after another: schedulers[i] from milestones[i - 1] on, each restarted
    (at its step 0) when its turn comes.

    Args:
        optimizer: the optimizer all the schedulers set.
        schedulers: the schedules, already built on `optimizer`.
        milestones: the steps at which the next schedule takes over (one fewer than schedulers).
        last_epoch: the index of the last step (-1 starts a new schedule).

    Example:
        >>> warmup = LinearLR(opt, start_factor=0.1, total_iters=5)
        >>> decay = CosineAnnealingLR(opt, T_max=95)
        >>> sched = SequentialLR(opt, schedulers=[warmup, decay], milestones=[5])
    """

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler], milestones: Sequence[int],
                 last_epoch: int = -1):
        _require(len(schedulers) >= 1, "SequentialLR expects at least one scheduler, but got none")
        for i, scheduler in enumerate(schedulers):
            if not isinstance(scheduler, LRScheduler):
                raise TypeError(f"SequentialLR: schedulers[{i}] is a {type(scheduler).__name__}, "
                                "not an LRScheduler")
            _require(scheduler.optimizer is optimizer,
                     f"SequentialLR expects all schedulers to belong to the same optimizer, but "
                     f"schedulers[{i}] ({type(scheduler).__name__}) has another one")
        _require(len(milestones) == len(schedulers) - 1,
                 f"SequentialLR expects one milestone fewer than schedulers, but got "
                 f"{len(schedulers)} schedulers and {len(milestones)} milestones")
        self.optimizer = optimizer
        self._schedulers = list(schedulers)
        self._milestones = [int(m) for m in milestones]
        self.last_epoch = last_epoch + 1
        self.base_lrs = [float(group["initial_lr"]) for group in optimizer.param_groups]
        # Building each scheduler took its step 0; undo them and take the first one's again.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo_steps(self)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo_steps(self, scheduler: LRScheduler) -> None:
        if isinstance(scheduler, SequentialLR):
            for s in scheduler._schedulers:
                self._undo_steps(s)
        else:
            scheduler.last_epoch -= 1

    def get_lr(self) -> list[float]:
        return list(self._last_lr)  # the current schedule's

    def step(self) -> None:
        """Advance one step: the current schedule steps, or the next one starts at its step 0."""
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        """The step count and lrs, and under "_schedulers" each schedule's own state dict."""
        return {**super().state_dict(), "_schedulers": [s.state_dict() for s in self._schedulers]}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        saved = state_dict["_schedulers"]
        _require(len(saved) == len(self._schedulers),
                 f"SequentialLR.load_state_dict: {len(saved)} schedulers in the checkpoint, "
                 f"{len(self._schedulers)} here")
        for s, sd in zip(self._schedulers, saved):
            s.load_state_dict(sd)
        super().load_state_dict(state_dict)
