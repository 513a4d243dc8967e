"""Exercise 14 · encoder_layer: the post-norm layer, against nn.TransformerEncoderLayer."""

from __future__ import annotations

from typing import Any

import numpy as np

import minigrad as mg
import minigrad.nn as nn
from minigrad.tensor import Tensor

from .catalogue import Task
from .diagnose import Mistake, close
from .grader import Check, Fail
from .gradients import Case, backward_of, forward_detail, gradient_checks

D_MODEL, NHEAD, FF = 4, 2, 6


def mistakes_of(ref: nn.TransformerEncoderLayer, x: Tensor, mask: Any) -> list[tuple[str, Tensor]]:
    """The outputs of the classic layer mistakes, built from the reference layer's own parts."""
    def attn(t: Tensor, m: Any = mask) -> Tensor:
        return ref._self_attention(t, m, False)

    def mlp(t: Tensor) -> Tensor:
        return ref.linear2(ref.linear1(t).relu())

    pre = x + attn(ref.norm1(x))
    pre = pre + mlp(ref.norm2(pre))
    z = ref.norm1(x + attn(x))
    z_no_res = ref.norm1(attn(x))
    out = [("pre_norm_not_post_norm", pre),
           ("missing_residual", ref.norm2(z_no_res + mlp(z_no_res))),
           ("missing_residual", ref.norm2(mlp(z))),
           ("encoder_no_relu", ref.norm2(z + ref.linear2(ref.linear1(z)))),
           ("encoder_norm_used_twice", ref.norm1(z + mlp(z))),
           ("encoder_norm_used_twice", ref.norm2(ref.norm2(x + attn(x)) + mlp(ref.norm2(x + attn(x)))))]
    if mask is not None:
        z_all = ref.norm1(x + attn(x, None))
        out.append(("encoder_mask_ignored", ref.norm2(z_all + mlp(z_all))))
    return out


def codes_for(got: np.ndarray, ref: nn.TransformerEncoderLayer, x: Tensor, mask: Any) -> list[str]:
    """The code of the first mistake whose output is the student's (none when no prediction fits)."""
    with mg.no_grad():
        return [c for c, p in mistakes_of(ref, x, mask) if close(got, p.data)][:1]


def checks(sub: Any) -> list[Check]:
    def pair(seed: int) -> tuple[Any, nn.TransformerEncoderLayer]:
        """The student's layer and the library's with the same float64 weights, dropout off. The
        norms get random weights and biases, so that one norm used for the other shows."""
        mg.manual_seed(seed)
        mine = sub.EncoderLayer(D_MODEL, NHEAD, FF).double()
        state = mine.state_dict()
        norms = np.random.default_rng(seed)
        for name in ("norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"):
            if name in state:
                centre = 1.0 if name.endswith("weight") else 0.0
                state[name] = norms.normal(centre, 0.5, np.shape(state[name]))
        mine.load_state_dict(state)
        ref = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0).double()
        ref.load_state_dict(mine.state_dict())
        return mine, ref

    rng = np.random.default_rng(13)

    def forward() -> str:
        mine, ref = pair(0)
        for mask in (None, np.tri(3, dtype=bool)):
            x = Tensor(rng.normal(0, 1, (1, 3, D_MODEL)))
            m = None if mask is None else Tensor(mask)
            got = mine(x, mask=m)
            want = ref(x, attend_mask=m)
            if not isinstance(got, Tensor) or got.shape != want.shape:
                raise Fail(f"the output should be a Tensor of shape {want.shape}")
            if not close(got.data, want.data):
                label = "causal mask" if mask is not None else "no mask"
                raise Fail(f"{label}: the output differs from nn.TransformerEncoderLayer's (post-norm) with "
                           "the same weights", diagnosis=codes_for(got.data, ref, x, m),
                           detail=forward_detail(f"x (1, 3, {D_MODEL}), {label}", {"x": x.data}, got.data,
                                                 want.data))
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
        unused = [name for name, p in mine.named_parameters() if p.grad is None]
        if unused:
            them = "it" if len(unused) == 1 else "them"
            raise Fail(f"no gradient reaches {', '.join(unused)}: nothing in the forward uses {them}",
                       diagnosis=codes_for(mine(x).data, ref, x, None))
        for name, p in mine.named_parameters():
            if not close(p.grad, theirs[name].grad):
                raise Fail(f"the gradient of {name} differs from the reference's",
                           diagnosis=codes_for(mine(x).data, ref, x, None))
        return f"{len(theirs)} parameters"

    layer = {}

    def student(x: Tensor, mask: Any = None) -> Tensor:
        if "mine" not in layer:
            layer["mine"], layer["ref"] = pair(3)
        return layer["mine"](x, mask=mask)

    def reference(x: Tensor, mask: Any = None) -> Tensor:
        student(x)  # builds the pair once
        return layer["ref"](x, attend_mask=mask)

    def mistakes(case: Case, g: np.ndarray, ref_grads: dict) -> list[Mistake]:
        """The x-gradients of the layer mistakes, through the reference layer's own parts."""
        mask = case.options.get("mask")
        out = []
        for i, (code, _) in enumerate(mistakes_of(layer["ref"], Tensor(case.inputs["x"]), mask)):
            def variant(x: Tensor, mask: Any = None, _i: int = i) -> Tensor:
                return mistakes_of(layer["ref"], x, mask)[_i][1]
            out.append(Mistake(code, backward_of(variant, case, g).grads))
        return out

    worked = Case({"x": rng.normal(0, 1, (1, 3, D_MODEL))}, label="x (1, 3, 4)")
    causal = {"mask": Tensor(np.tri(2, dtype=bool))}
    cases = [Case({"x": rng.normal(0, 1, (2, 2, D_MODEL))}, causal, "x (2, 2, 4), causal mask")]
    return [("forward matches nn.TransformerEncoderLayer (post-norm)", forward),
            ("permutation equivariance without positions", equivariance),
            ("parameter gradients match the reference", parameter_grads),
            *gradient_checks(student, reference, worked, cases, mistakes=mistakes)]


TASK = Task("encoder_layer", "the post-norm encoder layer, composed from the pieces",
            ("EncoderLayer",), checks)
