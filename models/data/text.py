"""Text corpora: the standard library's docstrings, the user's own text file, and
sentence pairs for next-sentence prediction (BERT).

Everything here is pure Python; nothing is downloaded.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import sysconfig
import tempfile
import warnings
from pathlib import Path

import numpy as np

MIN_DOCSTRING_CHARS = 40
MAX_CORPUS_CHARS = 3_000_000
MIN_TEXT_CHARS = 1000
# Bump when the corpus recipe changes, so stale caches are not reused.
CORPUS_FORMAT = 1

_SKIP_DIRS = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}
# Printable ASCII plus newline: a small, stable character vocabulary on every platform.
_NOT_KEPT = re.compile(r"[^\n\x20-\x7e]")
_BLANK_LINES = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+|\n\s*\n")


def _default_cache_dir() -> Path:
    return Path(os.environ.get("MINIGRAD_CACHE") or Path.home() / ".cache" / "minigrad")


def _clean_docstring(doc: str) -> str:
    """Keep printable ASCII, drop trailing spaces, and collapse blank lines.

    Blank lines inside a docstring become single newlines so that a blank line in the
    corpus always means "next docstring" (see `split_docstrings`).
    """
    doc = _NOT_KEPT.sub("", doc)
    doc = "\n".join(line.rstrip() for line in doc.strip().splitlines())
    return _BLANK_LINES.sub("\n", doc)


def _module_docstrings(path: str) -> list[str]:
    """Docstrings of a module and of all its classes and functions, in ast.walk order."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read())  # bytes: ast honours the file's coding declaration
    except (OSError, SyntaxError, ValueError, RecursionError):
        return []  # unreadable or not valid for this Python: not worth failing the corpus over
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docs = (ast.get_docstring(node) for node in ast.walk(tree) if isinstance(node, kinds))
    return [d for d in docs if d]


def _build_stdlib_corpus() -> str:
    root = sysconfig.get_paths()["stdlib"]
    docs: list[str] = []
    seen: set[str] = set()
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        # Sorting in place makes os.walk visit directories in a fixed order.
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            if not name.endswith(".py") or name.startswith("test_"):
                continue
            for doc in _module_docstrings(os.path.join(dirpath, name)):
                doc = _clean_docstring(doc)
                # Copied docstrings (e.g. _pydecimal vs decimal) would leak into validation.
                if len(doc) < MIN_DOCSTRING_CHARS or doc in seen:
                    continue
                if total + len(doc) + 2 > MAX_CORPUS_CHARS:
                    return "\n\n".join(docs)
                seen.add(doc)
                docs.append(doc)
                total += len(doc) + 2
    return "\n\n".join(docs)


def stdlib_corpus(cache_dir: str | os.PathLike | None = None) -> str:
    """Return the docstrings of the running Python's standard library as one text.

    Module, class and function docstrings of at least 40 characters, from every .py file of
    the standard library (tests and site-packages excluded, files and directories in sorted
    order), each kept once, restricted to printable ASCII plus newline, joined by blank
    lines and capped at `MAX_CORPUS_CHARS`. The first call parses the library (a few
    seconds) and caches the text; later calls read the cache.

    Args:
        cache_dir: Directory for the cache file. Defaults to `$MINIGRAD_CACHE`, else
            `~/.cache/minigrad`.

    Returns:
        The corpus. Documents are separated by exactly one blank line ("\\n\\n").
    """
    cache_dir = Path(cache_dir) if cache_dir is not None else _default_cache_dir()
    version = ".".join(map(str, sys.version_info[:3]))
    cache = cache_dir / f"stdlib_docstrings_py{version}_v{CORPUS_FORMAT}.txt"
    if cache.is_file():
        with open(cache, encoding="ascii", newline="") as f:
            return f.read()
    text = _build_stdlib_corpus()
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        # Write beside the target, then rename: a reader never sees a half-written cache.
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=cache.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="ascii", newline="") as f:
                f.write(text)
            os.chmod(tmp, 0o644)  # mkstemp makes it private; a cache may be shared
            os.replace(tmp, cache)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        warnings.warn(f"stdlib_corpus: could not cache to {cache_dir}: {e}", stacklevel=2)
    return text


