"""`minigrad.autograd.functional` (this file), as torch.autograd.functional: derivatives of a whole function
of tensors, built on `autograd.grad` (with create_graph where a derivative of a derivative is
needed).

    vjp(f, x, v)   = (f(x), v^T J)          jvp(f, x, v) = (f(x), J v)
    jacobian(f, x) = J, of shape f(x).shape + x.shape
    hessian(f, x)  = H, of shape x.shape + x.shape, for a scalar f
    vhp(f, x, v)   = (f(x), v^T H)          hvp(f, x, v) = (f(x), H v)

`inputs` is a tensor or a tuple of them, and results mirror it (a tensor for a tensor, a tuple
for a tuple), as torch's. Without create_graph the results are cut from the graph.
jvp and hvp use the "double backward" trick, as torch's: J v is the gradient, with respect to
a dummy upstream vector u, of (u^T J) v, which is linear in u.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from minigrad import autograd  # (absolute: this file is loaded as minigrad.autograd.functional)
from minigrad.grad_mode import enable_grad
from minigrad.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(who: str, what: str, x: Any) -> tuple[bool, tuple[Tensor, ...]]:
    is_tuple = isinstance(x, (tuple, list))
    xs = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(xs):
        if not isinstance(t, Tensor):
            raise TypeError(f"{who}: {what} {i} must be a Tensor, got {type(t).__name__}")
    return is_tuple, xs


def _prepare(inputs: tuple[Tensor, ...], create_graph: bool) -> tuple[Tensor, ...]:
    """Inputs to differentiate with respect to: in the caller's graph when create_graph asks
    for a result that can be differentiated further, else fresh leaves."""
    if create_graph:
        return tuple(x + 0 if x.requires_grad else x.detach().requires_grad_() for x in inputs)
    return tuple(x.detach().requires_grad_() for x in inputs)


def _finish(who: str, grads: Any, inputs: tuple[Tensor, ...], create_graph: bool, strict: bool,
            what: str = "input") -> tuple[Tensor, ...]:
    out = []
    for i, (g, x) in enumerate(zip(grads, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"{who}: the output is independent of {what} {i}, which strict=True "
                                   "forbids")
            g = Tensor._make(np.zeros(x.shape, x.dtype), None)
        out.append(g if create_graph else g.detach())
    return tuple(out)


def _grad(outputs: tuple[Tensor, ...], inputs: tuple[Tensor, ...], grad_outputs: Any,
          create_graph: bool) -> tuple:
    live = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not live:
        return (None,) * len(inputs)
    return autograd.grad([o for o, _ in live], list(inputs), [g for _, g in live], retain_graph=True,
                         create_graph=create_graph, allow_unused=True)


def _check_v(who: str, v: Any, like: tuple[Tensor, ...], what: str) -> tuple[Tensor, ...]:
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise RuntimeError(f"{who}: v can be omitted only when the {what} is a single one-element tensor")
        return (Tensor._make(np.ones(like[0].shape, like[0].dtype), None),)
    _, vs = _as_tuple(who, "v", v)
    if len(vs) != len(like):
        raise RuntimeError(f"{who}: v has {len(vs)} tensors for {len(like)} {what}s")
    for i, (a, b) in enumerate(zip(vs, like)):
        if a.shape != b.shape:
            raise RuntimeError(f"{who}: v[{i}] has shape {a.shape}, but the {what} has shape {b.shape}")
    return vs


def _outputs(who: str, func: Callable, xs: tuple[Tensor, ...]) -> tuple[bool, tuple[Tensor, ...]]:
    with enable_grad():
        return _as_tuple(who, "output", func(*xs))


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(inputs), v^T J): the vector-Jacobian product, v shaped as the outputs."""
    in_tuple, inputs_ = _as_tuple("vjp", "input", inputs)
    xs = _prepare(inputs_, create_graph)
    out_tuple, outs = _outputs("vjp", func, xs)
    vs = _check_v("vjp", v, outs, "output")
    grads = _finish("vjp", _grad(outs, xs, vs, create_graph), xs, create_graph, strict)
    outs = tuple(o if create_graph else o.detach() for o in outs)
    return (outs if out_tuple else outs[0]), (grads if in_tuple else grads[0])


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(inputs), J v): the Jacobian-vector product, v shaped as the inputs."""
    in_tuple, inputs_ = _as_tuple("jvp", "input", inputs)
    xs = _prepare(inputs_, create_graph)
    vs = _check_v("jvp", v, inputs_, "input")
    out_tuple, outs = _outputs("jvp", func, xs)
    with enable_grad():
        us = tuple(Tensor._make(np.zeros(o.shape, o.dtype), None).requires_grad_() for o in outs)
        vjps = _grad(outs, xs, us, create_graph=True)  # u^T J, linear in u
        live = [(g, w) for g, w in zip(vjps, vs) if g is not None]
        if live:
            jv = autograd.grad([g for g, _ in live], list(us), [w for _, w in live],
                               create_graph=create_graph, allow_unused=True)
        else:
            jv = (None,) * len(us)
    jv = _finish("jvp", jv, outs, create_graph, strict, "output")
    outs = tuple(o if create_graph else o.detach() for o in outs)
    return (outs if out_tuple else outs[0]), (jv if out_tuple else jv[0])


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """J[i][j] = d output_i / d input_j, of shape output_i.shape + input_j.shape: one backward
    pass per output element (reverse mode). A tensor for one input and one output, else tuples
    (of tuples), as torch's."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"jacobian: strategy must be 'reverse-mode' or 'forward-mode', got {strategy!r}")
    in_tuple, inputs_ = _as_tuple("jacobian", "input", inputs)
    xs = _prepare(inputs_, create_graph)
    out_tuple, outs = _outputs("jacobian", func, xs)
    from minigrad.ops.shape import stack

    blocks = []
    for o in outs:
        rows = []
        for k in range(o.numel()):
            e = np.zeros(o.numel(), o.dtype)
            e[k] = 1
            picks = [Tensor._make(e.reshape(o.shape) if p is o else np.zeros(p.shape, p.dtype), None)
                     for p in outs]
            rows.append(_finish("jacobian", _grad(outs, xs, picks, create_graph), xs, create_graph, strict))
        per_input = []
        for j, x in enumerate(xs):
            if rows:
                J = stack([r[j] for r in rows]).reshape(o.shape + x.shape)
            else:
                J = Tensor._make(np.zeros(o.shape + x.shape, x.dtype), None)
            per_input.append(J if create_graph else J.detach())
        blocks.append(tuple(per_input) if in_tuple else per_input[0])
    return tuple(blocks) if out_tuple else blocks[0]


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """H[i][j] = d^2 func / d input_i d input_j for a func with one one-element output, of shape
    input_i.shape + input_j.shape: the Jacobian of the gradient."""
    in_tuple, inputs_ = _as_tuple("hessian", "input", inputs)

    def gradient(*xs: Tensor) -> tuple[Tensor, ...]:
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("hessian: func must return a single tensor with one element")
        grads = _grad((out,), xs, (Tensor._make(np.ones(out.shape, out.dtype), None),), create_graph=True)
        return _finish("hessian", grads, xs, True, strict)

    H = jacobian(gradient, inputs_, create_graph=create_graph, strict=strict,
                 strategy=outer_jacobian_strategy)
    return H if in_tuple else H[0][0]


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(inputs), v^T H) for a func with one one-element output, v shaped as the inputs."""
    return _hessian_product("vhp", func, inputs, v, create_graph, strict)


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(inputs), H v) for a func with one one-element output, v shaped as the inputs: the
    gradient of (u^T H) v with respect to u, as torch's (equal to vhp where H is symmetric)."""
    return _hessian_product("hvp", func, inputs, v, create_graph, strict)


def _hessian_product(who: str, func: Callable, inputs: Any, v: Any, create_graph: bool,
                     strict: bool) -> tuple[Any, Any]:
    in_tuple, inputs_ = _as_tuple(who, "input", inputs)
    xs = _prepare(inputs_, create_graph)
    vs = _check_v(who, v, inputs_, "input")
    with enable_grad():
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError(f"{who}: func must return a single tensor with one element")
        one = (Tensor._make(np.ones(out.shape, out.dtype), None),)
        jac = _finish(who, _grad((out,), xs, one, create_graph=True), xs, True, strict)
        if who == "vhp":
            found = _grad(jac, xs, vs, create_graph)
        else:
            us = tuple(Tensor._make(np.zeros(x.shape, x.dtype), None).requires_grad_() for x in xs)
            back = _finish(who, _grad(jac, xs, us, create_graph=True), xs, True, strict)  # u^T H
            found = _grad(back, us, vs, create_graph)
    found = _finish(who, found, xs, create_graph, strict)
    out = out if create_graph else out.detach()
    return out, (found if in_tuple else found[0])
