"""Module hooks, as torch's: code that runs around a module's forward and in its backward.

    handle = model.blocks[0].register_forward_hook(lambda m, args, out: print(out.shape))
    model.fc.register_full_backward_hook(lambda m, grad_input, grad_output: print(grad_output[0]))

A module keeps its hooks in one `ModuleHooks` made by its first register_*_hook call; a module
without hooks pays one attribute test per call (Module.__call__).

A full backward hook gets the gradients with respect to the module's positional tensor inputs
and to its outputs, and may return replacements for the input gradients. As torch does, the
call wraps the inputs and outputs in identity nodes that catch those gradients: each input that
requires grad passes through a `BackwardHookTap` hanging from one `BackwardHookGate` over all of
them, so the gate's backward runs after every tap the backward pass reaches and sees all the
input gradients at once (an unreached input's is None); the gate calls the hooks and hands the
gradients, replaced or not, on to the inputs.

Under backward(create_graph=True) the taps pass the gradients through as the Tensors of the
graph they are: the hooks see them (as torch's do), and what a hook returns computed from them
with Tensor ops stays in the graph, so the gradients can be differentiated again.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from minigrad import Tensor
from minigrad.autograd import Function
from minigrad.grad_mode import is_grad_enabled, module_scope
from minigrad.hooks import RemovableHandle


class ModuleHooks:
    """One module's hooks by handle id, in the order registered (`prepend` puts one first)."""

    def __init__(self) -> None:
        self.forward_pre: dict[int, tuple[Callable, bool]] = {}  # (hook, with_kwargs)
        self.forward: dict[int, tuple[Callable, bool, bool]] = {}  # (hook, with_kwargs, always_call)
        self.backward: dict[int, Callable] = {}

    def add(self, kind: str, entry: Any, prepend: bool) -> RemovableHandle:
        hooks = getattr(self, kind)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = entry
        if prepend:  # dicts keep insertion order: put the new one first
            rest = {k: v for k, v in hooks.items() if k != handle.id}
            hooks.clear()
            hooks[handle.id] = entry
            hooks.update(rest)
        return handle

    def call(self, module: Any, args: tuple, kwargs: dict) -> Any:
        """module(*args, **kwargs) with the hooks: pre-hooks, forward, forward hooks, and the
        taps of the backward hooks around it."""
        for hook, with_kwargs in list(self.forward_pre.values()):
            if with_kwargs:
                out = hook(module, args, kwargs)
                if out is not None:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {out!r}.")
                    args, kwargs = out
            else:
                out = hook(module, args)
                if out is not None:
                    args = out if isinstance(out, tuple) else (out,)
        catch = None
        if self.backward and is_grad_enabled():
            catch = _BackwardCatch(module, list(self.backward.values()), args)
            args = catch.tap_inputs(args)
        try:
            with module_scope(module):
                result = module.forward(*args, **kwargs)
        except BaseException:
            for hook, with_kwargs, always_call in list(self.forward.values()):
                if always_call:
                    hook(module, args, kwargs, None) if with_kwargs else hook(module, args, None)
            raise
        for hook, with_kwargs, _ in list(self.forward.values()):
            out = hook(module, args, kwargs, result) if with_kwargs else hook(module, args, result)
            if out is not None:
                result = out
        if catch is not None:
            result = catch.tap_outputs(result)
        return result


