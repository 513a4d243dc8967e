"""to_torch of models using F.pad (every mode), nn.GroupNorm and nn.Bilinear computes what
minigrad computes: outputs and every gradient, at the example's batch size and another."""

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import numpy as np  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402
import minigrad.nn.functional as F  # noqa: E402
from minigrad.export import to_torch  # noqa: E402


class PadNormBilinear(nn.Module):
    """(B, 4, 5) -> pads of every mode -> GroupNorm -> Bilinear of the result with itself."""

    def __init__(self):
        self.norm = nn.GroupNorm(2, 4)
        self.pair = nn.Bilinear(9, 9, 3)

    def forward(self, x):
        y = F.pad(x, (2, 1), mode="reflect")  # (B, 4, 8)
        y = F.pad(y, (-1, 1), value=0.5)  # (B, 4, 8): crop one, pad one
        y = F.pad(y, (1, 0), mode="replicate")  # (B, 4, 9)
        y = F.pad(y.unsqueeze(1), (1, 1, 0, 0), mode="circular")[:, 0, :, 1:-1]  # (B, 4, 9)
        y = self.norm(y)
        return self.pair(y, y.tanh())  # (B, 4, 3)


def test_pad_group_norm_bilinear_export_equals_minigrad():
    mg.manual_seed(0)
    model = PadNormBilinear().double()
    rng = np.random.default_rng(0)
    for p in model.norm.parameters():  # off ones and zeros, so their gradients matter
        p.data = rng.uniform(0.5, 1.5, p.shape)
    exported = to_torch(model, rng.standard_normal((2, 4, 5)))
    assert not exported.dynamic
    assert list(exported.state_dict()) == list(model.state_dict()) == [
        "norm.weight", "norm.bias", "pair.weight", "pair.bias"]
    for B in (2, 3):
        model.zero_grad()
        exported.zero_grad()
        a = rng.standard_normal((B, 4, 5))
        x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        out, tout = model(x), exported(t)
        np.testing.assert_allclose(tout.detach().numpy(), out.numpy(), rtol=1e-10, atol=1e-10)
        g = rng.standard_normal(out.shape)
        out.backward(g)
        tout.backward(torch.from_numpy(g))
        np.testing.assert_allclose(t.grad.numpy(), x.grad, rtol=1e-10, atol=1e-10)
        tparams = dict(exported.named_parameters())
        for name, p in model.named_parameters():
            np.testing.assert_allclose(tparams[name].grad.numpy(), p.grad, rtol=1e-10, atol=1e-10,
                                       err_msg=name)
