"""erf for numpy arrays: the kernel lives in the core (`minigrad.ops.erf`), where the `erf`
op uses it too; the fused GELU here imports it from this name."""

from minigrad.ops.erf import erf, erf_float32  # noqa: F401
