"""Captioned pictures of two digits, generated from a seed, and the measures of a caption.

Two of the 8x8 digits (digits.py) are placed on a blank canvas, side by side or one above the
other, and the caption names them in reading order with the relation between them:

    "seven left of two"     the seven is on the left, at about the same height
    "three above five"      the three is on top, at about the same column

Training pictures are drawn from the digits' training images, test pictures from their test
images, so a test picture never reuses a drawing seen in training. Some ordered pairs of digits
(`HELD_OUT_FRACTION` of the 100) never occur in training: the test set holds pictures of
"seen" and of "unseen" pairs, to tell learning the digits apart from learning the pairs. Each
picture keeps the box of each digit (row0, col0, row1, col1; ends exclusive), in caption order.

Measures (numpy only): `bleu` (sentence BLEU with add-one smoothing), `word_accuracy`,
`box_cells` and `attention_share` (how much of a word's attention falls on its digit's box).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .digits import load_digits_split

NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
RELATIONS = ("left of", "above")
HELD_OUT_FRACTION = 0.1
DIGIT = 8  # side of a digit picture
NEAR = 3  # the other axis may differ by this many pixels: "left of" pairs are about level


class CaptionVocab:
    """The words of the captions plus <pad>=0, <bos>=1, <eos>=2."""

    SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>")
    pad_id, bos_id, eos_id = range(3)

    def __init__(self) -> None:
        words = [w for r in RELATIONS for w in r.split()]
        self.tokens = list(self.SPECIAL_TOKENS) + list(NUMBER_WORDS) + list(dict.fromkeys(words))
        self._ids = {w: i for i, w in enumerate(self.tokens)}
        self.digit_ids = np.array([self._ids[w] for w in NUMBER_WORDS])  # (10,)

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def encode(self, caption: str) -> list[int]:
        """Ids of the words of `caption` (no <bos>/<eos> added)."""
        unknown = [w for w in caption.split() if w not in self._ids]
        if unknown:
            raise ValueError(f"CaptionVocab.encode: words not in the vocabulary: {unknown}")
        return [self._ids[w] for w in caption.split()]

    def decode(self, ids: Sequence[int]) -> str:
        """The words of `ids`, stopping at the first <eos> and skipping <pad> and <bos>."""
        words = []
        for i in map(int, ids):
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                words.append(self.tokens[i])
        return " ".join(words)

    def is_digit(self, ids: np.ndarray) -> np.ndarray:
        """Whether each id names a digit (bool, the shape of ids)."""
        return np.isin(ids, self.digit_ids)


CAPTION_VOCAB = CaptionVocab()


def held_out_pairs(seed: int = 0) -> set[tuple[int, int]]:
    """The ordered digit pairs (first, second) kept out of training: 10 of the 100."""
    order = np.random.default_rng(seed).permutation(100)[: round(100 * HELD_OUT_FRACTION)]
    return {(int(i) // 10, int(i) % 10) for i in order}


@dataclass
class CaptionSet:
    """Pictures with their captions and boxes.

    Attributes:
        images: (N, 1, H, W) float32 in [0, 1].
        captions: N strings.
        boxes: (N, 2, 4) int64, the box (row0, col0, row1, col1) of each digit in caption order.
        pairs: (N, 2) int64, the digits in caption order.
        seen: (N,) bool, whether the pair occurs in training.
    """

    images: np.ndarray
    captions: list[str]
    boxes: np.ndarray
    pairs: np.ndarray
    seen: np.ndarray

    def __len__(self) -> int:
        return len(self.captions)

    def take(self, idx: np.ndarray | slice) -> CaptionSet:
        idx = np.arange(len(self))[idx]
        return CaptionSet(self.images[idx], [self.captions[i] for i in idx], self.boxes[idx],
                          self.pairs[idx], self.seen[idx])


class CaptionData:
    """Makes captioned pictures from the digits (scikit-learn's, loaded once).

    Args:
        height, width: the canvas, at least 8 x 17 (side by side) and 17 x 8 (stacked).
        holdout_seed: which pairs are held out (`held_out_pairs`).
    """

    def __init__(self, height: int = 24, width: int = 24, holdout_seed: int = 0):
        if height < 2 * DIGIT + 1 or width < 2 * DIGIT + 1:
            raise ValueError(f"CaptionData: a {height} x {width} canvas is too small for two 8 x 8 digits "
                             f"side by side and stacked; give at least {2 * DIGIT + 1} x {2 * DIGIT + 1}")
        self.height, self.width, self.holdout_seed = height, width, holdout_seed
        x_train, y_train, x_test, y_test = load_digits_split()  # ImportError without scikit-learn
        self.drawings = {"train": (x_train, y_train), "test": (x_test, y_test)}
        self.held_out = held_out_pairs(holdout_seed)
        pairs = [(a, b) for a in range(10) for b in range(10)]
        self.seen_pairs = np.array([p for p in pairs if p not in self.held_out])  # (90, 2)
        self.unseen_pairs = np.array(sorted(self.held_out))

    def make(self, n: int, split: str, seed: int, seen: bool = True) -> CaptionSet:
        """n pictures drawn with `seed` from the split's drawings ("train" or "test"), of seen
        pairs or (seen=False, test split only) of the held-out pairs."""
        if split not in self.drawings:
            raise ValueError(f"CaptionData.make: split must be 'train' or 'test', not {split!r}")
        if split == "train" and not seen:
            raise ValueError("CaptionData.make: the held-out pairs never occur in training")
        x, y = self.drawings[split]
        by_digit = [np.flatnonzero(y == d) for d in range(10)]
        rng = np.random.default_rng(seed)
        choices = self.seen_pairs if seen else self.unseen_pairs
        pairs = choices[rng.integers(0, len(choices), size=n)]  # (n, 2)
        relation = rng.integers(0, 2, size=n)  # 0: left of, 1: above
        images = np.zeros((n, 1, self.height, self.width), dtype=np.float32)
        boxes = np.zeros((n, 2, 4), dtype=np.int64)
        for i in range(n):
            corners = self._place(rng, relation[i])
            for k in range(2):
                r, c = corners[k]
                drawing = x[rng.choice(by_digit[pairs[i, k]])]
                images[i, 0, r:r + DIGIT, c:c + DIGIT] = drawing
                boxes[i, k] = (r, c, r + DIGIT, c + DIGIT)
        captions = [f"{NUMBER_WORDS[a]} {RELATIONS[rel]} {NUMBER_WORDS[b]}"
                    for (a, b), rel in zip(pairs, relation)]
        return CaptionSet(images, captions, boxes, pairs.astype(np.int64), np.full(n, seen))

    def _place(self, rng: np.random.Generator, relation: int) -> list[tuple[int, int]]:
        """Top-left corners of the first and second digit: apart along the relation's axis (a
        gap of at least one pixel), within NEAR pixels of each other along the other."""
        along, across = (self.width, self.height) if relation == 0 else (self.height, self.width)
        a = int(rng.integers(0, along - 2 * DIGIT))  # the first digit, leaving room for the second
        b = int(rng.integers(a + DIGIT + 1, along - DIGIT + 1))
        u = int(rng.integers(0, across - DIGIT + 1))
        lo, hi = max(0, u - NEAR), min(across - DIGIT, u + NEAR)
        v = int(rng.integers(lo, hi + 1))
        return [(u, a), (v, b)] if relation == 0 else [(a, u), (b, v)]


def encode_captions(captions: Sequence[str], vocab: CaptionVocab = CAPTION_VOCAB) -> np.ndarray:
    """(N, L + 2) int64 ids: <bos>, the words, <eos>, then <pad> to the longest caption."""
    rows = [[vocab.bos_id, *vocab.encode(c), vocab.eos_id] for c in captions]
    out = np.full((len(rows), max(map(len, rows))), vocab.pad_id, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out


# ----------------------------------------------------------------------------- measures


def bleu(candidate: Sequence[str], reference: Sequence[str], max_n: int = 2) -> float:
    """Sentence BLEU-max_n of a word list against one reference, with add-one smoothing.

        BLEU = BP * exp(mean_n log p_n),  BP = min(1, exp(1 - len(ref) / len(cand)))

    p_n is the clipped n-gram precision; for n > 1 it is (matches + 1) / (n-grams + 1)
    (Lin and Och, 2004), so one missing 4-gram does not zero a short caption. 0 for an empty
    candidate; 1 when candidate and reference are the same.
    """
    if not candidate:
        return 0.0
    log_p = 0.0
    for n in range(1, max_n + 1):
        cand = Counter(tuple(candidate[i:i + n]) for i in range(len(candidate) - n + 1))
        ref = Counter(tuple(reference[i:i + n]) for i in range(len(reference) - n + 1))
        matches, total = sum((cand & ref).values()), sum(cand.values())
        if n == 1:
            if matches == 0:
                return 0.0
            log_p += math.log(matches / total)
        else:
            log_p += math.log((matches + 1) / (total + 1))
    brevity = min(1.0, math.exp(1 - len(reference) / len(candidate)))
    return brevity * math.exp(log_p / max_n)


def word_accuracy(outputs: Sequence[str], references: Sequence[str]) -> float:
    """The fraction of reference words the output has at the same position."""
    right = total = 0
    for out, ref in zip(outputs, references):
        out_words, ref_words = out.split(), ref.split()
        right += sum(o == r for o, r in zip(out_words, ref_words))
        total += len(ref_words)
    return right / max(total, 1)


def box_cells(boxes: np.ndarray, image_hw: tuple[int, int], grid_hw: tuple[int, int]) -> np.ndarray:
    """Which cells of an h x w grid laid over an H x W image each box overlaps.

    boxes (..., 4) as (row0, col0, row1, col1), ends exclusive. Cell (i, j) covers rows
    [i H/h, (i+1) H/h) and the like for columns. Returns bool (..., h*w), row-major.
    """
    (H, W), (h, w) = image_hw, grid_hw
    top, bottom = np.arange(h) * H / h, (np.arange(h) + 1) * H / h  # (h,)
    left, right = np.arange(w) * W / w, (np.arange(w) + 1) * W / w  # (w,)
    b = np.asarray(boxes)[..., None]  # (..., 4, 1)
    rows = (top < b[..., 2, :]) & (bottom > b[..., 0, :])  # (..., h)
    cols = (left < b[..., 3, :]) & (right > b[..., 1, :])  # (..., w)
    return (rows[..., :, None] & cols[..., None, :]).reshape(*rows.shape[:-1], h * w)


def attention_share(weights: np.ndarray, ids: np.ndarray, boxes: np.ndarray, image_hw: tuple[int, int],
                    grid_hw: tuple[int, int], vocab: CaptionVocab = CAPTION_VOCAB) -> float:
    """The mean, over the digit words of the outputs, of the attention weight that falls on
    grid cells overlapping the box of the digit that word names (the k-th digit word of a
    caption names the k-th digit in reading order).

    Args:
        weights: (N, L, h*w) each output word's attention over the grid.
        ids: (N, L) the output words (a digit word past the number of boxes is not counted).
        boxes: (N, K, 4) the boxes in caption order.

    Returns nan when the outputs hold no digit word.
    """
    on_box = box_cells(boxes, image_hw, grid_hw)  # (N, K, h*w)
    digit = vocab.is_digit(ids)  # (N, L)
    which = np.cumsum(digit, axis=1) - 1  # (N, L): the digit word's rank in its caption
    counted = digit & (which < boxes.shape[1])  # (N, L)
    n, t = np.nonzero(counted)
    if not len(n):
        return float("nan")
    share = (weights[n, t] * on_box[n, which[n, t]]).sum(-1)  # (words,)
    return float(share.mean())
