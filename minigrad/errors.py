"""ShapeError: the error of a tensor argument whose shape or size does not fit the op.

minigrad raised these as ValueError; torch raises them as RuntimeError (`torch.ones(2, 3) @
torch.ones(2, 3)`, a view of the wrong size, a cat of mismatched shapes). A ShapeError is both,
so code and tests written against either library catch it:

    try:
        a @ b
    except RuntimeError:        # as torch code writes it; `except ValueError` works too
        ...
"""


class ShapeError(ValueError, RuntimeError):
    """A shape, size or dimension that does not fit the op: a ValueError and a RuntimeError."""
