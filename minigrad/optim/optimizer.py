"""The Optimizer base class (parameter groups, per-parameter state, state dicts) and the helpers
that turn a state dict into flat arrays for one .npz checkpoint and back."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np

from ..grad_mode import enable_grad
from ..tensor import Tensor
from ..versions import bump

Params = Iterable[Tensor] | Iterable[dict[str, Any]]


class Optimizer:
    """Base class of optimizers: holds parameter groups and per-parameter state.

    Parameters are numbered 0, 1, 2, ... in order over all groups (the order of
    `param_groups`, then of each group's "params"); `state` maps that index to the parameter's
    buffers. Tensors are never dict keys: `Tensor.__eq__` is elementwise.

    Subclasses define `_update(p, grad, state, group)`, which changes the array `p` in place
    from the gradient `grad` (both numpy arrays, so no graph node can be recorded) using the
    hyperparameters in `group` and the buffers in `state` (a dict, empty on the first step).

    Args:
        params: tensors to optimize, or dicts defining parameter groups, each with a
            "params" entry and any hyperparameters that differ from `defaults`.
        defaults: hyperparameters used by groups that do not set them.

    Attributes:
        param_groups: list of dicts, each with "params" (a list of tensors) and every
            hyperparameter.
        state: dict from parameter index to a dict of that parameter's buffers
            (e.g. {"step": 3, "exp_avg": array, "exp_avg_sq": array}); a parameter
            appears once it has been updated.
    """

    def __init__(self, params: Params, defaults: Mapping[str, Any]):
        if isinstance(params, (Tensor, dict)):
            raise TypeError(
                f"{type(self).__name__}: params should be an iterable of tensors or of dicts, "
                f"not a single {type(params).__name__}; wrap it in a list"
            )
        if callable(params) or hasattr(params, "parameters") or not isinstance(params, Iterable):
            # A model, or its bound method `model.parameters` without the call.
            hint = "model.parameters()" if callable(params) or hasattr(params, "parameters") else "a list"
            raise TypeError(
                f"{type(self).__name__}: params must be an iterable of Tensors or dicts, got "
                f"{type(params).__name__}; pass {hint}"
            )
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[int, dict[str, Any]] = {}
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: Mapping[str, Any]) -> None:
        """Add a group of parameters with their own hyperparameters (e.g. a layer to unfreeze).

        Its parameters take the next indices, so the state of existing ones keeps its index.
        """
        name = type(self).__name__
        if not isinstance(param_group, Mapping) or "params" not in param_group:
            raise TypeError(f"{name}: a parameter group is a dict with a 'params' entry")
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        seen = {id(p) for p in self._params()}
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: can only optimize Tensors, not {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"{name}: cannot optimize a non-leaf tensor (made by {p.grad_fn})")
            if p.dtype.kind != "f":
                raise TypeError(f"{name}: can only optimize floating-point tensors, not {p.dtype}")
            if id(p) in seen:
                # Updating one tensor twice per step is never what was meant.
                raise ValueError(f"{name}: a parameter appears more than once in the parameter groups")
            seen.add(id(p))
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self._check_group(group)
        self.param_groups.append(group)

    def _check_group(self, group: dict[str, Any]) -> None:
        """Validate (and normalise) one group's hyperparameters; subclasses raise ValueError."""

    def _params(self) -> Iterator[Tensor]:
        for group in self.param_groups:
            yield from group["params"]

    def _indexed(self) -> Iterator[tuple[int, dict[str, Any], Tensor]]:
        """(index, group, parameter) for every parameter, in index order."""
        i = 0
        for group in self.param_groups:
            for p in group["params"]:
                yield i, group, p
                i += 1

    # ------------------------------------------------------------------ training

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients: set every `.grad` to None (or fill it with zeros in place)."""
        for p in self._params():
            if set_to_none:
                p.grad = None
            elif p._grad is not None:
                p._grad.fill(0)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; parameters whose grad is None are skipped.

        The update is in place, so it bumps each parameter's version: a backward through a
        graph recorded before the step raises instead of using the new values.

        Args:
            closure: optional function that clears the gradients, recomputes the loss,
                calls backward and returns the loss (run with grad mode on).

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        todo = [(i, group, p) for i, group, p in self._indexed() if p._grad is not None]
        states = [self.state.get(i, {}) for i, _, _ in todo]

        # One parameter after another, on the calling thread. (Spread over two threads, Adam's
        # step on the small preset's 818,176 parameters took 4.0-5.5 ms against 2.8-3.2 on one:
        # its many small numpy calls spend more on handing the GIL between the threads than
        # they gain.)
        try:
            for (_, group, p), state in zip(todo, states):
                self._update(p._data, p._grad, state, group)
        finally:  # (after an error too: the parameters updated before it are changed)
            for (i, _, p), state in zip(todo, states):
                bump(p._data)  # so a backward through a graph made before this step raises
                if state:  # plain SGD keeps no buffers, so no entry
                    self.state[i] = state
        return loss

    def _update(self, p: np.ndarray, grad: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no update rule")  # abstract

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        """A snapshot of the optimizer: hyperparameters and copies of every buffer.

        Returns:
            {"param_groups": [{"lr": ..., ..., "params": [indices]}, ...],
             "state": {index: {"step": int, "exp_avg": array, ...}, ...}}, with plain numbers,
            tuples and numpy arrays only (no tensors). `flatten_state` turns it into
            {str: array} for an .npz file.
        """
        groups, start = [], 0
        for group in self.param_groups:
            saved = {k: v for k, v in group.items() if k != "params"}
            saved["params"] = list(range(start, start + len(group["params"])))
            start += len(group["params"])
            groups.append(saved)
        state = {
            i: {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in s.items()}
            for i, s in self.state.items()
        }
        return {"param_groups": groups, "state": state}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore hyperparameters and buffers saved by `state_dict` (or `unflatten_state`).

        The optimizer must have been built over parameters of the same shapes, in the same
        groups and order. Everything is checked before anything is written, so a failed load
        changes nothing. Buffers are copied and cast to their parameter's dtype.
        """
        name = type(self).__name__
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"{name}.load_state_dict: the checkpoint has {len(saved_groups)} parameter "
                f"groups, the optimizer {len(self.param_groups)}"
            )
        index: dict[int, Tensor] = {}  # saved index -> parameter
        new_groups = []
        for g, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            ids = [int(i) for i in saved["params"]]
            if len(ids) != len(group["params"]):
                raise ValueError(
                    f"{name}.load_state_dict: group {g} has {len(ids)} parameters in the "
                    f"checkpoint, {len(group['params'])} in the optimizer"
                )
            index.update(zip(ids, group["params"]))
            new = {**group, **{k: _plain(v) for k, v in saved.items() if k != "params"}}
            self._check_group(new)
            new_groups.append(new)
        order = {id(p): i for i, _, p in self._indexed()}
        new_state: dict[int, dict[str, Any]] = {}
        for key, buffers in state_dict["state"].items():
            if int(key) not in index:
                raise ValueError(f"{name}.load_state_dict: state for unknown parameter {key}")
            p = index[int(key)]
            new_state[order[id(p)]] = entry = {}
            for k, v in buffers.items():
                if k == "step":
                    entry[k] = int(v)
                    continue
                if np.shape(v) != p.shape:
                    raise ValueError(
                        f"{name}.load_state_dict: {k} of parameter {key} has shape "
                        f"{np.shape(v)} in the checkpoint, the parameter {p.shape}"
                    )
                entry[k] = np.array(v, dtype=p.dtype)  # a copy: steps must not write into the dict
        self.param_groups[:] = new_groups
        self.state = new_state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for g, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {g}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def _plain(value: Any) -> Any:
    """Numpy scalars and 0-d arrays as Python numbers, 1-d arrays as tuples (e.g. betas).

    Python numbers matter: NumPy promotes float32 * np.float64 to float64, but a Python
    float leaves a float32 array float32.
    """
    if isinstance(value, (np.ndarray, np.generic)):
        return value.item() if value.ndim == 0 else tuple(value.tolist())
    return value


