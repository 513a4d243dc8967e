"""Exercise 13 · encoder_layer: the post-norm layer, against nn.TransformerEncoderLayer."""

from __future__ import annotations

from typing import Any

import numpy as np

import minigrad as mg
import minigrad.nn as nn
from minigrad.tensor import Tensor

from .catalogue import Task
from .diagnose import close
from .grader import Check, Fail
from .gradients import Case, gradient_checks

D_MODEL, NHEAD, FF = 4, 2, 6


def mistakes_of(ref: nn.TransformerEncoderLayer, x: Tensor, mask: Any) -> list[tuple[str, np.ndarray]]:
    """The outputs of the classic layer mistakes, built from the reference layer's own parts."""
    def attn(t: Tensor) -> Tensor:
        return ref._self_attention(t, mask, False)

    pre = x + attn(ref.norm1(x))
    pre = pre + ref._mlp(ref.norm2(pre))
    z = ref.norm1(x + attn(x))
    z_no_res = ref.norm1(attn(x))
    return [("pre_norm_not_post_norm", pre.data),
            ("missing_residual", ref.norm2(z_no_res + ref._mlp(z_no_res)).data),
            ("missing_residual", ref.norm2(ref._mlp(z)).data)]


def checks(sub: Any) -> list[Check]:
    def pair(seed: int) -> tuple[Any, nn.TransformerEncoderLayer]:
        """The student's layer and the library's with the same float64 weights, dropout off."""
        mg.manual_seed(seed)
        mine = sub.EncoderLayer(D_MODEL, NHEAD, FF).double()
        ref = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0).double()
        ref.load_state_dict(mine.state_dict())
        return mine, ref

    rng = np.random.default_rng(13)

    def forward() -> str:
        mine, ref = pair(0)
        for mask in (None, np.tri(5, dtype=bool)):
            x = Tensor(rng.normal(0, 1, (2, 5, D_MODEL)))
            m = None if mask is None else Tensor(mask)
            got = mine(x, mask=m)
            want = ref(x, attend_mask=m)
            if not isinstance(got, Tensor) or got.shape != want.shape:
                raise Fail(f"the output should be a Tensor of shape {want.shape}")
            if not close(got.data, want.data):
                codes = [c for c, p in mistakes_of(ref, x, m) if close(got.data, p)][:1]
                raise Fail(f"{'causal mask' if mask is not None else 'no mask'}: the output differs from "
                           "nn.TransformerEncoderLayer's (post-norm) with the same weights", diagnosis=codes)
        return "with and without a causal mask"

    def equivariance() -> None:
        mine, _ = pair(1)
        x = rng.normal(0, 1, (1, 5, D_MODEL))
        perm = np.random.default_rng(0).permutation(5)
        if not np.allclose(mine(Tensor(x[:, perm])).data, mine(Tensor(x)).data[:, perm]):
            raise Fail("without positions, reordering the tokens should only reorder the outputs")

    def parameter_grads() -> str:
        mine, ref = pair(2)
        x = Tensor(rng.normal(0, 1, (2, 3, D_MODEL)))
        g = rng.normal(0, 1, (2, 3, D_MODEL))
        mine(x).backward(g)
        ref(x).backward(g)
        theirs = dict(ref.named_parameters())
        for name, p in mine.named_parameters():
            if p.grad is None or not close(p.grad, theirs[name].grad):
                raise Fail(f"the gradient of {name} differs from the reference's")
        return f"{len(theirs)} parameters"

    layer = {}

    def student(x: Tensor, mask: Any = None) -> Tensor:
        if "mine" not in layer:
            layer["mine"], layer["ref"] = pair(3)
        return layer["mine"](x, mask=mask)

    def reference(x: Tensor, mask: Any = None) -> Tensor:
        student(x)  # builds the pair once
        return layer["ref"](x, attend_mask=mask)

    worked = Case({"x": rng.normal(0, 1, (1, 3, D_MODEL))}, label="x (1, 3, 4)")
    causal = {"mask": Tensor(np.tri(2, dtype=bool))}
    cases = [Case({"x": rng.normal(0, 1, (2, 2, D_MODEL))}, causal, "x (2, 2, 4), causal mask")]
    return [("forward matches nn.TransformerEncoderLayer (post-norm)", forward),
            ("permutation equivariance without positions", equivariance),
            ("parameter gradients match the reference", parameter_grads),
            *gradient_checks(student, reference, worked, cases)]


TASK = Task("encoder_layer", "the post-norm encoder layer, composed from the pieces",
            ("EncoderLayer",), checks)
