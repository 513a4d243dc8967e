"""OneCycleLR, the 1cycle policy (Smith & Topin, 2018), as `torch.optim.lr_scheduler.OneCycleLR`:
the lr rises from max_lr / div_factor to max_lr, then falls far below where it started, while the
momentum moves the other way."""

from __future__ import annotations

import math

from .optimizer import Optimizer
from .scheduler import LRScheduler, _per_group, _require


def _anneal_cos(start: float, end: float, pct: float) -> float:
    """From start (pct = 0) to end (pct = 1) along half a cosine."""
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _anneal_linear(start: float, end: float, pct: float) -> float:
    return (end - start) * pct + start


class OneCycleLR(LRScheduler):
    """The 1cycle learning-rate policy; step it once per batch.

    With initial_lr = max_lr / div_factor and min_lr = initial_lr / final_div_factor, over
    total_steps steps (p = pct_start):
        steps 0 .. p * total - 1:           initial_lr -> max_lr       (momentum max -> base)
        then until total - 1:               max_lr -> min_lr           (momentum base -> max)
    or, with three_phase=True:
        steps 0 .. p * total - 1:           initial_lr -> max_lr
        until 2 * p * total - 2:            max_lr -> initial_lr
        until total - 1:                    initial_lr -> min_lr
    each part along half a cosine ("cos") or a straight line ("linear"). The groups keep
    "initial_lr", "max_lr", "min_lr" (and "max_momentum", "base_momentum"), which the
    optimizer's state dict saves. The momentum cycled is SGD's and RMSprop's "momentum", or
    Adam's beta1.

    Args:
        optimizer: the optimizer whose learning rates are set.
        max_lr: the peak lr, one for all groups or a list with one per group.
        total_steps: the number of steps in the cycle; or give epochs and steps_per_epoch.
        epochs, steps_per_epoch: total_steps = epochs * steps_per_epoch.
        pct_start: the fraction of the cycle spent rising (a float in [0, 1]).
        anneal_strategy: "cos" or "linear".
        cycle_momentum: move the momentum inversely to the lr.
        base_momentum, max_momentum: the momentum's range (one value or one per group).
        div_factor: initial_lr = max_lr / div_factor.
        final_div_factor: min_lr = initial_lr / final_div_factor.
        three_phase: go back down to initial_lr before the final fall.
        last_epoch: the index of the last step (-1 starts a new schedule).

    Raises:
        ValueError: for a step past total_steps, and for bad arguments.
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85, max_momentum: float | list[float] = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"OneCycleLR: expected an Optimizer, not {type(optimizer).__name__}")
        if total_steps is not None:
            _require(isinstance(total_steps, int) and total_steps > 0,
                     f"OneCycleLR: expected a positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            _require(isinstance(epochs, int) and epochs > 0,
                     f"OneCycleLR: expected a positive integer epochs, but got {epochs}")
            _require(isinstance(steps_per_epoch, int) and steps_per_epoch > 0,
                     f"OneCycleLR: expected a positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("OneCycleLR: you must define either total_steps OR (epochs AND steps_per_epoch)")
        _require(isinstance(pct_start, float) and 0 <= pct_start <= 1,
                 f"OneCycleLR: expected a float between 0 and 1 as pct_start, but got {pct_start}")
        _require(anneal_strategy in ("cos", "linear"),
                 f"OneCycleLR: anneal_strategy must be one of 'cos' or 'linear', "
                 f"instead got {anneal_strategy}")
        self._anneal = _anneal_cos if anneal_strategy == "cos" else _anneal_linear
        rise_end = float(pct_start * self.total_steps) - 1
        end = self.total_steps - 1
        # (last step of the phase, lr key at its start, at its end, momentum keys likewise)
        if three_phase:
            self._phases = [
                (rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr",
                 "base_momentum", "max_momentum"),
                (end, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._phases = [
                (rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (end, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]

        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor

        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _require("momentum" in optimizer.defaults or "betas" in optimizer.defaults,
                     f"OneCycleLR: optimizer must support momentum or beta1 with `cycle_momentum` "
                     f"option enabled ({type(optimizer).__name__} has neither)")
            self.use_beta1 = "betas" in optimizer.defaults
            highs = _per_group("max_momentum", optimizer, max_momentum)
            lows = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for group, high, low in zip(optimizer.param_groups, highs, lows):
                    self._set_momentum(group, high)
                    group["max_momentum"], group["base_momentum"] = high, low
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict, momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {step} times; the specified number of total "
                             f"steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr_from, lr_to, m_from, m_to) in enumerate(self._phases):
                if step <= end or i == len(self._phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[lr_from], group[lr_to], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[m_from], group[m_to], pct))
                    break
                start = end
        return lrs
