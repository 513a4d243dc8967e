"""Check an op's analytic gradients against central finite differences, in float64, and
describe a mismatch so a learner sees what is wrong: which input (by its parameter name), how
many elements, the arrays side by side, and a pattern when one fits (transposed, sign, ...)."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np

from .grad_mode import enable_grad, no_grad
from .tensor import Tensor

SHOW_ARRAYS = 64  # inputs of at most this many elements get their arrays printed


class GradcheckError(AssertionError):
    """Raised by `gradcheck` with a report naming the input, element and both values."""


def _outputs(out: Any) -> list[Tensor]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def gradcheck(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    seed: int = 0,
    raise_exception: bool = True,
) -> bool:
    """Compare the gradients of `fn` from backward() with central differences.

    The inputs are copied to float64 (integer and boolean inputs pass through unchanged and
    are not checked). The output(s) are contracted with a random upstream gradient g, so a
    backward that ignores g fails; every element of every floating input is perturbed:
        numeric_i = (L(x + eps e_i) - L(x - eps e_i)) / (2 eps),   L(x) = sum(g * fn(x))
    An element passes when |analytic - numeric| <= atol + rtol * |numeric|.

    Returns True when all match. Otherwise raises GradcheckError (or returns False when
    `raise_exception=False`) with a report on the first input that does not match: its first
    wrong element with both values (the first line), how many elements are wrong, the
    analytic, numeric and difference arrays when the input has at most 64 elements, and a
    pattern when one fits. Inputs are named by fn's parameter names when it has them.
    """
    found = finite_differences(fn, inputs, eps, seed)
    report = first_mismatch(input_names(fn, len(inputs)), found, atol, rtol)
    if report is None:
        return True
    if raise_exception:
        raise GradcheckError(report)
    return False


def gradgradcheck(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    grad_outputs: Sequence[Any] | None = None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    seed: int = 0,
    raise_exception: bool = True,
) -> bool:
    """Check second derivatives: `gradcheck` of the function that maps (inputs, v) to the
    gradients of sum(v * fn(inputs)) computed with backward(create_graph=True). So every
    derivative of the first-order gradients, with respect to the inputs (the Hessian-vector
    products) and to v (the vector-Jacobian product is linear in v), is compared with central
    differences, with gradcheck's report naming the input and element that differ.

    grad_outputs (the v, one per output) are drawn at random (from `seed`) when not given;
    each is checked as an input too, as in torch's gradgradcheck.
    """
    from .autograd import grad as autograd_grad

    xs = [_as_float64(x) for x in inputs]
    outs = _outputs(fn(*xs))
    rng = np.random.default_rng(seed + 1)
    if grad_outputs is None:
        grad_outputs = [rng.standard_normal(o.shape) for o in outs]
    vs = [Tensor(np.array(getattr(v, "_data", v), dtype=np.float64), requires_grad=True)
          for v in grad_outputs]
    if len(vs) != len(outs):
        raise GradcheckError(f"gradgradcheck: {len(vs)} grad_outputs for {len(outs)} outputs")
    n = len(xs)
    names = [label.split(" (")[0].replace(" ", "") for label in input_names(fn, n)]  # 'x', 'input1'

    def first_order(*args: Tensor) -> tuple[Tensor, ...]:
        ins, v = args[:n], args[n:]
        wanted = [x for x in ins if x.requires_grad]
        with enable_grad():  # (gradcheck evaluates the function under no_grad for its differences)
            return tuple(autograd_grad(_outputs(fn(*ins)), wanted, list(v), create_graph=True,
                                       allow_unused=True, materialize_grads=True))

    first_order.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY) for p in
         names + [f"grad_output{i}" for i in range(len(vs))]])
    return gradcheck(first_order, xs + vs, eps, atol, rtol, seed, raise_exception)


def finite_differences(fn: Callable[..., Any], inputs: Sequence[Any], eps: float = 1e-6,
                       seed: int = 0) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(i, analytic, numeric) for each floating input i that requires grad: the gradient of
    L = sum(g * fn(x)) from backward() and from central differences (the half of `gradcheck`
    that runs fn; `first_mismatch` is the half that judges). GradcheckError when nothing can
    be checked."""
    xs = [_as_float64(x) for x in inputs]
    if not any(x.requires_grad for x in xs):
        raise GradcheckError(_nothing_to_check(fn, inputs))
    outs = _outputs(fn(*xs))
    rng = np.random.default_rng(seed)
    gs = [rng.standard_normal(o.shape) for o in outs]
    for o in outs:
        if not o.requires_grad:
            raise GradcheckError("gradcheck: an output does not depend on any checked input")
    # One backward through all outputs: sum_k <g_k, out_k>.
    total = sum(((o * Tensor(g)).sum() for o, g in zip(outs, gs)), start=Tensor(np.float64(0)))
    total.backward()

    def loss() -> float:
        with no_grad():
            return float(sum((o._data * g).sum() for o, g in zip(_outputs(fn(*xs)), gs)))

    found = []
    for i, x in enumerate(xs):
        if not x.requires_grad:
            continue
        analytic = x._grad.copy() if x._grad is not None else np.zeros_like(x._data)
        numeric = np.zeros(x.shape)
        flat, num = x._data.reshape(-1), numeric.reshape(-1)  # views: perturbing flat perturbs x
        for j in range(flat.size):
            orig = flat[j]
            flat[j] = orig + eps
            up = loss()
            flat[j] = orig - eps
            down = loss()
            flat[j] = orig
            num[j] = (up - down) / (2 * eps)
        found.append((i, analytic, numeric))
    return found


