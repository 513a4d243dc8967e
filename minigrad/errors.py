"""ShapeError: the error of a tensor argument whose shape or size does not fit the op; RangeError
and ArgumentError, of an index or an argument's value outside what the op allows.

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


class RangeError(IndexError, ValueError, RuntimeError):
    """An index or class id outside the range the op allows (gather's index past the dimension,
    a target class id past the classes, argmax over nothing): torch raises IndexError for some
    and RuntimeError for others, minigrad raised IndexError or ValueError; a RangeError is all
    three."""


class ArgumentError(ValueError, RuntimeError):
    """A value argument the op does not allow (arange's step 0, randint with low >= high, a
    negative layer size, clamp without bounds): a ValueError, as minigrad raised it, and the
    RuntimeError torch raises."""
