"""Tokenizers for text models: characters (GPT) and lowercase words with special tokens (BERT).

Each one saves to a JSON-serialisable dict (`to_dict`) so a checkpoint can carry it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any


class CharTokenizer:
    """One token per character, over the sorted characters of a text.

    Example:
        >>> tok = CharTokenizer.from_text("hello")
        >>> tok.encode("hole")
        [1, 3, 2, 0]
        >>> tok.decode([1, 0, 2, 2, 3])
        'hello'
    """

    def __init__(self, chars: Iterable[str]):
        """Build the vocabulary from the given characters (sorted, duplicates dropped)."""
        self.chars = sorted(set(chars))
        bad = [c for c in self.chars if len(c) != 1]
        if bad:
            raise ValueError(f"CharTokenizer: vocabulary entries must be single characters: {bad}")
        if not self.chars:
            raise ValueError("CharTokenizer: empty vocabulary")
        self._ids = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """Vocabulary of every character that occurs in `text`."""
        return cls(text)

    @property
    def vocab_size(self) -> int:
        """Number of distinct characters."""
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        """Map each character to its id.

        Raises:
            ValueError: `text` holds characters outside the vocabulary (all are listed).
        """
        try:
            return [self._ids[c] for c in text]
        except KeyError:
            unknown = sorted(set(text) - self._ids.keys())
            raise ValueError(f"CharTokenizer.encode: characters not in the vocabulary: {unknown}") from None

    def decode(self, ids: Iterable[int]) -> str:
        """Map ids back to characters.

        Raises:
            ValueError: An id is outside [0, vocab_size).
        """
        ids = [int(i) for i in ids]
        bad = [i for i in ids if not 0 <= i < len(self.chars)]
        if bad:
            raise ValueError(f"CharTokenizer.decode: ids outside [0, {len(self.chars)}): {bad[:10]}")
        return "".join(self.chars[i] for i in ids)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description, the inverse of `from_dict`."""
        return {"kind": "char", "chars": list(self.chars)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CharTokenizer:
        """Rebuild a tokenizer saved with `to_dict`."""
        if d.get("kind") != "char":
            raise ValueError(f"CharTokenizer.from_dict: expected kind 'char', got {d.get('kind')!r}")
        return cls(d["chars"])


class WordTokenizer:
    """Lowercase words and single punctuation marks, with BERT's special tokens.

    Ids 0 to 4 are `[PAD] [UNK] [CLS] [SEP] [MASK]`; then come the most frequent tokens of
    the training text, ties broken alphabetically so the vocabulary is deterministic.
    Tokens outside the vocabulary encode as `[UNK]`. Special tokens are never produced by
    `tokenize`: models insert their ids directly.

    Example:
        >>> tok = WordTokenizer.from_text("Return the value. Return it!", max_vocab=9)
        >>> tok.tokenize("Return it, please.")
        ['return', 'it', ',', 'please', '.']
        >>> tok.decode(tok.encode("Return it, please."))
        'return it [UNK] [UNK] .'
    """

    SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    pad_id, unk_id, cls_id, sep_id, mask_id = range(5)
    _TOKEN = re.compile(r"\w+|[^\w\s]")

    def __init__(self, tokens: Sequence[str]):
        """Use `tokens` as the vocabulary; it must start with `SPECIAL_TOKENS`."""
        tokens = list(tokens)
        if tuple(tokens[:5]) != self.SPECIAL_TOKENS:
            raise ValueError(
                f"WordTokenizer: vocabulary must start with {list(self.SPECIAL_TOKENS)}, got {tokens[:5]}"
            )
        if len(set(tokens)) != len(tokens):
            raise ValueError("WordTokenizer: vocabulary has duplicate tokens")
        self.tokens = tokens
        self._ids = {t: i for i, t in enumerate(tokens)}

    @classmethod
    def tokenize(cls, text: str) -> list[str]:
        """Split lowercased text into words (runs of letters, digits, _) and punctuation."""
        return cls._TOKEN.findall(text.lower())

    @classmethod
    def from_text(cls, text: str, max_vocab: int = 5000) -> WordTokenizer:
        """Vocabulary of the most frequent tokens of `text`.

        Args:
            text: Training text.
            max_vocab: Largest vocabulary size, special tokens included (at least 5).
        """
        if max_vocab < len(cls.SPECIAL_TOKENS):
            raise ValueError(f"WordTokenizer: max_vocab must be at least 5, got {max_vocab}")
        counts = Counter(cls.tokenize(text))
        ranked = sorted(counts, key=lambda t: (-counts[t], t))
        words = [t for t in ranked if t not in cls.SPECIAL_TOKENS]
        return cls(list(cls.SPECIAL_TOKENS) + words[: max_vocab - len(cls.SPECIAL_TOKENS)])

    @property
    def vocab_size(self) -> int:
        """Number of tokens, special tokens included."""
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`; unknown tokens become `unk_id`."""
        return [self._ids.get(t, self.unk_id) for t in self.tokenize(text)]

    def decode(self, ids: Iterable[int], skip_special: bool = False) -> str:
        """Join the tokens of `ids` with spaces (the original spacing is not kept).

        Args:
            ids: Token ids.
            skip_special: Leave out `[PAD]`, `[CLS]`, `[SEP]` and `[MASK]` (not `[UNK]`).
        """
        ids = [int(i) for i in ids]
        bad = [i for i in ids if not 0 <= i < len(self.tokens)]
        if bad:
            raise ValueError(f"WordTokenizer.decode: ids outside [0, {len(self.tokens)}): {bad[:10]}")
        skip = {self.pad_id, self.cls_id, self.sep_id, self.mask_id} if skip_special else set()
        return " ".join(self.tokens[i] for i in ids if i not in skip)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description, the inverse of `from_dict`."""
        return {"kind": "word", "tokens": list(self.tokens)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WordTokenizer:
        """Rebuild a tokenizer saved with `to_dict`."""
        if d.get("kind") != "word":
            raise ValueError(f"WordTokenizer.from_dict: expected kind 'word', got {d.get('kind')!r}")
        return cls(d["tokens"])


def tokenizer_from_dict(d: dict[str, Any]) -> CharTokenizer | WordTokenizer:
    """Rebuild whichever tokenizer `d` describes (from a checkpoint)."""
    kinds = {"char": CharTokenizer, "word": WordTokenizer}
    if d.get("kind") not in kinds:
        raise ValueError(
            f"tokenizer_from_dict: unknown kind {d.get('kind')!r}, expected one of {list(kinds)}"
        )
    return kinds[d["kind"]].from_dict(d)