def train_val_split(text: str, val_fraction: float = 0.1, max_shift: float = 0.02) -> tuple[str, str]:
    """Split a text into a training head and a validation tail of about `val_fraction` of it.

    The cut aims at the point `len(text) * (1 - val_fraction)`. It moves to the blank line
    ("\\n\\n", a document boundary) nearest to the point, failing that to the nearest newline,
    but only to one within `max_shift * len(text)` characters of the point; with no line
    break that near, the cut is made at the point itself. So the validation share is
    `val_fraction` within `max_shift` (plus a separator and rounding) whatever the text: a
    title line at the top or a blank line near the end cannot make either part tiny. The
    separator belongs to neither part.

    Args:
        text: At least two characters.
        val_fraction: Share of the text for validation, strictly between 0 and 1.
        max_shift: How far (a share of the text) the cut may move to reach a line break.

    Returns:
        (train, val), both non-empty.
    """
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"train_val_split: val_fraction must be in (0, 1), got {val_fraction}")
    if not 0.0 <= max_shift < 1.0:
        raise ValueError(f"train_val_split: max_shift must be in [0, 1), got {max_shift}")
    if len(text) < 2:
        raise ValueError(f"train_val_split: need at least 2 characters, got {len(text)}")
    point = min(max(round(len(text) * (1.0 - val_fraction)), 1), len(text) - 1)
    reach = int(max_shift * len(text))
    for sep in ("\n\n", "\n"):
        # The break nearest the point on either side, if it is within reach and leaves
        # both parts non-empty.
        cuts = [text.rfind(sep, max(point - reach, 1), point + len(sep)),
                text.find(sep, point, point + reach + len(sep))]
        cuts = [c for c in cuts if c > 0 and c + len(sep) < len(text) and abs(c - point) <= reach]
        if cuts:
            cut = min(cuts, key=lambda c: abs(c - point))
            return text[:cut], text[cut + len(sep) :]
    return text[:point], text[point:]


def load_text(path: str | os.PathLike, min_chars: int = MIN_TEXT_CHARS) -> str:
    """Read a user's UTF-8 text file for training (`--data path.txt`).

    A byte-order mark is dropped and Windows line endings become "\\n".

    Args:
        path: The text file.
        min_chars: Fewest characters accepted: enough for a training and a validation part.

    Returns:
        The text.

    Raises:
        FileNotFoundError: The file does not exist.
        ValueError: The path is not a readable file, is not UTF-8, or is empty or too short.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if not path.is_file():
        raise ValueError(f"{path}: not a regular file")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror or e}") from e
    try:
        text = raw.decode("utf-8-sig").replace("\r\n", "\n")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (bad byte at offset {e.start})") from None
    if not text.strip():
        raise ValueError(f"{path}: file is empty")
    if len(text) < min_chars:
        raise ValueError(f"{path}: only {len(text)} characters, need at least {min_chars}")
    return text


def split_docstrings(text: str) -> list[str]:
    """Split a corpus into its documents at blank lines (the inverse of the corpus join).

    Args:
        text: A corpus such as `stdlib_corpus()`.

    Returns:
        The non-empty documents, stripped, in order.
    """
    return [d.strip() for d in _BLANK_LINES.split(text) if d.strip()]


def sentences(doc: str) -> list[str]:
    """Split a document into sentences.

    A sentence ends at ".", "?" or "!" followed by whitespace, or at a blank line.
    Whitespace inside a sentence is collapsed to single spaces. This is deliberately
    simple: "e.g. this" is cut after "e.g.".

    Args:
        doc: One document.

    Returns:
        The non-empty sentences, in order.
    """
    parts = (" ".join(s.split()) for s in _SENTENCE_END.split(doc))
    return [s for s in parts if s]


def nsp_pairs(docs: list[str], n: int, rng: np.random.Generator) -> list[tuple[str, str, int]]:
    """Sample sentence pairs for next-sentence prediction.

    Sentence A is a random sentence (not the last) of a document with at least two
    sentences. With probability 1/2, B is the sentence after it (label 1, IsNext);
    otherwise B is a random sentence of another document (label 0, NotNext).

    Args:
        docs: Documents, e.g. `split_docstrings(text)`.
        n: Number of pairs.
        rng: Source of randomness, e.g. `np.random.default_rng(0)`.

    Returns:
        n tuples (sentence_a, sentence_b, label).
    """
    split = [sentences(d) for d in docs]
    multi = [i for i, s in enumerate(split) if len(s) >= 2]
    nonempty = [i for i, s in enumerate(split) if s]
    if not multi or len(nonempty) < 2:
        raise ValueError(
            "nsp_pairs: need a document with at least 2 sentences and 2 non-empty documents, "
            f"got {len(multi)} and {len(nonempty)}"
        )
    pairs = []
    for _ in range(n):
        doc = multi[rng.integers(len(multi))]
        i = int(rng.integers(len(split[doc]) - 1))
        a = split[doc][i]
        if rng.random() < 0.5:
            pairs.append((a, split[doc][i + 1], 1))
            continue
        other = doc
        while other == doc:  # terminates: there are at least two non-empty documents
            other = nonempty[rng.integers(len(nonempty))]
        b = split[other][rng.integers(len(split[other]))]
        pairs.append((a, b, 0))
    return pairs