class _BackwardCatch:
    """The gradients of one call of a module with full backward hooks, caught by its taps."""

    def __init__(self, module: Any, hooks: list[Callable], args: tuple):
        self.module, self.hooks = module, hooks
        self.positions = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        self.grad_inputs: list[Any] = [None] * len(args)
        self.grad_outputs: list[Any] = []
        self.outputs_seen = 0

    def tap_inputs(self, args: tuple) -> tuple:
        if not self.positions:
            return args
        gate = BackwardHookGate.apply(*[args[i] for i in self.positions], catch=self)
        args = list(args)
        for i in self.positions:
            args[i] = BackwardHookTap.apply(gate, args[i], catch=self, index=i)
        return tuple(args)

    def tap_outputs(self, result: Any) -> Any:
        single = isinstance(result, Tensor)
        outs = [result] if single else list(result) if isinstance(result, (tuple, list)) else []
        self.grad_outputs = [None] * len(outs)
        self.n_outputs = sum(isinstance(o, Tensor) and o.requires_grad for o in outs)
        tapped = [BackwardHookOutput.apply(o, catch=self, index=j)
                  if isinstance(o, Tensor) and o.requires_grad else o for j, o in enumerate(outs)]
        if single:
            return tapped[0]
        return type(result)(tapped) if isinstance(result, (tuple, list)) and outs else result

    def output_grad(self, index: int, g: Any) -> None:
        self.grad_outputs[index] = _as_tensor(g)
        self.outputs_seen += 1
        if not self.positions and self.outputs_seen == self.n_outputs:  # no input to wait for
            self.fire()

    def fire(self) -> tuple:
        """Call the hooks with (module, grad_input, grad_output); returns the input gradients."""
        grad_input = tuple(self.grad_inputs)
        grad_output = tuple(self.grad_outputs)
        for hook in self.hooks:
            out = hook(self.module, grad_input, grad_output)
            if out is not None:
                if not isinstance(out, (tuple, list)) or len(out) != len(grad_input):
                    got = len(out) if isinstance(out, (tuple, list)) else type(out).__name__
                    raise RuntimeError(f"backward hook of {type(self.module).__name__} returned {got} "
                                       f"gradients, expected a tuple of {len(grad_input)}")
                grad_input = tuple(out)
        self.grad_inputs = [None] * len(self.grad_inputs)  # ready for another backward
        self.grad_outputs = [None] * len(self.grad_outputs)
        self.outputs_seen = 0
        return grad_input


def _as_tensor(g: Any) -> Tensor:
    """The gradient a tap caught, as the hooks get it: a Tensor (first order: of the array, with
    no graph; under create_graph: the gradient itself, in its graph)."""
    return g if isinstance(g, Tensor) else Tensor._make(g, None)


class BackwardHookGate(Function):
    """A 0-d node over the inputs that require grad; every input's tap hangs from it, so its
    backward comes after theirs: it calls the module's backward hooks and passes on d/d input
    (under create_graph the Tensors the hooks returned, so a Tensor op of theirs stays in the
    graph; an array or a number is a constant)."""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx: Function, *arrays: np.ndarray, catch: _BackwardCatch) -> np.ndarray:
        ctx.catch = catch
        return np.zeros((), arrays[0].dtype)

    @staticmethod
    def backward(ctx: Function, g: np.ndarray) -> tuple:
        grads = ctx.catch.fire()
        if isinstance(g, Tensor):  # create_graph: the gradients as the hooks left them, in the graph
            return tuple(None if grads[i] is None else _as_tensor(np.asarray(grads[i]))
                         if not isinstance(grads[i], Tensor) else grads[i] for i in ctx.catch.positions)
        return tuple(None if grads[i] is None else np.asarray(getattr(grads[i], "_data", grads[i]))
                     for i in ctx.catch.positions)


class BackwardHookTap(Function):
    """y = x for one input of the module: keeps d/d x for the gate, which passes it on to x
    (so the tap sends zero to the gate and nothing to x itself)."""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx: Function, gate: np.ndarray, x: np.ndarray, catch: _BackwardCatch,
                index: int) -> np.ndarray:
        ctx.catch, ctx.index = catch, index
        return x.view()

    @staticmethod
    def backward(ctx: Function, g: np.ndarray) -> tuple:
        ctx.catch.grad_inputs[ctx.index] = _as_tensor(g)
        return np.zeros((), g.dtype), None


class BackwardHookOutput(Function):
    """y = x for one output of the module: d/d x = d/d y, kept as that output's grad_output."""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx: Function, x: np.ndarray, catch: _BackwardCatch, index: int) -> np.ndarray:
        ctx.catch, ctx.index = catch, index
        return x.view()

    @staticmethod
    def backward(ctx: Function, g: np.ndarray) -> np.ndarray:
        ctx.catch.output_grad(ctx.index, g)
        return g