def first_mismatch(names: list[str], found: list[tuple[int, np.ndarray, np.ndarray]], atol: float = 1e-5,
                   rtol: float = 1e-3) -> str | None:
    """The report on the first input of `finite_differences` whose gradients disagree (None:
    all agree): |analytic - numeric| <= atol + rtol * |numeric| element by element."""
    for i, analytic, numeric in found:
        bad = ~(np.abs(analytic - numeric) <= atol + rtol * np.abs(numeric))
        if bad.any():
            return _report(names[i], numeric.shape, analytic, numeric, bad, atol, rtol)
    return None


def _nothing_to_check(fn: Callable[..., Any], inputs: Sequence[Any]) -> str:
    """Why no input can be checked, one input per clause (an int input is a classic slip)."""
    parts = []
    for label, x in zip(input_names(fn, len(inputs)), inputs):
        name = label[:-1] + ")" if label.endswith(",") else label[:-2]  # 'q (input 0)', 'input 0'
        data = x._data if isinstance(x, Tensor) else np.asarray(x)
        if data.dtype.kind != "f":
            parts.append(f"{name} holds {data.dtype} values (shape {data.shape})")
        else:
            parts.append(f"{name} is a {data.dtype} tensor (shape {data.shape}) with requires_grad=False")
    return ("gradcheck: no input to check: " + ("; ".join(parts) or "no inputs given")
            + ". Only floating inputs that require grad are checked: pass float arrays, or tensors "
            "made with requires_grad=True")


