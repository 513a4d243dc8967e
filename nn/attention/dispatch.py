"""Which attention kernel runs: the one-block kernel (one_block.py) or, for long sequences, the
tiled one (tiled.py). `use_tiled` decides, for `scaled_dot_product_attention` (functional.py) and
`PackedAttention` (packed.py) alike.
"""

from __future__ import annotations

from .tiled import BLOCK_Q

# scaled_dot_product_attention takes the tiled kernel from this many scores (B * H * Tq * Tk)
# on, when Tq and Tk are both at least TILED_MIN_LENGTH: below that A fits in cache and the
# one-block kernel is faster. Measured on one thread with D = 32 (forward + backward, tiled /
# untiled time): causal 0.80 at (B, H, T) = (1, 4, 256), 0.86 at (2, 4, 192), 1.03 at (1, 4, 192);
# no mask 0.91 at (1, 4, 256). Within one block (T <= 128) the tiled kernel skips nothing and is
# slower whatever the batch: 1.11 at (4, 4, 128), 1.09 at (16, 4, 64).
TILED_MIN_SCORES = 2**18
TILED_MIN_LENGTH = BLOCK_Q + 1


def use_tiled(scores: int, tq: int, tk: int, dropout_p: float, need_weights: bool) -> bool:
    """Whether to take the tiled kernel: long enough, and nothing needs the weights themselves
    (dropout, need_weights, an open `nn.record_attention`: the caller says so in need_weights)."""
    return (scores >= TILED_MIN_SCORES and min(tq, tk) >= TILED_MIN_LENGTH and dropout_p == 0
            and not need_weights)
