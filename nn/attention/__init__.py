"""Attention: the layers (multi-head scaled dot-product, additive and bilinear), the functional
forms, the masks, the kernels with their hand-derived backward, the KV cache, the recorder of
attention maps and the drawing of the kernels. This module is the package's face; the code is
in its modules, each holding one concept:

    layers.py       MultiheadAttention, AdditiveAttention, BilinearAttention
    functional.py   attention_reference (read it first), scaled_dot_product_attention,
                    tiled_attention, packed_self_attention (re-exported by minigrad.nn.functional)
    masks.py        causal_mask, padding_mask, masked_softmax, PyTorch's masks in this rule
    dispatch.py     which kernel runs (`use_tiled`)
    one_block.py    the one-block kernel: attention_forward / attention_backward, `Attention`
    tiled.py        the tiled kernel for long sequences: tiled_forward / tiled_backward,
                    `TiledAttention`; its block grid in tiles.py
    packed.py       q, k and v packed in one array: `PackedAttention`
    cache.py        KVCache, the keys and values of generation
    maps.py         record_attention, AttentionMaps
    drawing.py      how draw_graph(expand_fused=True) draws the kernels
    helpers.py      the private names the modules share, each defined once

The kernels import only dispatch, masks, the helpers, the cache, the tile grid and each other,
never the layers or the functional forms, and a private name goes from one module to another
only through helpers.py (tests/nn/test_attention_package.py).

The mask rule, for every mask in minigrad:
    * A boolean mask means **True = may attend**: query i may look at key j where
      mask[..., i, j] is True (the lecture's `scores.masked_fill(~mask, -inf)`, and PyTorch's
      `F.scaled_dot_product_attention` rule).
    * It broadcasts to the weights' shape (B, H, Tq, Tk) (to (B, Tq, Tk) for the single-head
      layers): a (Tq, Tk) mask is shared by the whole batch, a (B, 1, 1, Tk) mask from
      `padding_mask` hides padded keys of each sequence.
    * A float mask is added to the scores (0 = keep, -inf = forbid, anything else biases).
    * Masking happens before the softmax, as -inf, so the remaining weights of a row still
      sum to 1; a row with nothing to attend to gives weights 0 and output 0, never NaN.
    * `is_causal=True` builds the causal mask tril(ones(Tq, Tk)) (aligned top-left, as in
      PyTorch) and combines it with any mask given: a key must pass both.
"""

from . import drawing
from .cache import KVCache
from .functional import attention_reference
from .layers import AdditiveAttention, BilinearAttention, MultiheadAttention
from .masks import (
    causal_mask,
    check_float_mask,
    combine_masks,
    from_torch_masks,
    mask_dtype_error,
    masked_softmax,
    padding_mask,
)

__all__ = [
    "AdditiveAttention", "BilinearAttention", "KVCache", "MultiheadAttention", "attention_reference",
    "causal_mask", "check_float_mask", "combine_masks", "from_torch_masks", "mask_dtype_error",
    "masked_softmax", "padding_mask",
]

drawing.register_attention_drawings()  # draw_graph(expand_fused=True) draws attention as its steps
