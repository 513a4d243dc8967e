"""A PyTorch program, as a course would write it: an MLP with layer norm and GELU, its weights
read from a .npz file, one forward and backward pass in float64; prints the loss and the
gradients as JSON. tests/run/ runs it with torch and under `minigrad run`."""

import json
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, weights):
        super().__init__()
        self.w1 = nn.Parameter(torch.tensor(weights["w1"]))
        self.b1 = nn.Parameter(torch.tensor(weights["b1"]))
        self.w2 = nn.Parameter(torch.tensor(weights["w2"]))
        self.norm = nn.LayerNorm(weights["w1"].shape[0]).to(torch.float64)

    def forward(self, x):
        h = F.gelu(self.norm(F.linear(x, self.w1, self.b1)))
        return h @ self.w2.T


weights = dict(np.load(sys.argv[1]))
model = MLP(weights)
x = torch.tensor(weights["x"], requires_grad=True)
loss = F.cross_entropy(model(x), torch.tensor(weights["y"]), label_smoothing=0.1)
loss.backward()
grads = {name: np.asarray(p.grad).tolist() for name, p in model.named_parameters()}
print(json.dumps({"loss": float(loss.item()), "grads": grads, "x_grad": np.asarray(x.grad).tolist()}))
