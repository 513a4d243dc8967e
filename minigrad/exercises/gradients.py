"""The gradient checks every backward task shares: run the student's op and the reference on
the same inputs and upstream gradient, compare, name the mistake, and show a worked case.

A `Case` is one set of inputs (float64 arrays, in the op's argument order) plus options that
are not differentiated (a mask). The upstream gradient g is random and non-uniform, so a
backward that ignores g cannot pass (under g = ones, which `.sum().backward()` gives, it would).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import minigrad as mg
from minigrad.autograd import unbroadcast
from minigrad.gradcheck import finite_differences, first_mismatch, input_names, side_by_side
from minigrad.hooks import observe_backward
from minigrad.tensor import Tensor

from .diagnose import Mistake, close, generic_mistakes, match
from .grader import Check
from .transcript import Fail, StudentRaised, raised_here, run_student

Fn = Callable[..., Tensor]


@dataclass
class Case:
    inputs: dict[str, np.ndarray]
    options: dict[str, Any] = field(default_factory=dict)
    label: str = ""

    def describe(self) -> str:
        shapes = ", ".join(f"{n} {tuple(x.shape)}" for n, x in self.inputs.items())
        return self.label or shapes


@dataclass
class Run:
    out: np.ndarray
    grads: dict[str, np.ndarray | None]  # what the student's backward returned, per input
    error: str = ""  # the engine's error after backward returned (e.g. a shape), as reported
    # Every array the forward returned or saved: (what it is, after backward, before backward)
    kept: list[tuple[str, np.ndarray, np.ndarray]] = field(default_factory=list)


def upstream(shape: tuple[int, ...], seed: int = 7) -> np.ndarray:
    """A random upstream gradient, far from constant (the entries spread over [-2, 2])."""
    return np.random.default_rng(seed).uniform(-2.0, 2.0, shape)


def _read_only(x: np.ndarray) -> np.ndarray:
    x.flags.writeable = False
    return x


def _in_place(e: Exception, where: str) -> Fail | None:
    """A Fail naming the in-place change of an input array, when that is what `e` is."""
    if isinstance(e, ValueError) and "read-only" in str(e):
        return Fail(f"your {where} changes an array it was given, in place ({e})",
                    diagnosis=["modifies_input_in_place"])
    return None


def forward_arrays(out: Tensor) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Every array the forward returned or kept for backward (ctx.saved, and arrays set on ctx),
    over the whole graph behind `out`: (what it is, the array itself, a copy of it now)."""
    from minigrad.autograd import toposort

    found = [("the output your forward returned", out._data)]
    for node in [] if out._node is None else toposort(out._node):
        name = type(node).__name__
        found += [(f"{name}'s ctx.saved[{i}]", x) for i, x in enumerate(node.saved or ())
                  if isinstance(x, np.ndarray)]
        found += [(f"{name}'s ctx.{k}", x) for k, x in vars(node).items()
                  if isinstance(x, np.ndarray) and k != "saved"]
    names: dict[int, list[str]] = {}
    arrays: dict[int, np.ndarray] = {}
    for what, x in found:  # one array can be both the output and ctx.saved[0]
        names.setdefault(id(x), []).append(what)
        arrays[id(x)] = x
    return [(" (also ".join(names[i]) + ")" * (len(names[i]) - 1), x, x.copy()) for i, x in arrays.items()]


def _changed_by_backward(arrays: list[tuple[str, np.ndarray, np.ndarray]]) -> Fail | None:
    """A Fail naming the first array of `forward_arrays` that backward changed in place."""
    for what, x, before in arrays:
        x, before = np.asarray(x), np.asarray(before)
        if x.shape != before.shape or not np.array_equal(x, before, equal_nan=True):
            return Fail(f"your backward changes {what} in place: after backward it differs from what the "
                        "forward computed (a later use of that array, or a second backward, reads wrong "
                        "numbers)", diagnosis=["modifies_saved_in_place"])
    return None


