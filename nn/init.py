"""Weight initialisation, as `torch.nn.init`: fill a tensor in place from the global generator.

Every function writes into the tensor's own array (keeping its dtype), returns `tensor`, and
draws from `minigrad.random.generator()`, so `minigrad.manual_seed` makes runs repeat. For a
weight of shape (out, in, *k), fan_in = in * prod(k) and fan_out = out * prod(k).
"""

from __future__ import annotations

import math

import numpy as np

from minigrad import Tensor, versions
from minigrad.errors import ShapeError
from minigrad.random import generator


def _fill(tensor: Tensor, values: np.ndarray | float) -> Tensor:
    tensor._data[...] = values  # in place: the array (and any view of it) keeps its identity
    versions.bump(tensor._data)  # a graph that saved the old values now refuses to backward
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill with samples of U(a, b)."""
    return _fill(tensor, generator().uniform(a, b, tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with samples of N(mean, std^2)."""
    return _fill(tensor, generator().normal(mean, std, tensor.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    return _fill(tensor, val)


def zeros_(tensor: Tensor) -> Tensor:
    return _fill(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    return _fill(tensor, 1)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The gain that keeps activations' variance steady through `nonlinearity`, as PyTorch:
    1 for linear and sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + a^2)) for
    leaky_relu with negative slope a (default 0.01), 3/4 for selu."""
    if nonlinearity in ("linear", "identity", "sigmoid", "conv1d", "conv2d", "conv3d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"calculate_gain: negative slope {slope!r} is not a number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight (out, in, *kernel): (in * k, out * k), k = prod(kernel)."""
    if tensor.ndim < 2:
        raise ShapeError(
            f"init: fan in and fan out need a tensor of at least 2 dimensions, not shape {tensor.shape}"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"init: mode must be 'fan_in' or 'fan_out', not {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out))  (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """U(-b, b), b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a)  (He et al., 2015).

    With a = sqrt(5) (what Linear uses) b = 1 / sqrt(fan_in).
    """
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    """N(0, std^2), std = gain / sqrt(fan), gain = calculate_gain(nonlinearity, a)."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std)
