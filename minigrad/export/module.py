"""`to_torch`: a minigrad module as a `torch.nn.Module` that computes the same function.

The forward pass is traced once on example inputs (`trace.py`) and a second time on the
example doubled along the batch axis. Comparing the two tells which numbers in the recorded
options are the batch size (reshape and expand targets), so the batch may change, and which
constants depend on the batch: a float constant the same for every row (a zero initial RNN
state) is stretched to the new batch; any other (a padding mask computed from the token ids
with numpy, a boolean selection of positions) depends on the data, and such a program is
traced again on every call to get them (the replay itself still runs in torch).

The model's buffers are the export's buffers, under the same names. A module that updates its
buffers outside the graph (batch norm's running statistics) is recorded as one call and
replayed by its torch twin (`MODULE_TWINS`), which updates the export's buffers as torch does;
a module that changes a buffer while having no twin is refused at export, since the replay
could not change it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

import minigrad as mg
from minigrad import Tensor
from minigrad.random import get_rng_state, set_rng_state

from .ops import RANDOM_OPS, TORCH_OPS
from .trace import Program, Ref, TraceError, same_structure, trace
from .twins_nn import MODULE_TWINS

_WHOLE = {cls: twin.read for cls, twin in MODULE_TWINS.items()}  # the modules recorded whole


@dataclass(frozen=True)
class BatchDim:
    """An option value that scales with the batch size: per_row * B."""

    per_row: int


@dataclass(frozen=True)
class _Spec:
    """One example input: its shape and dtype, and whether its leading axis is the batch."""

    shape: tuple[int, ...]
    dtype: np.dtype
    batched: bool


def _as_array(x: Any) -> np.ndarray | None:
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return None


def _mg_inputs(arrays: list[Any]) -> list[Any]:
    """minigrad Tensors for tracing; float ones require grad, so that the trace tells which
    ops lie on a differentiable path from them. Each gets its own copy of the array: the
    trace tells inputs apart by their arrays, and one array may be passed twice."""
    return [a if not isinstance(a, np.ndarray)
            else Tensor(a.copy(), requires_grad=a.dtype.kind == "f") for a in arrays]


class TorchExport(torch.nn.Module):
    """A minigrad module's forward (or another method) replayed with torch ops.

    Made by `to_torch`; see its docstring. Parameters are `torch.nn.Parameter`s and the
    model's buffers torch buffers under the minigrad names (nested modules, so `state_dict()`
    keys equal minigrad's, persistent buffers included and non-persistent ones left out, as
    there); constants the program reads are non-persistent buffers too (they follow
    `.to(device)` but stay out of the state dict). `train()` / `eval()` switch dropout and batch
    norm (batch statistics, updating the running ones, or the running ones), as on the minigrad
    model; the module starts in the minigrad model's mode.

    Attributes:
        program: the recorded ops (`trace.Program`), with batch sizes as `BatchDim`s.
        dynamic: True when constants depend on the input data (e.g. padding masks made with
            numpy from token ids): each call then traces the minigrad function again, on the
            call's inputs, to take those constants from them (the ops still run in torch).
        buffer_names: the names of the minigrad model's buffers, which are the export's.
    """

    def __init__(self, model: Any, fn: Callable[..., Any], name: str, example: list[Any]):
        super().__init__()
        arrays = [_as_array(x) for x in example]
        batch = next((a.shape[0] for a in arrays if a is not None and a.ndim), None)
        self._specs = [None if a is None else _Spec(a.shape, a.dtype, a.ndim > 0 and a.shape[0] == batch)
                       for a in arrays]
        self._fixed = [None if a is not None else x for a, x in zip(arrays, example)]
        self._model, self._fn, self._name = model, fn, name
        params = list(model.named_parameters())
        self.program = self._trace(arrays, params, grad=True)
        unmapped = sorted({n.op.__name__ for n in self.program.nodes
                           if n.op not in TORCH_OPS and n.op not in MODULE_TWINS})
        if unmapped:
            raise TraceError(f"to_torch: {name} runs ops with no torch twin in TORCH_OPS: "
                             + ", ".join(unmapped))
        self.dynamic = True  # until the second trace shows the program fits every batch size
        if batch is not None:
            doubled = [a if a is None or not s.batched else np.concatenate([a, a])
                       for a, s in zip(arrays, self._specs)]
            twice = self._trace(doubled, params, grad=True)
            fitted = _fit_batch(self.program, twice, batch)
            if fitted is not None:
                self.program, self.dynamic = fitted, False
        # Registered in the state dict's order (which is torch's), so that the nested modules
        # come in minigrad's order; the non-persistent buffers after.
        # A tied weight's other names (in the state dict, as torch's) get the same torch Parameter.
        weights, buffers, saved = dict(params), dict(model.named_buffers()), list(model.state_dict())
        every_name = list(model.named_parameters(remove_duplicate=False))
        first = {id(p): n for n, p in reversed(every_name)}
        tied = {n: first[id(p)] for n, p in every_name if first[id(p)] != n}
        self.buffer_names = tuple(buffers)
        made: dict[str, torch.nn.Parameter] = {}
        for name in saved + [n for n in [*weights, *buffers] if n not in saved]:
            if name in weights:
                made[name] = torch.nn.Parameter(torch.from_numpy(weights[name]._data.copy()))
                self._register(name, made[name])
            elif name in tied:
                self._register(name, made[tied[name]])
            else:
                self._register(name, torch.from_numpy(np.array(buffers[name]._data, copy=True)),
                               persistent=name in saved)
        self._stretch: set[int] = set()
        if not self.dynamic:
            for i, c in enumerate(self.program.constants):
                if isinstance(c, _PerRow):
                    self._stretch.add(i)
                    c = c.row
                self.register_buffer(f"_const{i}", torch.from_numpy(np.array(c)), persistent=False)
        self.train(model.training)  # start in the model's mode

    # ------------------------------------------------------------------ building

    def _register(self, name: str, value: torch.Tensor, persistent: bool | None = None) -> None:
        """Put a parameter (persistent None) or a buffer at a dotted path, creating the plain
        modules on the way."""
        *path, leaf = name.split(".")
        owner: torch.nn.Module = self
        for part in path:
            child = owner._modules.get(part)
            if child is None:
                if hasattr(owner, part):
                    raise ValueError(f"to_torch: parameter name {name!r} clashes with torch.nn.Module.{part}")
                child = torch.nn.Module()
                owner.add_module(part, child)
            owner = child
        if hasattr(owner, leaf) and leaf not in owner._parameters:
            raise ValueError(f"to_torch: parameter name {name!r} clashes with torch.nn.Module.{leaf}")
        if persistent is None:
            owner.register_parameter(leaf, value)
        else:
            owner.register_buffer(leaf, value, persistent=persistent)

    def _trace(self, arrays: list[Any], params: list, grad: bool) -> Program:
        """Trace the minigrad function on arrays, in training mode (so that dropout is in the
        program; the torch module's mode decides whether it drops), leaving no trace behind:
        the model's mode, its buffers (batch norm's running statistics) and minigrad's random
        generator are restored afterwards.

        A buffer that changed during the trace must belong to a module recorded whole (whose
        torch twin makes the same change); any other change would be lost in torch: refused."""
        inputs = [x if a is None else t for a, x, t in zip(arrays, self._fixed, _mg_inputs(arrays))]
        modes, rng = [(m, m.training) for m in self._model.modules()], get_rng_state()
        named = list(self._model.named_buffers())
        saved = [b._data.copy() for _, b in named]
        self._model.train()
        try:
            with (mg.enable_grad() if grad else mg.no_grad()):
                program = trace(self._fn, inputs, params, named, _WHOLE)
            whole = {n for path, m in self._model.named_modules() if isinstance(m, tuple(MODULE_TWINS))
                     for n, _ in m.named_buffers(prefix=path)}
            changed = [n for (n, b), before in zip(named, saved) if n not in whole
                       and not np.array_equal(b._data, before, equal_nan=before.dtype.kind in "fc")]
            if changed:
                raise TraceError(
                    f"to_torch: {self._name} changes the buffers {', '.join(changed)} outside its ops, which "
                    "torch cannot replay; the module that owns them needs a torch twin in MODULE_TWINS")
            return program
        finally:
            for m, mode in modes:
                m.training = mode
            for (_, b), data in zip(named, saved):
                b._data = data
            set_rng_state(rng)

    # ------------------------------------------------------------------ calling

    def forward(self, *inputs: Any) -> Any:
        """The traced function on new inputs: torch tensors (or numpy arrays) in the positions of
        the example's tensors, the same shapes except the leading batch dimension."""
        B = self._check(inputs)
        device = next((p.device for p in self.parameters()), torch.device("cpu"))
        xs = [x if s is None else torch.as_tensor(getattr(x, "_data", x) if isinstance(x, Tensor) else x,
                                                  device=device)
              for x, s in zip(inputs, self._specs)]
        if not self.dynamic:
            return self._replay(self.program, self.program, xs, B, self._buffer_const)
        arrays = [None if s is None else x.detach().cpu().numpy() for x, s in zip(xs, self._specs)]
        fresh = self._trace(arrays, list(self._model.named_parameters()), grad=False)
        if not same_structure(fresh, self.program):
            raise RuntimeError(
                f"to_torch: {self._name} ran different ops on these inputs than on the example "
                "(Python control flow that depends on the data); export it with an example like them"
            )

        def const(i: int, B: int | None) -> torch.Tensor:
            return torch.as_tensor(fresh.constants[i], device=device)
        return self._replay(fresh, self.program, xs, B, const)

    def _buffer_const(self, i: int, B: int) -> torch.Tensor:
        c = getattr(self, f"_const{i}")
        return c.expand(B, *c.shape[1:]) if i in self._stretch else c

    def _check(self, inputs: tuple) -> int | None:
        """The batch size of the inputs, after checking them against the example."""
        if len(inputs) != len(self._specs):
            raise TypeError(f"to_torch: {self._name} was exported with {len(self._specs)} inputs, "
                            f"called with {len(inputs)}")
        B = None
        for i, (x, s, fixed) in enumerate(zip(inputs, self._specs, self._fixed)):
            if s is None:
                if x is not fixed and x != fixed:
                    raise ValueError(f"to_torch: input {i} was {fixed!r} in the example and the trace "
                                     f"fixed it; got {x!r}")
                continue
            shape = tuple(x.shape)
            if s.batched and len(shape) == len(s.shape) and shape[1:] == s.shape[1:]:
                if B is not None and shape[0] != B:
                    raise ValueError(f"to_torch: inputs of {self._name} have batch sizes {B} and {shape[0]}")
                B = shape[0]
                continue
            if not s.batched and shape == s.shape:
                continue
            want = ("(B, " + ", ".join(map(str, s.shape[1:])) + ")") if s.batched else str(s.shape)
            raise ValueError(
                f"to_torch: input {i} of {self._name} has shape {shape}, but the program was "
                f"traced for {want}: the example fixes every dimension except the leading batch "
                "dimension B (the sequence length, the image size...); export again with an "
                "example of the new shape"
            )
        return B

    def _replay(self, program: Program, flags: Program, xs: list, B: int | None,
                const: Callable) -> Any:
        """Run the ops of `program` with torch; `flags` (the traced-with-grad program) tells
        where minigrad cut the graph."""
        params, buffers = dict(self.named_parameters()), dict(self.named_buffers())
        values: list[torch.Tensor] = []

        def get(ref: Ref, detach: bool) -> torch.Tensor:
            if ref.kind == "node":
                v = values[ref.key]
            elif ref.kind == "input":
                v = xs[ref.key]
            elif ref.kind == "param":
                v = params[ref.key]
            elif ref.kind == "buffer":
                v = buffers[ref.key]
            else:
                v = const(ref.key, B)
            return v.detach() if detach else v

        def option(v: Any) -> Any:
            if isinstance(v, Ref):
                return get(v, False)
            if isinstance(v, BatchDim):
                return v.per_row * B
            if isinstance(v, tuple):
                return tuple(option(x) for x in v)
            return v

        for node, flag in zip(program.nodes, flags.nodes):
            args = [get(r, f.detach) for r, f in zip(node.args, flag.args)]
            opts = {k: option(v) for k, v in node.options.items()}
            if node.op in MODULE_TWINS:  # a module traced in eval mode stays in it
                opts["training"] = opts["training"] and self.training
                out = MODULE_TWINS[node.op].run(*args, **opts)
            else:
                if node.op in RANDOM_OPS:
                    opts["training"] = self.training
                out = TORCH_OPS[node.op](*args, **opts)
            values.append(out if flag.grad or not out.requires_grad else out.detach())

        def build(s: Any) -> Any:
            if isinstance(s, Ref):
                return get(s, False)
            if isinstance(s, (tuple, list)):
                return type(s)(build(x) for x in s)
            if isinstance(s, dict):
                return {k: build(v) for k, v in s.items()}
            return s
        return build(program.output)

    def extra_repr(self) -> str:
        mode = "traced again on every call" if self.dynamic else "any batch size"
        return f"{self._name}: {len(self.program.nodes)} ops, {mode}"