def backward_of(fn: Fn, case: Case, g: np.ndarray | None, op: type | None = None) -> Run:
    """Run fn forward and backward with upstream gradient g (None: only forward).

    With `op` (a Function class), the gradients are the raw arrays op.backward returned for
    our inputs, before the engine sums broadcast axes away; otherwise the leaves' .grad.
    The inputs and g are handed over read-only: code that changes them in place (x -= m in a
    forward, g *= a in a backward) is named for it, since it is right alone and wrong wherever
    the array is shared (an upstream gradient fanned out to two ops, the finite differences).
    Every array the forward returned or saved is in `kept`, before and after backward: it must
    be unchanged (a softmax backward computed in the saved weights leaves the output's rows
    summing to 0); student_backward checks.
    """
    names = list(case.inputs)
    leaves = [Tensor(_read_only(np.array(x, dtype=np.float64)), requires_grad=True)
              for x in case.inputs.values()]
    raw: dict[str, Any] = {}

    def observe(node: Any, _g: np.ndarray, grads: tuple) -> None:
        if op is not None and isinstance(node, op):
            for t, gi in zip(node.inputs, grads):
                for n, leaf in zip(names, leaves):
                    if t is leaf:
                        raw[n] = None if gi is None else np.array(gi, dtype=np.float64)

    try:
        out = fn(*leaves, **case.options)
    except ValueError as e:
        named = _in_place(e, "forward")
        if named is None:
            raise
        raise named from None
    if not isinstance(out, Tensor):
        raise Fail(f"returned a {type(out).__name__}, not a Tensor")
    if g is None:
        return Run(out._data, {})
    if not out.requires_grad:
        raise Fail("the output is not connected to the inputs in the graph (no gradient can flow): "
                   "compute it with Tensor operations, not on .data or numpy arrays")
    error = ""
    kept = forward_arrays(out)
    try:
        with observe_backward(observe):
            out.backward(_read_only(g.astype(out._data.dtype)))
    except Exception as e:
        if _in_place(e, "backward") is not None:
            raise _in_place(e, "backward") from None
        if op is None or not raw or isinstance(e, NotImplementedError):
            raise  # the student's code raised
        error = raised_here(e).message  # the engine, after the op's backward returned (e.g. a shape)
    grads = raw if op is not None else {n: t._grad for n, t in zip(names, leaves)}
    return Run(out._data, {n: grads.get(n) for n in names}, error, kept)


def student_backward(fn: Fn, case: Case, g: np.ndarray, op: type | None = None) -> Run:
    """backward_of the student's fn, run in the student's process (transcript.student); the
    arrays the forward returned or saved are compared here: a Fail names one backward changed."""
    def run() -> tuple:
        r = backward_of(fn, case, g, op)
        return r.out, r.grads, r.error, [[what, after, before] for what, after, before in r.kept]

    out, grads, error, kept = run_student("backward", run)
    changed = _changed_by_backward([(str(what), after, before) for what, after, before in kept])
    if changed is not None:
        raise changed
    return Run(out, dict(grads), error)


def student_output(fn: Fn, case: Case) -> np.ndarray:
    """The student's fn forward on the case's inputs (a Tensor's array), in the student's process."""
    return run_student("forward", lambda: backward_of(fn, case, None).out)


def numeric_grads(fn: Fn, case: Case, g: np.ndarray, eps: float = 1e-6) -> dict[str, np.ndarray]:
    """Central differences of L = sum(g * fn(inputs)) for every element of every input."""
    xs = {n: np.array(x, dtype=np.float64) for n, x in case.inputs.items()}

    def loss() -> float:
        with mg.no_grad():
            return float((fn(*[Tensor(x) for x in xs.values()], **case.options)._data * g).sum())

    out = {}
    for n, x in xs.items():
        flat, grad = x.reshape(-1), np.zeros(x.size)
        for j in range(x.size):
            orig = flat[j]
            flat[j] = orig + eps
            up = loss()
            flat[j] = orig - eps
            grad[j] = (up - loss()) / (2 * eps)
            flat[j] = orig
        out[n] = grad.reshape(x.shape)
    return out


def _student_view(name: str, got: np.ndarray | None, shape: tuple[int, ...], must_reduce: bool,
                  reference: np.ndarray) -> tuple[np.ndarray | None, Fail | None]:
    """The student's gradient in the input's shape, or the failure its shape already shows."""
    if got is None:
        return None, Fail(f"no gradient for {name} (backward returned None for it, or it is not used "
                          "through Tensor operations)")
    if got.shape == shape:
        return got, None
    try:
        reduced = unbroadcast(got, shape)
    except ValueError:
        if must_reduce and got.size == reference.size and close(got.reshape(shape), reference):
            return None, Fail(f"the gradient for {name} has shape {got.shape}, not its input's shape "
                              f"{shape} (the values are right: the size-1 axes are lost)",
                              diagnosis=["not_unbroadcast"])
        return got, None  # a wrong shape; the comparison names it (e.g. a transpose)
    if must_reduce:
        code = ["not_unbroadcast"] if close(reduced, reference) else []
        return None, Fail(f"the gradient for {name} has the broadcast shape {got.shape}, not its "
                          f"input's shape {shape}", diagnosis=code)
    return reduced, None


