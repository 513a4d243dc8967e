"""The torch twins of the nn ops (see ops.py for the contract every twin keeps), and of the
modules that keep state outside the graph, exported whole (`MODULE_TWINS`)."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import torch
import torch.nn.functional as TF

from minigrad.autograd import Function
from minigrad.nn import batchnorm, module_hooks, padding
from minigrad.nn.module import Module

NN_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {}

# padding (F.pad's constant mode; the other modes are indexing, whose twin is GetItem's)
NN_TWINS.update({
    padding.ConstantPad: lambda x, *, pad, value: TF.pad(x, pad, mode="constant", value=value),
})

# the identity nodes around a module with backward hooks: values pass through unchanged (the
# exported torch module runs no minigrad hook)
NN_TWINS.update({
    module_hooks.BackwardHookGate: lambda *xs, catch: xs[0].new_zeros(()),
    module_hooks.BackwardHookTap: lambda gate, x, *, catch, index: x,
    module_hooks.BackwardHookOutput: lambda x, *, catch, index: x,
})

# upsampling (F.interpolate): the given scales go to torch's kernel unrecomputed, as minigrad's
from minigrad.nn.upsampling import UpsampleInterpOp, UpsampleNearestOp  # noqa: E402


def _interpolate(x: torch.Tensor, *, size: tuple[int, ...], scales: tuple[float, ...] | None, mode: str,
                 align_corners: bool | None = None) -> torch.Tensor:
    if scales is None:
        return TF.interpolate(x, size=size, mode=mode, align_corners=align_corners)
    return TF.interpolate(x, scale_factor=scales, mode=mode, align_corners=align_corners,
                          recompute_scale_factor=False)


NN_TWINS.update({UpsampleNearestOp: _interpolate, UpsampleInterpOp: _interpolate})


# ----------------------------------------------------------------------------- whole modules


class ModuleTwin(NamedTuple):
    """How a module that keeps state outside the graph is exported (`trace.py` records each
    call of it as one node): `read(module)` gives the node's options (its settings, and its
    parameters and buffers, which the trace turns into Refs), and `run(*inputs, training=...,
    **options)` is the torch twin, given the export's own tensors for those Refs and its mode."""

    read: Callable[[Module], dict[str, Any]]
    run: Callable[..., torch.Tensor]


def _read_batch_norm(m: batchnorm._BatchNorm) -> dict[str, Any]:
    return dict(weight=m.weight, bias=m.bias, running_mean=m.running_mean, running_var=m.running_var,
                num_batches_tracked=m.num_batches_tracked, momentum=m.momentum, eps=m.eps,
                track_running_stats=m.track_running_stats, training=m.training)


def _batch_norm_module(x: torch.Tensor, *, weight: torch.Tensor | None, bias: torch.Tensor | None,
                       running_mean: torch.Tensor | None, running_var: torch.Tensor | None,
                       num_batches_tracked: torch.Tensor | None, momentum: float | None, eps: float,
                       track_running_stats: bool, training: bool) -> torch.Tensor:
    """The forward of torch.nn.BatchNorm1d / BatchNorm2d (torch's `_BatchNorm.forward`), on the
    export's buffers. In training, num_batches_tracked += 1 and F.batch_norm uses the batch's
    statistics and updates the running ones in place:
        running = (1 - f) * running + f * batch statistic (the unbiased variance for running_var),
    f = momentum, or 1 / num_batches_tracked when momentum is None (the cumulative average).
    In eval, the running statistics are used, or the batch's when none are tracked."""
    factor = 0.0 if momentum is None else momentum
    if training and track_running_stats and num_batches_tracked is not None:
        num_batches_tracked.add_(1)
        if momentum is None:
            factor = 1.0 / float(num_batches_tracked)
    use_batch = training or (running_mean is None and running_var is None)
    track = not training or track_running_stats
    return TF.batch_norm(x, running_mean if track else None, running_var if track else None, weight, bias,
                         use_batch, factor, eps)


# Subclasses are recorded by the first class here they are an instance of.
MODULE_TWINS: dict[type[Module], ModuleTwin] = {
    batchnorm.BatchNorm1d: ModuleTwin(_read_batch_norm, _batch_norm_module),
    batchnorm.BatchNorm2d: ModuleTwin(_read_batch_norm, _batch_norm_module),
}
