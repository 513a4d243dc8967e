"""The line between the checks and a student's code: `run_student(label, fn)`.

A check runs the student's code only inside `run_student(label, fn)`: `fn` calls the student's
objects on inputs the check chose and returns plain data (arrays, numbers, strings, None, and
tuples, lists and dicts of them), never an object of the student's. Grading a file is then two
passes over the same checks, in two processes:

    record   the student's process (isolation's child): each fn runs, and what it returned, or
             how it failed, is written to the transcript;
    replay   the grading process: no fn runs; each `run_student` call takes the transcript's entry
             for the same place (the same check, the same call in it), so every comparison,
             diagnosis and score is computed here, from the checks' own inputs and references,
             whatever the student's code did in its own process.

A notebook's objects are graded `live`: fn runs and its result is used, through the same
encoding, so a check behaves alike in the three modes.

What the student's process can still do is claim outputs its code did not compute; the claim
is judged here against the reference on inputs chosen here, so it earns marks only by being
the right answer. A failure it records (a Fail raised in fn, an exception of the student's)
counts as it is: it can only lower that student's own score.

`Fail` (a failed check) lives here too, and the wording of an exception raised in the
student's code (where_raised), which the student's process writes into the transcript.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, TypeVar

import numpy as np

from .diagnose import dot_t_on_batched
from .diagnoses import HINTS

T = TypeVar("T")
ARRAY_KINDS = "biufc"  # bool, int, unsigned, float, complex: arrays made of bytes alone
MAGIC = b"minigrad transcript 1\n"


class Fail(Exception):
    """A failed check: what is wrong, a worked case to look at, and the diagnosis codes."""

    def __init__(self, message: str, detail: str = "", diagnosis: list[str] | None = None):
        super().__init__(message)
        self.message, self.detail, self.diagnosis = message, detail, list(diagnosis or [])


class StudentRaised(Exception):
    """The student's code raised inside `run_student()`: the words run_checks reports it with."""

    def __init__(self, message: str, diagnosis: list[str] | None = None):
        super().__init__(message)
        self.message, self.diagnosis = message, list(diagnosis or [])


class StudentNotImplemented(NotImplementedError):
    """The student's code raised NotImplementedError inside `run_student()`, at `where`."""

    def __init__(self, where: str):
        super().__init__(where)
        self.where = where


# ----------------------------------------------------------------------------- wording


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: " + " ".join(str(exc).split())


def where_raised(exc: BaseException, source: str | None) -> str:
    """'file.py, line N' of the deepest frame in the student's file (else the deepest frame,
    unless that is inside minigrad: an engine error, such as a gradient of the wrong shape,
    names the op itself, and the library's line would only distract)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    mine = [f for f in frames if source and os.path.abspath(f.filename) == os.path.abspath(source)]
    if not mine and _in_library(frames[-1].filename):
        return ""
    f = (mine or frames)[-1]
    return f"{os.path.basename(f.filename)}, line {f.lineno}" + (f" ({f.line})" if f.line else "")


def _in_library(filename: str) -> bool:
    import minigrad
    import minigrad.nn  # (nn sits outside the minigrad folder in a checkout)

    roots = {os.path.dirname(os.path.abspath(m.__file__)) for m in (minigrad, minigrad.nn)}
    return any(os.path.abspath(filename).startswith(r + os.sep) for r in roots)


def student_frames(exc: BaseException, source: str | None) -> list[dict]:
    """The local variables of each frame `exc` passed through in the student's file (without a
    file, a notebook's objects: the frames outside minigrad and its exercises package)."""
    here = os.path.dirname(os.path.abspath(__file__))
    out, tb = [], exc.__traceback__
    while tb is not None:
        name = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if (name == os.path.abspath(source) if source else
                not (_in_library(name) or name.startswith(here + os.sep))):
            out.append(tb.tb_frame.f_locals)
        tb = tb.tb_next
    return out


def describe_raised(exc: Exception, source: str | None) -> StudentRaised:
    """What the student's code raised and where; a matmul error that `.T` on a batched array
    explains is named (diagnose.dot_t_on_batched)."""
    where = where_raised(exc, source)
    message = f"raised {one_line(exc)}" + (f" ({where})" if where else "")
    codes = ["dot_t_on_batched"] if dot_t_on_batched(exc, student_frames(exc, source)) else []
    return StudentRaised(message, codes)