def _shape_mistake(run: Run, case: Case, g: np.ndarray,
                   raw_mistakes: Callable[[Case, np.ndarray], list[Mistake]] | None) -> Fail | None:
    """A Fail naming the mistake whose prediction, in a shape other than the input's, is exactly
    what the op's backward returned (before the engine summed anything away)."""
    for m in raw_mistakes(case, g) if raw_mistakes else []:
        if all(run.grads.get(n) is not None and close(run.grads[n], p) for n, p in m.predict.items()):
            n = next(iter(m.predict))
            return Fail(f"the gradient for {n} has shape {run.grads[n].shape}, not its input's shape "
                        f"{case.inputs[n].shape}" + (f" ({m.note})" if m.note else ""), diagnosis=[m.code])
    return None


def compare(student: Fn, reference: Fn, case: Case, op: type | None = None,
            mistakes: Callable[[Case, np.ndarray, dict], list[Mistake]] | None = None,
            must_reduce: bool = False, worked: bool = True,
            raw_mistakes: Callable[[Case, np.ndarray], list[Mistake]] | None = None) -> None:
    """Fail unless the student's gradients equal the reference's on `case`, diagnosing why.

    `raw_mistakes` predict what the op's backward returns (with `op`) under mistakes that give
    a gradient of another shape than its input's (a reduced axis put back twice)."""
    ref_out = backward_of(reference, case, None).out
    g = upstream(ref_out.shape)
    ref = backward_of(reference, case, g).grads
    ones = backward_of(reference, case, np.ones(ref_out.shape)).grads
    run = student_backward(student, case, g, op)
    if any(run.grads.get(n) is not None and run.grads[n].shape != x.shape for n, x in case.inputs.items()):
        fail = _shape_mistake(run, case, g, raw_mistakes)
        if fail is not None:
            raise fail
    got: dict[str, np.ndarray] = {}
    for n, x in case.inputs.items():
        view, fail = _student_view(n, run.grads.get(n), x.shape, must_reduce, ref[n])
        if fail is not None:
            raise fail
        got[n] = view
    bad = [n for n in case.inputs if not close(got[n], ref[n])]
    if not bad:
        if run.error:
            raise StudentRaised(run.error)
        return
    known = (mistakes(case, g, ref) if mistakes else []) + generic_mistakes(ref, ones, got)
    found = match(got, ref, known)
    fits = [m.code for m in known if match(got, ref, [m]) is not None]  # every code this case allows
    n = bad[0]
    if got[n].shape != ref[n].shape:
        msg = f"the gradient for {n} has shape {got[n].shape}, but {n} has shape {ref[n].shape}"
    else:
        wrong = int((~np.isclose(got[n], ref[n], rtol=1e-5, atol=1e-8)).sum())
        msg = f"the gradient for {n} differs from the reference at {wrong} of {got[n].size} elements"
    if found is not None and found.note:
        msg += f" ({found.note})"
    detail = ""
    if worked and got[n].size <= 64:
        numeric = run_student("numeric", lambda: numeric_grads(student, case, g)[n])
        blocks = [(f"d{n}: yours (analytic)", got[n]), ("numeric", numeric)]
        if got[n].shape == numeric.shape:
            blocks.append(("difference", got[n] - numeric))
        detail = (f"worked case ({case.describe()}, random upstream gradient g):\n"
                  + side_by_side(blocks, width=80))
    fail = Fail(msg, detail, [found.code] if found else [])
    fail.fits = fits  # type: ignore[attr-defined]
    raise fail


def forward_detail(label: str, inputs: dict[str, np.ndarray], yours: np.ndarray,
                   reference: np.ndarray, width: int = 80) -> str:
    """The worked case of a failing forward, as a failing gradient shows one: the inputs (when
    small), your output, the reference's and the difference, side by side."""
    blocks = [(n, x) for n, x in inputs.items() if np.size(x) <= 16]
    lines = [f"worked case ({label}):"]
    if blocks:
        lines.append(side_by_side(blocks, width=width))
    outs = [("yours", yours), ("reference", reference)]
    if np.shape(yours) == np.shape(reference):
        outs.append(("difference", np.asarray(yours, dtype=np.float64) - reference))
    lines.append(side_by_side(outs, width=width))
    return "\n".join(lines)