def input_names(fn: Callable[..., Any], n: int) -> list[str]:
    """'q (input 0)'-style labels from fn's positional parameter names; 'input i' without."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # builtins and some callables have no signature
        params = []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [f"{positional[i]} (input {i}," if i < len(positional) else f"input {i} (" for i in range(n)]


def _report(name: str, shape: tuple, analytic: np.ndarray, numeric: np.ndarray, bad: np.ndarray,
            atol: float, rtol: float) -> str:
    j = int(np.flatnonzero(bad)[0])
    where = tuple(int(k) for k in np.unravel_index(j, shape)) if shape else ()
    a, n = analytic.reshape(-1)[j], numeric.reshape(-1)[j]
    sep = " " if name.endswith(",") else ""
    lines = [
        f"gradcheck failed for {name}{sep}shape {shape}) at element {where}:",
        f"    analytic {a:.8g}, numeric {n:.8g}, error {abs(a - n):.3g} "
        f"(allowed {atol + rtol * abs(n):.3g} = atol {atol:g} + rtol {rtol:g} * |numeric|)",
        f"    {int(bad.sum())} of {bad.size} elements disagree",
    ]
    if analytic.size <= SHOW_ARRAYS:
        lines.append(side_by_side([("analytic", analytic), ("numeric", numeric),
                                    ("difference", analytic - numeric)]))
    pattern = describe_pattern(analytic, numeric)
    if pattern:
        lines.append(f"    pattern: {pattern}")
    return "\n".join(lines)


def describe_pattern(analytic: np.ndarray, numeric: np.ndarray) -> str:
    """A one-line description of how a wrong gradient relates to the right one, or ''."""
    a, n = np.asarray(analytic, dtype=np.float64), np.asarray(numeric, dtype=np.float64)
    scale = max(float(np.abs(n).max(initial=0)), 1e-12)

    def same(x: np.ndarray, y: np.ndarray) -> bool:
        return bool(np.abs(x - y).max(initial=0) <= 1e-4 * scale + 1e-9)

    if not np.all(np.isfinite(a)):
        return "the analytic gradient has inf or nan entries"
    if np.abs(a).max(initial=0) == 0:
        return "the analytic gradient is all zero: is the input used, or is backward's result discarded?"
    if a.ndim >= 2 and a.shape[-1] == a.shape[-2] and same(a, n.swapaxes(-1, -2)):
        return "analytic is the transpose of numeric (last two axes swapped)"
    if same(a, -n):
        return "analytic is the negative of numeric: a sign error"
    nn = float((n * n).sum())
    if nn > 0:
        c = float((a * n).sum()) / nn
        if abs(c - 1) > 1e-3 and same(a, c * n):
            return f"analytic = {c:.4g} * numeric: a constant factor"
    diff = a - n
    if a.ndim >= 1 and a.shape[-1] > 1 and same(diff, np.broadcast_to(diff[..., :1], diff.shape)):
        return ("analytic - numeric is constant along each row (the last axis): a per-row term "
                "is missing or extra")
    return ""


def side_by_side(blocks: list[tuple[str, np.ndarray]], width: int = 60) -> str:
    """Arrays printed next to each other under their titles (leading axes flattened), each
    column at most `width` characters: how gradcheck and the exercise grader show analytic,
    numeric and difference arrays."""
    cols = []
    for title, arr in blocks:
        arr = np.asarray(arr)
        arr2 = arr.reshape(-1, arr.shape[-1]) if arr.ndim > 2 else np.atleast_1d(arr)
        text = np.array2string(arr2, precision=4, suppress_small=True, max_line_width=width).splitlines()
        col_width = max(len(title), *(len(t) for t in text))
        cols.append([title.ljust(col_width)] + [t.ljust(col_width) for t in text])
    height = max(len(c) for c in cols)
    rows = ["   ".join(c[i] if i < len(c) else " " * len(c[0]) for c in cols) for i in range(height)]
    return "\n".join("    " + r.rstrip() for r in rows)


def _as_float64(x: Any) -> Tensor:
    """A float64 leaf copy of x (requiring grad when x is floating), or x unchanged.

    The copy keeps x's class (a Parameter stays a Parameter), so code that checks what it is
    handed (a Module finding its parameters) sees the same kind of tensor.
    """
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    if data.dtype.kind != "f":
        return x if isinstance(x, Tensor) else Tensor(data)
    wants = x.requires_grad if isinstance(x, Tensor) else True
    kind = type(x) if isinstance(x, Tensor) else Tensor
    return kind(np.array(data, dtype=np.float64), requires_grad=wants)
