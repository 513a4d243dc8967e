"""Optimizers, gradient clipping and learning-rate schedules.

    import minigrad.optim as optim
    opt = optim.AdamW(model.parameters(), lr=3e-4)
    sched = optim.WarmupCosine(opt, warmup_steps=100, total_steps=2000)
    loss.backward(); optim.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); sched.step(); opt.zero_grad()
"""

from .optimizer import Optimizer, flatten_state, unflatten_state
from .optimizers import SGD, Adam, AdamW, clip_grad_norm_
from .schedules import (
    InverseSqrt,
    LRScheduler,
    StepLR,
    WarmupCosine,
    cosine_lr,
    inverse_sqrt_lr,
    step_lr,
)

__all__ = [
    "SGD", "Adam", "AdamW", "InverseSqrt", "LRScheduler", "Optimizer", "StepLR", "WarmupCosine",
    "clip_grad_norm_", "cosine_lr", "flatten_state", "inverse_sqrt_lr", "step_lr",
    "unflatten_state",
]
