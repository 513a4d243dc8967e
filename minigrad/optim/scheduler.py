"""The LRScheduler base class: PyTorch's rules for when and how a schedule sets the optimizer's
learning rates, shared by the schedules of `lr_scheduler` and `schedules`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Mapping, Sequence

from .optimizer import Optimizer


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    """One value per parameter group: a list or tuple as given (checked), a single value repeated."""
    if isinstance(value, (list, tuple)):
        _require(len(value) == len(optimizer.param_groups),
                 f"{name} must have the same length as optimizer.param_groups: {name} has "
                 f"{len(value)} values, param_groups has {len(optimizer.param_groups)}")
        return list(value)
    return [value] * len(optimizer.param_groups)


class LRScheduler(ABC):
    """Base class of learning-rate schedules, with PyTorch's semantics.

    On creation with last_epoch=-1 each group's lr is remembered as "initial_lr" (the base
    lr), and one step is taken: last_epoch becomes 0 and the lr of step 0 is set. Call
    `step()` once after each `optimizer.step()` (once per batch or once per epoch, as the
    schedule is meant).

    Subclasses define `get_lr()`, the lrs of step `last_epoch`. Like PyTorch's, most compute
    them from the groups' current lr (`lr = group lr * gamma`), so that schedules compose;
    `_get_closed_form_lr()` computes them from `base_lrs` alone (used by `SequentialLR` to
    restart a schedule). `_is_initial` is True during the step taken on creation.

    Args:
        optimizer: the optimizer whose learning rates are set.
        last_epoch: the index of the last step taken; -1 starts a new schedule. A value >= 0
            resumes one, and needs every group to have its "initial_lr" (load the optimizer's
            state first).

    Attributes:
        optimizer: the optimizer.
        base_lrs: each group's initial lr.
        last_epoch: the number of `step()` calls since creation (PyTorch's name; here a
            step is often one batch).
    """

    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected an Optimizer, not {type(optimizer).__name__}")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"{type(self).__name__}: param 'initial_lr' is not specified in "
                        f"param_groups[{i}] when resuming with last_epoch={last_epoch}; load the "
                        "optimizer's state first, or use last_epoch=-1 for a new schedule"
                    )
        self.base_lrs: list[float] = [float(group["initial_lr"]) for group in optimizer.param_groups]
        self.last_epoch = int(last_epoch)
        self._last_lr: list[float] = []
        self._initial_step()

    def _initial_step(self) -> None:
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    @abstractmethod
    def get_lr(self) -> list[float]:
        """The learning rate of each group at step `last_epoch` (to read it, use get_last_lr)."""

    def _get_closed_form_lr(self) -> list[float]:
        """The lrs of step `last_epoch` from `base_lrs` alone (the schedule restarted there)."""
        return self.get_lr()

    def step(self) -> None:
        """Advance one step and set every group's lr (PyTorch's deprecated step(epoch) is not offered)."""
        self._update_lr()

    def _update_lr(self, epoch: int | None = None) -> None:
        """Go to the next step, or jump to `epoch` (with the closed form), and set the lrs."""
        if epoch is None:
            self.last_epoch += 1
            lrs = self.get_lr()
        else:
            self.last_epoch = epoch
            lrs = self._get_closed_form_lr()
        self._set(lrs)

    def _set(self, lrs: Sequence[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = float(lr)  # a Python float: np.float64 would promote float32 updates
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The learning rates the last `step()` (or the constructor) set, one per group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """The step count and learning rates, as plain numbers and lists.

        Unlike PyTorch's, which holds every attribute, the schedule's shape (step_size, gamma,
        ...) is not saved: it comes from the constructor. `flatten_state` turns the dict into
        arrays for an .npz file, and it is JSON-serializable.
        """
        return {"last_epoch": self.last_epoch, "base_lrs": list(self.base_lrs),
                "last_lr": list(self._last_lr)}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Resume from `state_dict()`; also sets the groups' lr to the saved ones."""
        base_lrs = [float(b) for b in state_dict["base_lrs"]]
        last_lr = [float(b) for b in state_dict["last_lr"]]
        groups = len(self.optimizer.param_groups)
        if len(base_lrs) != groups or len(last_lr) != groups:
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: {len(base_lrs)} learning rates in the "
                f"checkpoint, {groups} parameter groups in the optimizer"
            )
        self.last_epoch = int(state_dict["last_epoch"])
        self.base_lrs = base_lrs
        self._set(last_lr)
