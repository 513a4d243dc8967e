"""Running PyTorch programs on minigrad: `minigrad run script.py` runs a program written for
PyTorch with `import torch` (and torch.nn, torch.nn.functional, torch.optim, torch.utils.data,
...) resolving to minigrad for that run only.

binding.py binds the names (an import hook, and a face per module that names a missing name
with the file and line that used it), check.py lists the torch names a script uses that minigrad
lacks without running it, program.py runs a script (and writes the explorer page of its first
backward pass), cli.py adds the `run` command.
"""

from .binding import TORCH_MODULES, MissingModule, MissingName, bound_to_minigrad
from .check import Use, check_file, check_source
from .program import run_program

__all__ = ["TORCH_MODULES", "MissingModule", "MissingName", "Use", "bound_to_minigrad", "check_file",
           "check_source", "run_program"]