# ----------------------------------------------------------------------------- batch fitting


@dataclass(frozen=True)
class _PerRow:
    """A float constant whose rows are all equal: one row, stretched to the batch at replay."""

    row: np.ndarray


def _fit_batch(one: Program, two: Program, B: int) -> Program | None:
    """`one` with its batch-sized numbers made symbolic, from `two` (traced on the example
    doubled along the batch axis); None when the program depends on the data otherwise."""
    if not same_structure(one, two):
        return None
    consts: list[Any] = []
    for a, b in zip(one.constants, two.constants):
        if a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
            consts.append(a)
        elif (a.dtype.kind == "f" and a.ndim and a.shape[0] == B and b.shape == (2 * B,) + a.shape[1:]
              and (a == a[:1]).all() and np.array_equal(b[:1], a[:1])):
            consts.append(_PerRow(a[:1]))
        else:
            return None
    nodes = []
    for na, nb in zip(one.nodes, two.nodes):
        options = {}
        for k in na.options:
            fitted = _fit_option(na.options[k], nb.options[k], B)
            if fitted is _MISMATCH:
                return None
            options[k] = fitted
        nodes.append(type(na)(na.op, na.args, options, na.grad))
    return Program(nodes, consts, one.output)


_MISMATCH = object()


def _fit_option(a: Any, b: Any, B: int) -> Any:
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        parts = tuple(_fit_option(x, y, B) for x, y in zip(a, b))
        return _MISMATCH if any(p is _MISMATCH for p in parts) else parts
    if isinstance(a, Ref) and isinstance(b, Ref):
        same = a.kind == b.kind and (a.kind == "const" or a.key == b.key)
        return a if same else _MISMATCH
    if type(a) is int and type(b) is int and a != b:  # noqa: E721  (bool is not a size)
        return BatchDim(a // B) if b == 2 * a and a % B == 0 else _MISMATCH
    return a if type(a) is type(b) and a == b else _MISMATCH


# ----------------------------------------------------------------------------- entry point


def to_torch(model: Any, *example_inputs: Any, method: str | Callable[..., Any] = "forward") -> TorchExport:
    """A `torch.nn.Module` computing the same function as a minigrad module.

    One forward pass is traced on the example inputs: every op minigrad runs is recorded, and
    the torch module replays the recording with the torch twin of each op (`TORCH_OPS`). The
    parameters become `torch.nn.Parameter`s and the buffers torch buffers under the same names
    (`state_dict()` keys equal minigrad's), so any torch optimizer trains them, and
    `state_dict_from_torch` brings them back, buffers included. The minigrad model is not
    changed.

    What the example fixes, and what it does not:
        * The batch size (the leading dimension of every input that has the example's
          first input's leading size) may change from call to call.
        * Every other dimension (sequence length, image size) is fixed: a call with another
          one raises a ValueError saying so. Export again for another length.
        * Python control flow is fixed by the trace: an `if` or a loop whose path depends on
          the values (not the shapes) of the inputs takes the example's path every time.
        * Dropout: the trace runs in training mode; `train()` / `eval()` on the torch module
          turn dropout on and off (torch draws its own random numbers).
        * Batch norm: each BatchNorm1d / BatchNorm2d call is replayed as torch's module forward
          on the export's buffers: in `train()` the batch's statistics, with running_mean,
          running_var and num_batches_tracked updated as torch (and minigrad) update them; in
          `eval()` the running statistics. A method that itself evaluates (calls the model
          under `nn.evaluating`) is exported in eval mode whatever the torch module's mode.
        * Constants built inside forward from constants (positions, causal masks) are
          recorded once. Ones computed with numpy from the inputs (padding masks from the token
          ids, BERT's selected positions) cannot be recorded as torch ops: such a program is
          recognised at export (`dynamic` is True) and traced again with minigrad on every
          call, to take these constants from the new inputs; the ops still run in torch.
        * Values minigrad computes outside its ops (comparisons such as `x > 0`, `.item()`,
          numpy on `.numpy()`) are constants too. When they change with the batch, the program
          is dynamic as above; when they do not (say `weight._data > 0`), the trace fixes
          them, even after training changes the weights.
        * Non-tensor inputs (a Python float, None) are fixed to the example's value.
        * Dtypes: each op follows torch's promotion rules, which are minigrad's except for a
          0-d float64 operand with a float32 tensor (float32 in torch, float64 in minigrad).

    Args:
        model: a minigrad `nn.Module`.
        *example_inputs: minigrad Tensors, numpy arrays or torch tensors (token ids as
            integers), or other values, in the order `method` takes them.
        method: the name of the model's method to export ("forward", or "loss" for the
            training forward that returns the loss), or a function `fn(model, *inputs)`.

    Returns:
        a `TorchExport` (a `torch.nn.Module`); call it with torch tensors in the places of the
        example's tensors. It returns what the method returns, with torch tensors for Tensors.

    Example:
        >>> gpt = GPT(GPTConfig(vocab_size=96, block_size=32, embed_dim=32, num_heads=2))
        >>> idx, targets = mg.randint(0, 96, (4, 32)), mg.randint(0, 96, (4, 32))
        >>> train = to_torch(gpt, idx, targets, method="loss")   # forward(idx, targets) -> loss
        >>> loss = train(torch.randint(0, 96, (16, 32)), torch.randint(0, 96, (16, 32)))
        >>> loss.backward()                                        # grads on train.parameters()
    """
    if callable(method):
        fn, name = (lambda *xs: method(model, *xs)), getattr(method, "__name__", "function")
    else:
        fn = model if method == "forward" else getattr(model, method, None)
        name = f"{type(model).__name__}.{method}"
        if fn is None or not callable(fn):
            raise AttributeError(f"to_torch: {type(model).__name__} has no method {method!r}")
    try:
        return TorchExport(model, fn, name, list(example_inputs))
    except TraceError as e:
        raise TraceError(f"to_torch: {name}: {e}") from None
