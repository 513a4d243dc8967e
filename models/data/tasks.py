"""Synthetic sequence-to-sequence tasks, generated on the fly from a seed.

Each task maps a random source string to a target string: copy, reverse and sort a digit
string, add two numbers, and normalise a human-written date to ISO form. All tasks share
one character vocabulary (`SEQ_VOCAB`). Whether a source belongs to the train or the test
split is fixed by a hash of the source itself, so the two splits never overlap, whatever
the seed or the number of examples.
"""

from __future__ import annotations

import datetime
import hashlib
import string
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

MIN_DIGITS, MAX_DIGITS = 8, 12  # length range of copy / reverse / sort sources
MAX_ADD_DIGITS = 5  # each addend has 1 to 5 digits
FIRST_DATE, LAST_DATE = datetime.date(1950, 1, 1), datetime.date(2049, 12, 31)
TEST_FRACTION = 0.1

# English names written out: calendar.month_name and day_name follow the process locale,
# and a dataset must not change when some library calls locale.setlocale.
MONTHS = tuple(
    "january february march april may june july august september october november december".split()
)
WEEKDAYS = tuple("monday tuesday wednesday thursday friday saturday sunday".split())


class TaskTokenizer:
    """Characters of the synthetic tasks plus PAD=0, BOS=1, EOS=2."""

    SPECIAL_TOKENS = ("[PAD]", "[BOS]", "[EOS]")
    CHARS = string.digits + string.ascii_lowercase + " ,+-/"
    pad_id, bos_id, eos_id = range(3)

    def __init__(self) -> None:
        self.tokens = list(self.SPECIAL_TOKENS) + list(self.CHARS)
        self._ids = {c: i for i, c in enumerate(self.tokens)}

    @property
    def vocab_size(self) -> int:
        """Number of tokens, special tokens included."""
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        """Ids of the characters of `text` (no BOS/EOS added)."""
        unknown = sorted(set(text) - set(self.CHARS))
        if unknown:
            raise ValueError(f"TaskTokenizer.encode: characters not in the vocabulary: {unknown}")
        return [self._ids[c] for c in text]

    def decode(self, ids: Sequence[int]) -> str:
        """Characters of `ids`, stopping at the first EOS and skipping PAD and BOS."""
        out = []
        for i in map(int, ids):
            if i == self.eos_id:
                break
            if not 0 <= i < len(self.tokens):
                raise ValueError(f"TaskTokenizer.decode: id {i} outside [0, {len(self.tokens)})")
            if i > self.eos_id:
                out.append(self.tokens[i])
        return "".join(out)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description (for checkpoints)."""
        return {"kind": "task", "tokens": list(self.tokens)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskTokenizer:
        """Check that `d` describes this vocabulary and return a tokenizer for it."""
        tok = cls()
        if d.get("kind") != "task" or d.get("tokens") != tok.tokens:
            raise ValueError("TaskTokenizer.from_dict: saved vocabulary differs from this version's")
        return tok


SEQ_VOCAB = TaskTokenizer()


def _digits(rng: np.random.Generator, lo: int, hi: int) -> str:
    return "".join(map(str, rng.integers(0, 10, size=rng.integers(lo, hi + 1))))


def copy_task(rng: np.random.Generator) -> tuple[str, str]:
    """'40182339' -> '40182339'."""
    s = _digits(rng, MIN_DIGITS, MAX_DIGITS)
    return s, s


def reverse_task(rng: np.random.Generator) -> tuple[str, str]:
    """'40182339' -> '93328104'."""
    s = _digits(rng, MIN_DIGITS, MAX_DIGITS)
    return s, s[::-1]


def sort_task(rng: np.random.Generator) -> tuple[str, str]:
    """'40182339' -> '01233489'."""
    s = _digits(rng, MIN_DIGITS, MAX_DIGITS)
    return s, "".join(sorted(s))


def addition_task(rng: np.random.Generator) -> tuple[str, str]:
    """'123+4567' -> '4690'.

    Each addend gets a uniform number of digits (1 to 5), then a uniform value, so short
    numbers are as common as long ones.
    """
    a, b = (_number(rng) for _ in range(2))
    return f"{a}+{b}", str(a + b)


def _number(rng: np.random.Generator) -> int:
    n = int(rng.integers(1, MAX_ADD_DIGITS + 1))
    return int(rng.integers(0 if n == 1 else 10 ** (n - 1), 10**n))


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


# Every format names the month or puts the year first, so no date string is ambiguous.
DATE_FORMATS = (
    "{day} {month} {year}",  # 3 march 1987
    "{month} {day}, {year}",  # march 3, 1987
    "{weekday} {day} {month} {year}",  # tuesday 3 march 1987
    "{weekday}, {month} {day}, {year}",  # tuesday, march 3, 1987
    "{day} {mon} {year}",  # 3 mar 1987
    "{mon} {day}, {year}",  # mar 3, 1987
    "{nth} {month} {year}",  # 3rd march 1987
    "the {nth} of {month} {year}",  # the 3rd of march 1987
    "{year}/{mm}/{dd}",  # 1987/03/03 (year first, so always year/month/day)
    "{year}/{m}/{day}",  # 1987/3/3
)


def format_date(date: datetime.date, fmt: str) -> str:
    """Write `date` in one of the `DATE_FORMATS`."""
    month = MONTHS[date.month - 1]
    return fmt.format(
        day=date.day,
        dd=f"{date.day:02d}",
        nth=_ordinal(date.day),
        m=date.month,
        mm=f"{date.month:02d}",
        month=month,
        mon=month[:3],
        weekday=WEEKDAYS[date.weekday()],
        year=date.year,
    )


def dates_task(rng: np.random.Generator) -> tuple[str, str]:
    """'tuesday 3 march 1987' -> '1987-03-03', for dates from 1950 to 2049 in ten formats."""
    first, last = FIRST_DATE.toordinal(), LAST_DATE.toordinal()
    date = datetime.date.fromordinal(int(rng.integers(first, last + 1)))
    fmt = DATE_FORMATS[rng.integers(len(DATE_FORMATS))]
    return format_date(date, fmt), date.isoformat()


TASKS: dict[str, Callable[[np.random.Generator], tuple[str, str]]] = {
    "copy": copy_task,
    "reverse": reverse_task,
    "sort": sort_task,
    "addition": addition_task,
    "dates": dates_task,
}


def split_of(source: str, test_fraction: float = TEST_FRACTION) -> str:
    """'test' for a fixed `test_fraction` of all sources, else 'train'.

    The choice comes from the SHA-1 of the source, so it is the same on every machine and
    in every run (Python's own `hash` of a str changes between runs).
    """
    h = int.from_bytes(hashlib.sha1(source.encode("utf-8")).digest()[:8], "big")
    return "test" if h < test_fraction * 2**64 else "train"


def make_examples(
    task: str, n: int, split: str = "train", seed: int = 0, unique: bool = False
) -> list[tuple[str, str]]:
    """Draw n (source, target) examples of a task from one split.

    Sources of the other split are rejected, so train and test never share a source.

    Args:
        task: A key of `TASKS`.
        n: Number of examples.
        split: "train" or "test".
        seed: Same seed, same examples.
        unique: Refuse repeated sources (draws independently otherwise).

    Returns:
        n pairs of strings.
    """
    if task not in TASKS:
        raise ValueError(f"make_examples: unknown task {task!r}, expected one of {list(TASKS)}")
    if split not in ("train", "test"):
        raise ValueError(f"make_examples: split must be 'train' or 'test', got {split!r}")
    generate, rng = TASKS[task], np.random.default_rng(seed)
    examples: list[tuple[str, str]] = []
    seen: set[str] = set()
    # A generous budget: ~10 draws per test example, more when unique sources run short.
    for _ in range(100 * n + 1000):
        if len(examples) == n:
            return examples
        src, tgt = generate(rng)
        if split_of(src) != split or (unique and src in seen):
            continue
        seen.add(src)
        examples.append((src, tgt))
    if len(examples) < n:
        raise ValueError(f"make_examples: found only {len(examples)} of {n} {split} examples of {task!r}")
    return examples


def encode_pairs(
    pairs: Sequence[tuple[str, str]], vocab: TaskTokenizer = SEQ_VOCAB
) -> tuple[np.ndarray, np.ndarray]:
    """Encode pairs as padded integer arrays for an encoder-decoder.

    Args:
        pairs: (source, target) strings.
        vocab: The tokenizer (the shared `SEQ_VOCAB`).

    Returns:
        (src, tgt): int64 arrays of shape (N, S) and (N, T). `src` holds the source ids,
        `tgt` holds BOS, the target ids and EOS; both are right-padded with PAD to the
        longest row.
    """
    if not pairs:
        raise ValueError("encode_pairs: no pairs")
    srcs = [vocab.encode(s) for s, _ in pairs]
    tgts = [[vocab.bos_id, *vocab.encode(t), vocab.eos_id] for _, t in pairs]
    return _pad(srcs, vocab.pad_id), _pad(tgts, vocab.pad_id)


def _pad(rows: list[list[int]], pad_id: int) -> np.ndarray:
    out = np.full((len(rows), max(map(len, rows))), pad_id, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out