# ----------------------------------------------------------------------------- flat checkpoints


def flatten_state(state_dict: Mapping[str, Any], prefix: str = "") -> dict[str, np.ndarray]:
    """Flatten an optimizer's (or a scheduler's) state dict to {name: array} for an .npz file.

    Names are dotted paths, as in a model's state dict: "param_groups.0.lr",
    "param_groups.0.betas", "state.3.exp_avg", "last_epoch", "_schedulers.1.last_epoch" (a
    list of dicts, such as SequentialLR's). With a prefix such as "optim.",
    model and optimizer fit in one file side by side.

    Example:
        >>> ckpt = {**model.state_dict(), **flatten_state(opt.state_dict(), "optim.")}
        >>> minigrad.save(ckpt, "ckpt.npz")
        >>> opt.load_state_dict(unflatten_state(minigrad.load("ckpt.npz"), "optim."))

    Raises:
        TypeError: for a value that is not a number, bool, string, sequence of numbers or array
            (None, for instance), or a key with a dot in it.
    """
    flat: dict[str, np.ndarray] = {}

    def put(name: str, value: Any) -> None:
        if value is None or isinstance(value, (dict, Tensor)):
            raise TypeError(f"flatten_state: {name} is {type(value).__name__}, which cannot be saved")
        arr = np.array(value)
        if arr.dtype.kind not in "biufU":
            raise TypeError(f"flatten_state: {name} is not numbers or text ({arr.dtype})")
        flat[prefix + name] = arr

    def check(key: Any) -> str:
        if "." in str(key):
            raise TypeError(f"flatten_state: the key {key!r} contains a dot")
        return str(key)

    for top, value in state_dict.items():
        if top == "param_groups":
            for g, group in enumerate(value):
                for k, v in group.items():
                    put(f"param_groups.{g}.{check(k)}", v)
        elif top == "state":
            for i, buffers in value.items():
                for k, v in buffers.items():
                    put(f"state.{int(i)}.{check(k)}", v)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, dict) for v in value):
            for i, inner in enumerate(value):  # e.g. SequentialLR's "_schedulers"
                for k, v in inner.items():
                    put(f"{check(top)}.{i}.{check(k)}", v)
        else:
            put(check(top), value)
    return flat


