"""Tests for the captioned digit pictures and the caption measures (minigrad.models.data.captions)."""

import numpy as np
import pytest

from minigrad.models.data.captions import (
    CAPTION_VOCAB,
    DIGIT,
    NUMBER_WORDS,
    CaptionData,
    attention_share,
    bleu,
    box_cells,
    encode_captions,
    held_out_pairs,
    word_accuracy,
)
from minigrad.models.data.digits import load_digits_split


@pytest.fixture(scope="module")
def data():
    return CaptionData(24, 24)


def test_the_same_seed_makes_the_same_pictures(data):
    a, b = data.make(20, "train", seed=3), data.make(20, "train", seed=3)
    assert np.array_equal(a.images, b.images) and np.array_equal(a.boxes, b.boxes)
    assert a.captions == b.captions
    c = data.make(20, "train", seed=4)
    assert not np.array_equal(a.images, c.images)
    other = CaptionData(24, 24)  # a new maker, the same pictures
    assert np.array_equal(other.make(20, "train", seed=3).images, a.images)


def test_held_out_pairs_never_occur_in_training(data):
    held = held_out_pairs(0)
    assert len(held) == 10 and held == data.held_out
    train = data.make(2000, "train", seed=0)
    assert not {tuple(p) for p in train.pairs} & held
    assert train.seen.all()
    unseen = data.make(50, "test", seed=1, seen=False)
    assert {tuple(p) for p in unseen.pairs} <= held and not unseen.seen.any()
    # Every digit still appears first and second in training.
    assert set(data.seen_pairs[:, 0]) == set(range(10)) == set(data.seen_pairs[:, 1])
    with pytest.raises(ValueError, match="never occur in training"):
        data.make(5, "train", seed=0, seen=False)


def test_captions_agree_with_the_boxes_and_the_pixels(data):
    s = data.make(300, "test", seed=2)
    x_test = load_digits_split()[2]
    for image, caption, boxes, pair in zip(s.images[:, 0], s.captions, s.boxes, s.pairs):
        first, relation, second = caption.split()[0], " ".join(caption.split()[1:-1]), caption.split()[-1]
        assert (first, second) == (NUMBER_WORDS[pair[0]], NUMBER_WORDS[pair[1]])
        (r0, c0, r1, c1), (q0, d0, q1, d1) = boxes
        assert r1 - r0 == c1 - c0 == DIGIT == q1 - q0 == d1 - d0
        if relation == "left of":
            assert c1 < d0 and abs(r0 - q0) <= 3  # apart left to right, about level
        else:
            assert relation == "above" and r1 < q0 and abs(c0 - d0) <= 3
        inside = np.zeros_like(image, dtype=bool)
        for r, c, rr, cc in boxes:
            inside[r:rr, c:cc] = True
            # the box holds one of the test split's drawings, unchanged
            assert (np.abs(x_test - image[r:rr, c:cc]).reshape(len(x_test), -1).max(1) == 0).any()
        assert (image[~inside] == 0).all()  # nothing drawn outside the boxes
    assert {c.split()[1] for c in s.captions} == {"left", "above"}


def test_vocabulary_and_encoding():
    ids = encode_captions(["seven left of two", "three above five"])
    assert ids.dtype == np.int64 and ids.shape == (2, 6)
    assert ids[1, -1] == CAPTION_VOCAB.pad_id and ids[1, -2] == CAPTION_VOCAB.eos_id
    assert [CAPTION_VOCAB.decode(row) for row in ids] == ["seven left of two", "three above five"]
    assert CAPTION_VOCAB.vocab_size == 16
    with pytest.raises(ValueError, match="not in the vocabulary: \\['right'\\]"):
        CAPTION_VOCAB.encode("two right of one")
    with pytest.raises(ValueError, match="too small"):
        CaptionData(16, 24)


def test_bleu_on_hand_made_cases():
    ref = "seven left of two".split()
    assert bleu(ref, ref) == 1.0 and bleu(ref, ref, max_n=4) == 1.0
    assert bleu([], ref) == 0.0 and bleu(["nine"], ref) == 0.0
    # one word wrong: unigrams 3/4, bigrams (2 + 1) / (3 + 1) with add-one smoothing
    assert bleu("seven left of three".split(), ref) == pytest.approx((0.75 * 0.75) ** 0.5)
    four = (0.75 * 0.75 * 2 / 3 * 1 / 2) ** 0.25  # 3-grams (1 + 1) / (2 + 1), 4-grams (0 + 1) / (1 + 1)
    assert bleu("three left of two".split(), ref, max_n=4) == pytest.approx(four)
    # too short: the brevity penalty exp(1 - 4/3) on precisions 1 and (2 + 1) / (2 + 1)
    assert bleu("seven left of".split(), ref) == pytest.approx(np.exp(1 - 4 / 3))
    refs = ["seven left of two", "one above two"]
    assert word_accuracy(["seven left of three", "one above"], refs) == 5 / 7


def test_box_cells_and_attention_share_on_hand_made_maps():
    cells = box_cells(np.array([0, 0, 8, 8]), (24, 24), (6, 6)).reshape(6, 6)
    assert cells[:2, :2].all() and cells.sum() == 4
    cells = box_cells(np.array([5, 6, 13, 14]), (24, 24), (6, 6)).reshape(6, 6)
    assert cells[1:4, 1:4].all() and cells.sum() == 9  # rows 5..12 meet cells 1..3
    boxes = np.array([[[0, 0, 8, 8], [16, 16, 24, 24]]])  # (1, 2, 4)
    ids = np.array([CAPTION_VOCAB.encode("seven above two") + [CAPTION_VOCAB.eos_id]])  # (1, 4)
    on_first, on_second = np.zeros(36), np.zeros(36)
    on_first[0], on_second[35] = 1, 1  # one-hot maps in each box's corner cell
    weights = np.stack([on_first, on_second, on_second, on_first])[None]  # (1, 4, 36)
    assert attention_share(weights, ids, boxes, (24, 24), (6, 6)) == 1.0
    swapped = np.stack([on_second, on_first, on_first, on_first])[None]
    assert attention_share(swapped, ids, boxes, (24, 24), (6, 6)) == 0.0
    uniform = np.full((1, 4, 36), 1 / 36)
    assert attention_share(uniform, ids, boxes, (24, 24), (6, 6)) == pytest.approx(4 / 36)
    no_digits = np.array([[CAPTION_VOCAB.eos_id] * 4])
    assert np.isnan(attention_share(uniform, no_digits, boxes, (24, 24), (6, 6)))
