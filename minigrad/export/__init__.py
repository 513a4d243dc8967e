"""Export minigrad models to PyTorch, train them there, bring the weights back.

PyTorch is an optional extra (`pip install "minigrad[torch]"`); minigrad itself never imports
it. `to_torch` traces one forward pass of a minigrad module and returns a `torch.nn.Module`
that replays it with torch ops, under the same parameter names; the state dict functions move
weights both ways, also into torch.nn's own attention and transformer layers.
`minigrad.export.distributed.TorchEngine` is the engine of `minigrad train --engine torch`: it
plugs into minigrad's own training loop (`minigrad.models.train.train(..., engine=...)`).

Example:
    >>> import minigrad as mg, torch
    >>> from minigrad.export import to_torch, state_dict_from_torch
    >>> from minigrad.models.gpt import GPT, GPTConfig
    >>> gpt = GPT(GPTConfig(vocab_size=96, block_size=32, embed_dim=32, num_heads=2, num_layers=1))
    >>> idx = mg.randint(0, 96, (4, 32))
    >>> train = to_torch(gpt, idx, idx, method="loss")     # forward(idx, targets) -> scalar loss
    >>> opt = torch.optim.AdamW(train.parameters(), lr=1e-3)
    >>> loss = train(torch.randint(0, 96, (8, 32)), torch.randint(0, 96, (8, 32)))  # any batch size
    >>> loss.backward(); opt.step()
    >>> gpt.load_state_dict(state_dict_from_torch(train.state_dict(), gpt))      # back in minigrad
"""

try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover - the extra is missing
    raise ImportError('minigrad.export needs PyTorch: pip install "minigrad[torch]" '
                      '(or pip install -e ".[torch]" in a checkout)') from None

from .module import BatchDim, TorchExport, to_torch
from .ops import RANDOM_OPS, TORCH_OPS
from .state import (
    check_same_config,
    from_torch_layer,
    state_dict_from_torch,
    state_dict_to_torch,
    to_torch_layer,
)
from .trace import Program, TraceError, trace

__all__ = [
    "BatchDim", "Program", "RANDOM_OPS", "TORCH_OPS", "TorchExport", "TraceError", "check_same_config",
    "from_torch_layer", "state_dict_from_torch", "state_dict_to_torch", "to_torch", "to_torch_layer", "trace",
]