# ----------------------------------------------------------------------------- encoding


def encode(value: Any, arrays: list[np.ndarray]) -> Any:
    """`value` as JSON with its arrays (copied) appended to `arrays`; TypeError for anything
    that is not plain data."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        a = np.array(value)  # a copy: later changes by the student's code do not reach it
        if a.dtype.kind not in ARRAY_KINDS:
            raise TypeError(f"an array of dtype {a.dtype}")
        arrays.append(a)
        return {"array": len(arrays) - 1, "scalar": isinstance(value, np.generic)}
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple": [encode(v, arrays) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": [[k, encode(v, arrays)] for k, v in value.items()]}
    raise TypeError(f"a {type(value).__name__} (not plain data: arrays, numbers, strings, None, and "
                    "lists, tuples and dicts of them)")


def decode(data: Any, arrays: list[np.ndarray]) -> Any:
    """The value `encode` wrote (ValueError, KeyError, IndexError or TypeError if malformed)."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if not isinstance(data, dict) or len(data) not in (1, 2):
        raise ValueError("not an encoded value")
    if "array" in data:
        a = arrays[data["array"]]
        return a[()] if data["scalar"] else a.copy()
    if "list" in data:
        return [decode(v, arrays) for v in data["list"]]
    if "tuple" in data:
        return tuple(decode(v, arrays) for v in data["tuple"])
    return {str(k): decode(v, arrays) for k, v in data["dict"]}


# ----------------------------------------------------------------------------- the transcript


@dataclass
class Transcript:
    """The entries of one file's grading, and where the checks are in it.

    An entry is a dict: `at` (the check's index in the run, -1 before the checks; the call's
    index in that check), `label`, `kind` ("value", "fail", "raised", "not_implemented") and
    what the kind needs. Arrays are kept aside, in `arrays`, referred to by index."""

    mode: str  # "live", "record" or "replay"
    path: str | None = None  # the student's file (for the words of an exception)
    entries: list[dict] = field(default_factory=list)
    arrays: list[np.ndarray] = field(default_factory=list)
    check: int = -1  # the check running now
    call: int = 0  # the run_student() calls so far in it
    inside: bool = False
    _by_place: dict | None = field(default=None, repr=False)

    def begin(self, check: int) -> None:
        self.check, self.call = check, 0

    def find(self, label: str) -> dict:
        """Replay: the entry of this place (a Fail if the student's process has none)."""
        at = [self.check, self.call]
        entry = self._index().get(tuple(at))
        if entry is None or entry.get("label") != label:
            raise Fail("your code's process gave no result for this step (it ended early, or it "
                       "changed numpy's or minigrad's settings, so the checks ran differently there)")
        return entry

    def _index(self) -> dict[tuple, dict]:
        if self._by_place is None:
            self._by_place = {tuple(e["at"]): e for e in self.entries
                              if isinstance(e, dict) and isinstance(e.get("at"), list)}
        return self._by_place

    def save(self, path: str) -> None:
        """Written by the student's process: a JSON head (the entries, and each array's dtype,
        shape and place), then the arrays' bytes, one after the other. Nothing in it is code:
        `load` builds arrays from numbers and bytes (no pickle, no eval)."""
        places, offset = [], 0
        for a in self.arrays:
            places.append([a.dtype.str, list(a.shape), offset])
            offset += a.nbytes
        head = json.dumps({"entries": self.entries, "arrays": places}).encode()
        with open(path, "wb") as f:
            f.write(MAGIC + len(head).to_bytes(8, "little") + head)
            for a in self.arrays:
                f.write(np.ascontiguousarray(a).tobytes())

    @classmethod
    def load(cls, path: str, student_path: str) -> Transcript:
        """A replay of the file `save` wrote (ValueError, and OSError, when it is not one)."""
        with open(path, "rb") as f:
            data = f.read()
        if not data.startswith(MAGIC):
            raise ValueError("not a transcript")
        start = len(MAGIC) + 8
        size = int.from_bytes(data[len(MAGIC):start], "little")
        head = json.loads(data[start:start + size].decode())
        body = memoryview(data)[start + size:]
        arrays = []
        for dtype, shape, offset in head["arrays"]:
            if not (isinstance(dtype, str) and re.fullmatch(r"[<>|=][biufc]\d{1,2}", dtype)
                    and isinstance(shape, list) and all(isinstance(n, int) and n >= 0 for n in shape)
                    and isinstance(offset, int) and offset >= 0):
                raise ValueError("not a transcript")
            count = math.prod(shape)
            if offset + count * np.dtype(dtype).itemsize > len(body):
                raise ValueError("not a transcript")
            arrays.append(np.frombuffer(body, dtype, count, offset).reshape(shape))
        if not isinstance(head["entries"], list):
            raise ValueError("not a transcript")
        return cls("replay", student_path, head["entries"], arrays)