def unflatten_state(flat: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Rebuild the state dict that `flatten_state` flattened (entries without `prefix` are ignored).

    Numbers come back as Python numbers, "step" as an int, hyperparameter sequences (betas) as
    tuples, "params" as a list of ints, top-level sequences (a scheduler's base_lrs) as
    lists, lists of dicts as lists of dicts, and buffers as arrays, so
    `unflatten_state(flatten_state(sd))` equals `sd`.
    """
    groups: dict[int, dict[str, Any]] = {}
    state: dict[int, dict[str, Any]] = {}
    nested: dict[str, dict[int, dict[str, Any]]] = {}  # a list of dicts, such as "_schedulers"
    out: dict[str, Any] = {}
    for name, value in flat.items():
        if not name.startswith(prefix):
            continue
        parts = name[len(prefix):].split(".")
        value = np.asarray(value)
        if parts[0] == "param_groups" and len(parts) == 3:
            key = parts[2]
            groups.setdefault(int(parts[1]), {})[key] = (
                [int(i) for i in value.tolist()] if key == "params" else _plain(value)
            )
        elif parts[0] == "state" and len(parts) == 3:
            key = parts[2]
            state.setdefault(int(parts[1]), {})[key] = int(value) if key == "step" else value.copy()
        elif len(parts) == 1:
            out[parts[0]] = value.item() if value.ndim == 0 else value.tolist()
        elif len(parts) == 3 and parts[1].isdigit():
            inner = nested.setdefault(parts[0], {}).setdefault(int(parts[1]), {})
            inner[parts[2]] = value.item() if value.ndim == 0 else value.tolist()
        else:
            raise ValueError(f"unflatten_state: {name!r} is not a name that flatten_state writes")
    for top, inner in nested.items():
        out[top] = [inner[i] for i in sorted(inner)]
    if groups:
        out["param_groups"] = [groups[g] for g in sorted(groups)]
        out["state"] = {i: state[i] for i in sorted(state)}
    return out
