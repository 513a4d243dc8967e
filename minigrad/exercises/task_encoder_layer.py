"""Exercise 14 · encoder_layer: the post-norm layer, against nn.TransformerEncoderLayer."""

from __future__ import annotations

from typing import Any

import numpy as np

import minigrad as mg
import minigrad.nn as nn
from minigrad.tensor import Tensor

from .catalogue import Task
from .diagnose import Mistake, close
from .grader import Check
from .gradients import Case, backward_of, forward_detail, gradient_checks
from .transcript import Fail, run_student

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
        return [c for c, p in mistakes_of(ref, x, mask) if close(got, p._data)][:1]


def reference_of(state: dict[str, np.ndarray], seed: int) -> nn.TransformerEncoderLayer:
    """The library's layer (float64, dropout off) with the weights of the student's layer."""
    mg.manual_seed(seed)  # (its own draws are all overwritten: a strict load sets every one)
    ref = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0).double()
    ref.load_state_dict(state)
    return ref


def checks(sub: Any) -> list[Check]:
    def layer_of(seed: int) -> Any:
        """The student's layer in float64, its norms given random weights and biases, so that one
        norm used for the other shows (inside run_student() only: the same layer for a seed)."""
        mg.manual_seed(seed)
        mine = sub.EncoderLayer(D_MODEL, NHEAD, FF).double()
        state = mine.state_dict()
        norms = np.random.default_rng(seed)
        for name in ("norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"):
            if name in state:
                centre = 1.0 if name.endswith("weight") else 0.0
                state[name] = norms.normal(centre, 0.5, np.shape(state[name]))
        mine.load_state_dict(state)
        return mine

    def state_of(mine: Any) -> dict[str, np.ndarray]:
        return {str(k): np.asarray(v) for k, v in mine.state_dict().items()}

    def output(out: Any) -> np.ndarray | None:
        return np.asarray(out._data) if isinstance(out, Tensor) else None

    rng = np.random.default_rng(13)

    def forward_of(x: np.ndarray, mask: np.ndarray | None) -> dict:
        mine = layer_of(0)
        state = state_of(mine)
        out = mine(Tensor(x.copy()), mask=None if mask is None else Tensor(mask))
        return {"state": state, "out": output(out)}

    def forward() -> str:
        for mask in (None, np.tri(3, dtype=bool)):
            x = rng.normal(0, 1, (1, 3, D_MODEL))
            r = run_student("forward", lambda x=x, mask=mask: forward_of(x, mask))
            ref, m = reference_of(r["state"], 0), None if mask is None else Tensor(mask)
            got, want = r["out"], ref(Tensor(x), attend_mask=m)
            if got is None or got.shape != want.shape:
                raise Fail(f"the output should be a Tensor of shape {want.shape}")
            if not close(got, want._data):
                label = "causal mask" if mask is not None else "no mask"
                raise Fail(f"{label}: the output differs from nn.TransformerEncoderLayer's (post-norm) with "
                           "the same weights", diagnosis=codes_for(got, ref, Tensor(x), m),
                           detail=forward_detail(f"x (1, 3, {D_MODEL}), {label}", {"x": x}, got, want._data))
        return "with and without a causal mask"

    def permuted(x: np.ndarray, perm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mine = layer_of(1)
        return np.asarray(mine(Tensor(x[:, perm]))._data), np.asarray(mine(Tensor(x.copy()))._data)

    def equivariance() -> None:
        x = rng.normal(0, 1, (1, 5, D_MODEL))
        perm = np.random.default_rng(0).permutation(5)
        of_permuted, of_x = run_student("forward", lambda: permuted(x, perm))
        if not np.allclose(of_permuted, of_x[:, perm]):
            raise Fail("without positions, reordering the tokens should only reorder the outputs")

    def grads_of(x: np.ndarray, g: np.ndarray) -> dict:
        mine = layer_of(2)
        state = state_of(mine)
        out = mine(Tensor(x.copy()))
        data = output(out)
        out.backward(g.copy())
        grads = {str(n): None if p._grad is None else np.asarray(p._grad) for n, p in mine.named_parameters()}
        return {"state": state, "out": data, "grads": grads}

    def parameter_grads() -> str:
        x, g = rng.normal(0, 1, (2, 3, D_MODEL)), rng.normal(0, 1, (2, 3, D_MODEL))
        r = run_student("backward", lambda: grads_of(x, g))
        ref = reference_of(r["state"], 2)
        ref(Tensor(x)).backward(g)
        theirs = dict(ref.named_parameters())
        unused = [name for name, grad in r["grads"].items() if grad is None]
        if unused:
            them = "it" if len(unused) == 1 else "them"
            raise Fail(f"no gradient reaches {', '.join(unused)}: nothing in the forward uses {them}",
                       diagnosis=codes_for(r["out"], ref, Tensor(x), None))
        for name, grad in r["grads"].items():
            if not close(grad, theirs[name]._grad):
                raise Fail(f"the gradient of {name} differs from the reference's",
                           diagnosis=codes_for(r["out"], ref, Tensor(x), None))
        return f"{len(theirs)} parameters"

    # The gradient checks: the student's layer of seed 3 (built again in each call, in the
    # student's process) against the library's with its weights (kept here, as plain data).
    layer: dict[str, nn.TransformerEncoderLayer] = {}

    def student(x: Tensor, mask: Any = None) -> Tensor:  # (inside run_student() only)
        return layer_of(3)(x, mask=mask)

    def ref_layer() -> nn.TransformerEncoderLayer:
        if "ref" not in layer:
            layer["ref"] = reference_of(run_student("state_dict", lambda: state_of(layer_of(3))), 3)
        return layer["ref"]

    def reference(x: Tensor, mask: Any = None) -> Tensor:
        return ref_layer()(x, attend_mask=mask)

    def mistakes(case: Case, g: np.ndarray, ref_grads: dict) -> list[Mistake]:
        """The x-gradients of the layer mistakes, through the reference layer's own parts."""
        mask = case.options.get("mask")
        out = []
        for i, (code, _) in enumerate(mistakes_of(ref_layer(), Tensor(case.inputs["x"]), mask)):
            def variant(x: Tensor, mask: Any = None, _i: int = i) -> Tensor:
                return mistakes_of(ref_layer(), x, mask)[_i][1]
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
            ("EncoderLayer",), checks,
            library=("TransformerEncoderLayer", "TransformerEncoder", "_Block"))
