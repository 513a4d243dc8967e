"""State dicts across the bridge, and whole attention / transformer layers to and from torch.nn.

minigrad's names are PyTorch's except in one place: `nn.MultiheadAttention` keeps four Linear
layers (q_proj, k_proj, v_proj, out_proj), where torch.nn.MultiheadAttention packs the first
three into one `in_proj_weight` (3E, E) and `in_proj_bias` (3E), stacked q, k, v (or keeps
`q_proj_weight`, `k_proj_weight`, `v_proj_weight` when key and value sizes differ).
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

import numpy as np
import torch
import torch.nn.functional as TF

import minigrad.nn as nn
import minigrad.nn.functional as F

LAYOUTS = ("minigrad", "torch.nn")
_QKV = ("q", "k", "v")


def state_dict_to_torch(state: Mapping[str, Any], layout: str = "minigrad") -> dict[str, torch.Tensor]:
    """A minigrad state dict as torch tensors (copies, bit for bit).

    Args:
        state: name -> array, e.g. `model.state_dict()`.
        layout: "minigrad" keeps every name (for `to_torch` modules); "torch.nn" packs each
            attention's q/k/v projections into torch.nn.MultiheadAttention's `in_proj_weight`
            and `in_proj_bias`, for torch.nn's own MultiheadAttention and Transformer layers.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"state_dict_to_torch: layout must be one of {LAYOUTS}, not {layout!r}")
    out = {k: torch.from_numpy(np.array(getattr(v, "_data", v), copy=True)) for k, v in state.items()}
    return _pack(out) if layout == "torch.nn" else out


def state_dict_from_torch(state: Mapping[str, Any], model: Any) -> dict[str, np.ndarray]:
    """A torch state dict as a minigrad one for `model`: `model.load_state_dict(...)` takes it.

    It holds every entry of `model.state_dict()`: the parameters and the persistent buffers
    (batch norm's running_mean, running_var and num_batches_tracked). Names are kept, except
    that torch.nn's packed attention (`in_proj_weight`, `in_proj_bias`, or `q_proj_weight`...)
    is split into minigrad's q_proj / k_proj / v_proj where the model has them, and a `module.`
    prefix on every name (DistributedDataParallel's) is dropped. Each array takes the dtype of
    the model's entry of its name (a counter stays an integer).

    Raises:
        ValueError: names missing or left over, or shapes that differ from the model's.
    """
    params = model.state_dict()  # name -> array, parameters and persistent buffers
    arrays = {k: v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else np.asarray(v)
              for k, v in state.items()}
    ddp = all(k.startswith("module.") for k in arrays) and not any(k.startswith("module.") for k in params)
    if arrays and ddp:
        arrays = {k[len("module."):]: v for k, v in arrays.items()}
    arrays = _unpack(arrays, params)
    missing = [k for k in params if k not in arrays]
    unexpected = [k for k in arrays if k not in params]
    wrong = [f"{k}: torch {arrays[k].shape}, minigrad {params[k].shape}"
             for k in params if k in arrays and arrays[k].shape != params[k].shape]
    problems = ([f"missing: {', '.join(missing)}"] if missing else []) + (
        [f"unexpected: {', '.join(unexpected)}"] if unexpected else []) + (
        [f"wrong shape: {'; '.join(wrong)}"] if wrong else [])
    if problems:
        raise ValueError(f"state_dict_from_torch into {type(model).__name__}: " + " | ".join(problems))
    return {k: np.array(arrays[k], dtype=p.dtype) for k, p in params.items()}


_QKV_LEAVES = {f"{n}_proj.{leaf}" for n in _QKV for leaf in ("weight", "bias")}