def gradient_checks(student: Fn, reference: Fn, worked: Case, cases: list[Case], op: type | None = None,
                    mistakes: Callable[[Case, np.ndarray, dict], list[Mistake]] | None = None,
                    must_reduce: bool = False, prefix: str = "",
                    raw_mistakes: Callable[[Case, np.ndarray], list[Mistake]] | None = None) -> list[Check]:
    """The three gradient checks of a backward task: the worked case against the reference
    (with the diagnosis), gradcheck over the cases, and the reference over the cases."""

    # A code named on the random shapes must agree with the worked case when that failed too:
    # a tie count taken over the whole array is a constant factor where no value ties, and not
    # on the worked case, whose rows show ratios 0.4, 0.2, 0.4.
    worked_fits: list[list[str]] = []

    def on_worked() -> None:
        try:
            compare(student, reference, worked, op, mistakes, must_reduce, raw_mistakes=raw_mistakes)
        except Fail as f:
            worked_fits.append(getattr(f, "fits", f.diagnosis))
            raise

    def by_gradcheck() -> str:
        for case in cases:
            fn = _named(student, list(case.inputs), case.options)

            def differences(fn: Fn = fn, case: Case = case) -> list | str:
                try:
                    return finite_differences(fn, list(case.inputs.values()))
                except mg.GradcheckError as e:
                    return str(e)

            found = run_student("gradcheck", differences)
            report = found if isinstance(found, str) else first_mismatch(
                input_names(fn, len(case.inputs)), [(int(i), a, n) for i, a, n in found])
            if report is not None:
                raise Fail(f"on {case.describe()}", detail=report)
        return f"{len(cases)} shapes"

    def on_cases() -> str:
        for case in cases:
            try:
                compare(student, reference, case, op, mistakes, must_reduce, worked=False,
                        raw_mistakes=raw_mistakes)
            except Fail as f:
                f.message = f"on {case.describe()}: {f.message}"
                if worked_fits:
                    f.diagnosis = [c for c in f.diagnosis if c in worked_fits[0]]
                raise
        return f"{len(cases)} shapes"

    return [(f"{prefix}gradients on the worked case match the reference", on_worked),
            (f"{prefix}gradcheck (finite differences, random upstream gradient)", by_gradcheck),
            (f"{prefix}gradients match the reference on random shapes", on_cases)]


def agreeing(checks: list[Check], ruled_out: dict[str, tuple[str, ...]]) -> list[Check]:
    """`checks` whose failures name no code that a check passed before them contradicts:
    `ruled_out` maps a check's name to the codes its pass rules out (a weight whose shape
    passed cannot be stored the wrong way round)."""
    passed: set[str] = set()

    def watched(name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            try:
                note = fn()
            except Fail as f:
                contradicted = {c for p in passed for c in ruled_out.get(p, ())}
                f.diagnosis = [c for c in f.diagnosis if c not in contradicted]
                raise
            passed.add(name)
            return note
        return run

    return [(name, watched(name, fn)) for name, fn in checks]


def _named(fn: Fn, names: list[str], options: dict) -> Fn:
    """fn with the options bound and a signature naming the inputs, so gradcheck reports
    "q (input 0, ...)" rather than "input 0"."""

    def call(*tensors: Tensor) -> Tensor:
        return fn(*tensors, **options)

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    call.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in names])  # type: ignore[attr-defined]
    return call


def random_shapes(count: int, min_dims: int = 1, max_dims: int = 3, max_side: int = 4,
                  seed: int = 0) -> list[tuple[int, ...]]:
    """`count` small shapes from a fixed seed (the same every run), size-1 axes included."""
    rng = np.random.default_rng(seed)
    shapes = [tuple(int(s) for s in rng.integers(1, max_side + 1, rng.integers(min_dims, max_dims + 1)))
              for _ in range(count)]
    return [tuple([1] * min_dims)] + shapes  # the all-size-1 case first


def broadcast_pairs(count: int, seed: int = 0) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """`count` pairs of shapes that broadcast together: one side loses leading axes or has
    size-1 axes where the other does not (a fixed seed: the same every run)."""
    rng = np.random.default_rng(seed)
    pairs = [((2, 3), (3,)), ((3, 1), (1, 4))]
    while len(pairs) < count:
        full = tuple(int(s) for s in rng.integers(1, 4, rng.integers(1, 4)))
        small = tuple(1 if rng.random() < 0.4 else s for s in full[int(rng.integers(0, len(full) + 1)):])
        pairs.append((full, small) if rng.random() < 0.5 else (small, full))
    return pairs[:count]
