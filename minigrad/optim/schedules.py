"""Learning-rate schedules: warmup + cosine, the original transformer's inverse square root,
and step decay; each as a pure function of the step (easy to test and plot), the first two also
as a scheduler that sets the optimizer's learning rates (step decay's is `lr_scheduler.StepLR`).

Call `scheduler.step()` once after each `optimizer.step()`:

    opt = optim.AdamW(model.parameters(), lr=3e-4)
    sched = optim.WarmupCosine(opt, warmup_steps=100, total_steps=2000)
    for batch in batches:
        ...; opt.step(); sched.step()
"""

from __future__ import annotations

import math

from .optimizer import Optimizer
from .scheduler import LRScheduler, _require


def _check_step(name: str, step: int) -> None:
    _require(step >= 0, f"{name}: step must be >= 0, not {step}")


# ----------------------------------------------------------------------------- shapes


def cosine_lr(step: int, base_lr: float, warmup_steps: int, total_steps: int,
              min_lr: float = 0.0) -> float:
    """Linear warmup to base_lr, then a half cosine down to min_lr, then min_lr.

        step < W:        lr = base_lr * (step + 1) / (W + 1)
        W <= step < T:   lr = min_lr + (base_lr - min_lr) * (1 + cos(pi * (step - W) / (T - W))) / 2
        step >= T:       lr = min_lr
    with W = warmup_steps and T = total_steps. The warmup starts just above zero (so the
    first step is not wasted) and reaches base_lr exactly at step W; the middle of the decay,
    step (W + T) / 2, has the mean of base_lr and min_lr.
    """
    _check_step("cosine_lr", step)
    if step < warmup_steps:
        return base_lr * (step + 1) / (warmup_steps + 1)
    if step >= total_steps:
        return min_lr
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))


def inverse_sqrt_lr(step: int, base_lr: float, warmup_steps: int, d_model: int | None = None) -> float:
    """The schedule of "Attention Is All You Need" (Vaswani et al., 2017, section 5.3).

    With n = step + 1 (the paper counts steps from 1) and W = warmup_steps:
        shape = min(n^-0.5, n * W^-1.5)       (linear rise until n = W, then 1 / sqrt(n))
        lr = base_lr * sqrt(W) * shape        (d_model None: the peak, at n = W, is base_lr)
        lr = d_model^-0.5 * shape             (d_model given: the paper's formula; base_lr
                                               is then not used)
    """
    _check_step("inverse_sqrt_lr", step)
    n = step + 1
    shape = min(n**-0.5, n * warmup_steps**-1.5)
    if d_model is None:
        return base_lr * math.sqrt(warmup_steps) * shape
    return d_model**-0.5 * shape


def step_lr(step: int, base_lr: float, step_size: int, gamma: float = 0.1) -> float:
    """Decay by gamma every step_size steps:  lr = base_lr * gamma^(step // step_size)."""
    _check_step("step_lr", step)
    return base_lr * gamma ** (step // step_size)


# ----------------------------------------------------------------------------- schedulers


class WarmupCosine(LRScheduler):
    """Linear warmup from near 0 to each group's lr, then cosine decay to min_lr (see `cosine_lr`).

    Args:
        optimizer: the optimizer whose learning rates are set.
        warmup_steps: steps of linear warmup (0 for none).
        total_steps: the step at which min_lr is reached (and kept after).
        min_lr: the final learning rate, the same for every group.
        last_epoch: the index of the last step (-1 starts a new schedule).
    """

    def __init__(self, optimizer: Optimizer, warmup_steps: int, total_steps: int, min_lr: float = 0.0,
                 last_epoch: int = -1):
        _require(warmup_steps >= 0, f"WarmupCosine: warmup_steps must be >= 0, not {warmup_steps}")
        _require(total_steps > warmup_steps,
                 f"WarmupCosine: total_steps ({total_steps}) must exceed warmup_steps ({warmup_steps})")
        _require(min_lr >= 0, f"WarmupCosine: min_lr must be >= 0, not {min_lr}")
        self.warmup_steps, self.total_steps, self.min_lr = int(warmup_steps), int(total_steps), float(min_lr)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, step: int, base_lr: float) -> float:
        return cosine_lr(step, base_lr, self.warmup_steps, self.total_steps, self.min_lr)

    def get_lr(self) -> list[float]:
        return [self.lr_at(self.last_epoch, base) for base in self.base_lrs]


class InverseSqrt(LRScheduler):
    """The original transformer's schedule: linear warmup, then decay as 1 / sqrt(step).

    Without d_model each group's lr is the peak, reached after warmup_steps steps. With
    d_model the paper's formula lr = d_model^-0.5 * min(n^-0.5, n * warmup^-1.5) is used
    as is and the optimizer's lr is ignored (see `inverse_sqrt_lr`).

    Args:
        optimizer: the optimizer whose learning rates are set.
        warmup_steps: steps of linear warmup (the paper uses 4000).
        d_model: the model width, to use the paper's absolute scale.
        last_epoch: the index of the last step (-1 starts a new schedule).
    """

    def __init__(self, optimizer: Optimizer, warmup_steps: int, d_model: int | None = None,
                 last_epoch: int = -1):
        _require(warmup_steps >= 1, f"InverseSqrt: warmup_steps must be >= 1, not {warmup_steps}")
        _require(d_model is None or d_model >= 1, f"InverseSqrt: d_model must be >= 1, not {d_model}")
        self.warmup_steps, self.d_model = int(warmup_steps), d_model
        super().__init__(optimizer, last_epoch)

    def lr_at(self, step: int, base_lr: float) -> float:
        return inverse_sqrt_lr(step, base_lr, self.warmup_steps, self.d_model)

    def get_lr(self) -> list[float]:
        return [self.lr_at(self.last_epoch, base) for base in self.base_lrs]
