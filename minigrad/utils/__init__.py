"""minigrad.utils, as torch.utils: `minigrad.utils.data` (datasets, samplers, the DataLoader)."""

from . import data

__all__ = ["data"]
