"""Optimizers, gradient clipping and learning-rate schedules.

    import minigrad.optim as optim
    opt = optim.AdamW(model.parameters(), lr=3e-4)
    sched = optim.WarmupCosine(opt, warmup_steps=100, total_steps=2000)
    loss.backward(); optim.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); sched.step(); opt.zero_grad()

PyTorch's schedulers live in `optim.lr_scheduler` (StepLR, MultiStepLR, ExponentialLR,
CosineAnnealingLR, LambdaLR, LinearLR, SequentialLR, OneCycleLR, CosineAnnealingWarmRestarts,
ReduceLROnPlateau), as in torch.
"""

from . import lr_scheduler
from .adaptive import Adagrad, RMSprop
from .lr_scheduler import (
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    LRScheduler,
    MultiStepLR,
    OneCycleLR,
    ReduceLROnPlateau,
    SequentialLR,
    StepLR,
)
from .optimizer import Optimizer, flatten_state, unflatten_state
from .optimizers import SGD, Adam, AdamW, clip_grad_norm_
from .schedules import InverseSqrt, WarmupCosine, cosine_lr, inverse_sqrt_lr, step_lr

__all__ = [
    "SGD", "Adagrad", "Adam", "AdamW", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
    "ExponentialLR", "InverseSqrt", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "OneCycleLR",
    "Optimizer", "RMSprop", "ReduceLROnPlateau", "SequentialLR", "StepLR", "WarmupCosine",
    "clip_grad_norm_", "cosine_lr", "flatten_state", "inverse_sqrt_lr", "lr_scheduler", "step_lr",
    "unflatten_state",
]