_NOW = Transcript("live")


@contextlib.contextmanager
def transcript(t: Transcript) -> Iterator[Transcript]:
    """Grade inside the block in `t`'s mode."""
    global _NOW
    before, _NOW = _NOW, t
    try:
        yield t
    finally:
        _NOW = before


def begin_check(index: int) -> None:
    _NOW.begin(index)


def raised_here(exc: Exception) -> StudentRaised:
    """describe_raised for the file being graded (inside run_student(): an error to keep as data)."""
    return describe_raised(exc, _NOW.path)


def run_student(label: str, fn: Callable[[], T]) -> T:
    """fn() run on the student's code (live, record) or its recorded result (replay). What fn
    raises comes out the same in every mode: a Fail as it is, the student's exception as
    StudentRaised (StudentNotImplemented for NotImplementedError). MemoryError and what is not
    an Exception (SystemExit, KeyboardInterrupt) end the grading."""
    t = _NOW
    if t.inside:
        raise RuntimeError(f"run_student({label!r}) inside another run_student() call")
    if t.mode == "replay":
        entry = t.find(label)
        t.call += 1
        return _replayed(entry, t.arrays)
    at, t.inside = [t.check, t.call], True
    t.call += 1
    try:
        value = fn()
        arrays = t.arrays if t.mode == "record" else []  # (a record's indices are the transcript's)
        try:
            data = encode(value, arrays)
        except TypeError as e:  # e.g. an output array of Python objects
            raise Fail(f"your code gave {e} where the check expects numbers") from None
    except Fail as f:
        raise _keep(t, at, label, {"kind": "fail", "message": f.message, "detail": f.detail,
                                   "diagnosis": f.diagnosis, "fits": getattr(f, "fits", None)}) from None
    except StudentRaised as e:
        raise _keep(t, at, label, {"kind": "raised", "message": e.message,
                                   "diagnosis": e.diagnosis}) from None
    except NotImplementedError as e:
        raise _keep(t, at, label, {"kind": "not_implemented", "where": where_raised(e, t.path)}) from None
    except MemoryError:
        raise
    except Exception as e:
        r = describe_raised(e, t.path)
        raise _keep(t, at, label, {"kind": "raised", "message": r.message,
                                   "diagnosis": r.diagnosis}) from None
    finally:
        t.inside = False
    if t.mode == "record":
        t.entries.append({"at": at, "label": label, "kind": "value", "value": data})
    return decode(data, arrays)


def _keep(t: Transcript, at: list[int], label: str, entry: dict) -> Exception:
    """Record a failure (record mode) and give the exception every mode raises for it."""
    if t.mode == "record":
        t.entries.append({"at": at, "label": label, **entry})
    return _failure(entry)


def _replayed(entry: dict, arrays: list[np.ndarray]) -> Any:
    """An entry's value, or its failure raised; a malformed entry fails the check."""
    if entry.get("kind") != "value":
        raise _failure(entry)
    try:
        return decode(entry["value"], arrays)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        raise Fail("your code's process wrote a damaged result for this step") from None


def _failure(entry: dict) -> Exception:
    """The exception a failure entry stands for (a Fail when the entry is malformed)."""
    try:
        kind = entry["kind"]
        codes = [c for c in entry.get("diagnosis") or [] if isinstance(c, str) and c in HINTS]
        if kind == "fail":
            f = Fail(str(entry["message"]), str(entry.get("detail") or ""), codes)
            if entry.get("fits") is not None:
                f.fits = [c for c in entry["fits"] if c in HINTS]  # type: ignore[attr-defined]
            exc: Exception = f
        elif kind == "raised":
            exc = StudentRaised(str(entry["message"]), codes)
        elif kind == "not_implemented":
            exc = StudentNotImplemented(str(entry["where"]))
        else:
            raise ValueError(kind)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return Fail("your code's process wrote a damaged result for this step")
    return exc