def _pack(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Every attention's q/k/v projections (found by their three weights) packed as torch.nn's."""
    prefixes = {k[:-len("q_proj.weight")] for k in state if k.endswith("q_proj.weight")}
    prefixes = {p for p in prefixes if all(f"{p}{n}_proj.weight" in state for n in _QKV)}
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        prefix = next((p for p in prefixes if key.startswith(p) and key[len(p):] in _QKV_LEAVES), None)
        if prefix is None:
            out[key] = value
            continue
        if key[len(prefix):] != "q_proj.weight":
            continue  # packed when its q_proj.weight came by
        weights = [state[f"{prefix}{n}_proj.weight"] for n in _QKV]
        if all(w.shape == weights[0].shape for w in weights):
            out[prefix + "in_proj_weight"] = torch.cat(weights)
        else:  # key or value size differs from embed_dim: torch keeps three weights
            for n, w in zip(_QKV, weights):
                out[f"{prefix}{n}_proj_weight"] = w
        if f"{prefix}q_proj.bias" in state:
            out[prefix + "in_proj_bias"] = torch.cat([state[f"{prefix}{n}_proj.bias"] for n in _QKV])
    return out


def _unpack(arrays: dict[str, np.ndarray], params: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """torch.nn's packed attention entries split into the q/k/v names `params` (the model's
    state-dict names) has; every other entry as it is."""
    out: dict[str, np.ndarray] = {}
    for key, value in arrays.items():
        for packed in ("in_proj_weight", "in_proj_bias"):
            prefix = key[:-len(packed)]
            leaf = packed.rsplit("_", 1)[1]
            if key.endswith(packed) and f"{prefix}q_proj.{leaf}" in params:
                for n, part in zip(_QKV, np.split(value, 3)):
                    out[f"{prefix}{n}_proj.{leaf}"] = part
                break
        else:
            for n in _QKV:
                if key.endswith(f"{n}_proj_weight") and f"{key[:-len('_weight')]}.weight" in params:
                    out[f"{key[:-len('_weight')]}.weight"] = value
                    break
            else:
                out[key] = value
    return out


# ----------------------------------------------------------------------------- whole layers


def _activation_name(fn: Any) -> str:
    """'relu', 'gelu' or 'gelu-tanh' for an activation of either library, else its repr."""
    if fn in (F.relu, TF.relu, "relu") or isinstance(fn, (nn.ReLU, torch.nn.ReLU)):
        return "relu"
    if fn in (F.gelu, TF.gelu, "gelu"):
        return "gelu"
    if isinstance(fn, (nn.GELU, torch.nn.GELU)):
        return "gelu" if fn.approximate == "none" else "gelu-tanh"
    if isinstance(fn, functools.partial) and fn.func in (TF.gelu, F.gelu) and not fn.args:
        return "gelu" if fn.keywords.get("approximate", "none") == "none" else "gelu-tanh"
    return repr(fn)


_TORCH_ACTIVATION = {"relu": "relu", "gelu": "gelu",
                     "gelu-tanh": functools.partial(TF.gelu, approximate="tanh")}


def _config(layer: Any) -> dict[str, Any]:
    """The settings that must agree for two layers to compute the same function."""
    if isinstance(layer, (nn.MultiheadAttention, torch.nn.MultiheadAttention)):
        mine = isinstance(layer, nn.MultiheadAttention)
        return dict(embed_dim=layer.embed_dim, num_heads=layer.num_heads, dropout=float(layer.dropout),
                    kdim=layer.kdim, vdim=layer.vdim, batch_first=True if mine else layer.batch_first,
                    bias=(layer.q_proj.bias is not None) if mine else (layer.in_proj_bias is not None))
    attn = layer.self_attn
    mine = isinstance(attn, nn.MultiheadAttention)
    return dict(kind="decoder" if hasattr(layer, "multihead_attn") else "encoder",
                d_model=attn.embed_dim, nhead=attn.num_heads, dim_feedforward=layer.linear1.out_features,
                dropout=float(layer.dropout.p), activation=_activation_name(layer.activation),
                norm_first=layer.norm_first, layer_norm_eps=layer.norm1.eps,
                batch_first=True if mine else attn.batch_first, bias=layer.linear1.bias is not None)


def check_same_config(a: Any, b: Any) -> None:
    """Raise ValueError naming every setting in which two layers (minigrad or torch.nn) differ."""
    ca, cb = _config(a), _config(b)
    diff = [f"{k}: {ca[k]!r} vs {cb[k]!r}" for k in ca if ca[k] != cb.get(k)]
    if diff:
        raise ValueError(f"{type(a).__name__} and {type(b).__name__} differ in " + "; ".join(diff))


def to_torch_layer(layer: Any) -> torch.nn.Module:
    """torch.nn's own MultiheadAttention / TransformerEncoderLayer / TransformerDecoderLayer,
    configured as the minigrad layer (batch_first=True, same norm_first, activation, eps,
    dropout, bias) and holding copies of its weights: the same function.

    torch.nn's boolean masks mean True = may NOT attend, the opposite of minigrad's; pass
    `~mask` (or a float mask) to the torch layer.
    """
    dtype = next(iter(layer.parameters())).dtype
    if isinstance(layer, nn.MultiheadAttention):
        out: torch.nn.Module = torch.nn.MultiheadAttention(
            layer.embed_dim, layer.num_heads, dropout=layer.dropout, bias=layer.q_proj.bias is not None,
            kdim=layer.kdim, vdim=layer.vdim, batch_first=True)
    elif isinstance(layer, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
        name = _activation_name(layer.activation)
        if name not in _TORCH_ACTIVATION:
            raise ValueError(f"to_torch_layer: activation {name} has no torch.nn equivalent")
        kind = torch.nn.TransformerEncoderLayer if isinstance(layer, nn.TransformerEncoderLayer) \
            else torch.nn.TransformerDecoderLayer
        out = kind(layer.d_model, layer.nhead, dim_feedforward=layer.linear1.out_features,
                   dropout=layer.dropout.p, activation=_TORCH_ACTIVATION[name],
                   layer_norm_eps=layer.norm1.eps, batch_first=True, norm_first=layer.norm_first,
                   bias=layer.linear1.bias is not None)
    else:
        raise TypeError(f"to_torch_layer: expected a MultiheadAttention or Transformer layer, "
                        f"not {type(layer).__name__} (use to_torch for any module)")
    out = out.to(torch.from_numpy(np.zeros(0, dtype=dtype)).dtype)
    out.load_state_dict(state_dict_to_torch(layer.state_dict(), layout="torch.nn"))
    check_same_config(layer, out)
    out.train(layer.training)
    return out


def from_torch_layer(torch_layer: torch.nn.Module, layer: Any) -> Any:
    """Copy the weights of a torch.nn MultiheadAttention / Transformer layer into a minigrad
    layer of the same configuration (checked first: ValueError on any difference)."""
    check_same_config(layer, torch_layer)
    layer.load_state_dict(state_dict_from_torch(torch_layer.state_dict(), layer))
    return layer
