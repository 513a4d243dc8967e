"""Tests for minigrad.models.data: corpora, tokenizers, synthetic tasks and digits."""

import calendar
import datetime
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad.models.data.text as text_module
from minigrad.models.data import (
    DATE_FORMATS,
    SEQ_VOCAB,
    TASKS,
    CharTokenizer,
    TaskTokenizer,
    WordTokenizer,
    encode_pairs,
    format_date,
    load_digits_split,
    load_text,
    make_examples,
    nsp_pairs,
    sentences,
    split_docstrings,
    split_of,
    stdlib_corpus,
    tokenizer_from_dict,
    train_val_split,
)

# --------------------------------------------------------------------------- corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The real standard-library corpus, built once (a few seconds) into a fresh cache."""
    return stdlib_corpus(tmp_path_factory.mktemp("cache"))


def test_stdlib_corpus_is_ascii_docstrings_within_the_cap(corpus):
    assert 500_000 < len(corpus) <= text_module.MAX_CORPUS_CHARS
    assert re.fullmatch(r"[\n\x20-\x7e]*", corpus)
    docs = split_docstrings(corpus)
    assert len(docs) > 1000
    assert "\n\n".join(docs) == corpus  # blank lines are exactly the document boundaries
    assert min(map(len, docs)) >= text_module.MIN_DOCSTRING_CHARS
    assert len(set(docs)) == len(docs)


def _write(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))


@pytest.fixture
def fake_stdlib(tmp_path, monkeypatch):
    """A tiny standard library: what must be kept, and everything that must be skipped."""
    root = tmp_path / "lib"
    keep = "x" * 40
    _write(
        root / "b.py",
        f'"""Module b: {keep}."""\nclass C:\n    """Class C: {keep}."""\n'
        f'    def f(self):\n        """Method f: {keep}."""\n',
    )
    _write(
        root / "a.py",
        f'"""Module a caf\u00e9\t{keep}.\n\n\n   Second paragraph.   \n"""\ndef g():\n    """too short"""\n',
    )
    _write(root / "pkg" / "c.py", f'async def h():\n    """Function h: {keep}."""\n')
    _write(root / "pkg" / "dup.py", f'"""Module b: {keep}."""\n')  # a copy: kept once
    _write(root / "pkg" / "broken.py", '"""Broken: never closed\n')
    _write(root / "pkg" / "latin1.py", f'"""Latin-1 caf\xe9 {keep}."""\n'.encode("latin-1"))
    for skipped in (
        "test/x.py",
        "tests/x.py",
        "idlelib/idle_test/x.py",
        "site-packages/x.py",
        "dist-packages/x.py",
        "test_x.py",
        "pkg/test_y.py",
    ):
        _write(root / skipped, f'"""Skipped {skipped}: {keep}."""\n')
    _write(root / "notes.txt", f'"""Not Python: {keep}."""\n')
    monkeypatch.setattr(text_module.sysconfig, "get_paths", lambda: {"stdlib": str(root)})
    return keep


def test_stdlib_corpus_walks_sorted_skips_tests_and_cleans(fake_stdlib, tmp_path):
    keep = fake_stdlib
    text = stdlib_corpus(tmp_path / "cache")
    assert split_docstrings(text) == [
        f"Module a caf   {keep}.\nSecond paragraph.",  # tab expanded, then non-ASCII dropped
        f"Module b: {keep}.",
        f"Class C: {keep}.",
        f"Method f: {keep}.",
        f"Function h: {keep}.",
    ]


def test_stdlib_corpus_cap_stops_at_a_document_boundary(fake_stdlib, tmp_path, monkeypatch):
    monkeypatch.setattr(text_module, "MAX_CORPUS_CHARS", 130)
    text = stdlib_corpus(tmp_path / "cache")
    assert len(text) <= 130
    assert len(split_docstrings(text)) == 2


def test_stdlib_corpus_caches_atomically_and_reads_the_cache(fake_stdlib, tmp_path):
    cache_dir = tmp_path / "cache"
    first = stdlib_corpus(cache_dir)
    (cache,) = cache_dir.iterdir()  # one file, no temporary left behind
    version = ".".join(map(str, sys.version_info[:3]))
    assert f"py{version}" in cache.name
    assert cache.read_text(encoding="ascii") == first
    cache.write_text("from the cache", encoding="ascii")
    assert stdlib_corpus(cache_dir) == "from the cache"


def test_stdlib_corpus_default_cache_dir_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIGRAD_CACHE", str(tmp_path))
    version = ".".join(map(str, sys.version_info[:3]))
    name = f"stdlib_docstrings_py{version}_v{text_module.CORPUS_FORMAT}.txt"
    (tmp_path / name).write_text("cached corpus", encoding="ascii")
    assert stdlib_corpus() == "cached corpus"


def test_train_val_split_of_the_corpus_cuts_between_docstrings(corpus):
    train, val = train_val_split(corpus)
    assert train + "\n\n" + val == corpus
    assert 0.09 < len(val) / len(corpus) < 0.11


def test_train_val_split_picks_the_nearest_boundary_within_reach():
    # 200 characters, 90% is 180; 2% of the text is 4 characters of reach.
    text = "a" * 150 + "\n" + "b" * 27 + "\n\n" + "c" * 20  # blank line at 178: 2 from the point
    assert train_val_split(text) == ("a" * 150 + "\n" + "b" * 27, "c" * 20)
    text = "a" * 176 + "\n" + "b" * 6 + "\n" + "c" * 16  # newlines at 176 and 183: 183 is nearer
    assert train_val_split(text) == ("a" * 176 + "\n" + "b" * 6, "c" * 16)
    text = "a" * 170 + "\n" + "b" * 29  # the only newline, 10 from the point: out of reach
    assert train_val_split(text) == (text[:180], text[180:])
    assert train_val_split("abcdefghij", 0.3) == ("abcdefg", "hij")  # no newline: cut anywhere


@pytest.mark.parametrize("text,val_chars", [
    pytest.param("a" * 300 + "\n" + "b" * 700, 100, id="only-newline-at-30%"),  # was 700
    pytest.param("A title\n" + "x" * 1992, 200, id="title-line-on-top"),  # was 1992, training on 7
    pytest.param("x" * 1995 + "\n\nabc", 200, id="blank-line-near-the-end"),  # was 3
])
def test_train_val_split_share_does_not_follow_a_far_line_break(text, val_chars):
    train, val = train_val_split(text)
    assert len(val) == val_chars and train + val == text


@settings(max_examples=60)
@given(st.data(), st.integers(20, 3000), st.floats(0.02, 0.5), st.floats(0.0, 0.1))
def test_train_val_split_validation_share_stays_within_bounds(data, n, fraction, max_shift):
    """Line breaks anywhere (none, one, many, blank lines at either end): the validation part
    is `fraction` of the text within `max_shift`, a separator and rounding."""
    breaks = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from(["\n", "\n\n"])),
                                max_size=8))
    chars = ["x"] * n
    for at, sep in breaks:
        chars[at] = sep
    text = "".join(chars)
    train, val = train_val_split(text, fraction, max_shift)
    assert train and val and text.startswith(train) and text.endswith(val)
    assert len(text) - len(train) - len(val) in (0, 1, 2)
    assert abs(len(val) - fraction * len(text)) <= max_shift * len(text) + 3


@given(st.text(alphabet="ab\n", min_size=2, max_size=60), st.floats(0.01, 0.99))
def test_train_val_split_parts_are_nonempty_and_rebuild_the_text(text, fraction):
    train, val = train_val_split(text, fraction)
    assert train and val
    gap = len(text) - len(train) - len(val)
    assert text[len(train) : len(train) + gap] in ("", "\n", "\n\n")
    assert text.startswith(train) and text.endswith(val)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5])
def test_train_val_split_rejects_bad_fractions(fraction):
    with pytest.raises(ValueError, match="val_fraction"):
        train_val_split("some text", fraction)


def test_load_text_reads_utf8_and_normalises_line_endings(tmp_path):
    path = tmp_path / "story.txt"
    path.write_bytes(("\ufeff" + "line one \u00e9\r\n" * 100).encode("utf-8"))
    assert load_text(path) == "line one \u00e9\n" * 100


@pytest.mark.parametrize(
    "content, error, message",
    [
        pytest.param(None, FileNotFoundError, "no such file", id="missing"),
        pytest.param(b"", ValueError, "empty", id="empty"),
        pytest.param(b" \n\n ", ValueError, "empty", id="blank"),
        pytest.param(b"short", ValueError, "only 5 characters", id="short"),
        pytest.param(b"ok " * 500 + b"\xff\xfe", ValueError, "not UTF-8", id="latin1"),
    ],
)
def test_load_text_errors_name_the_path_on_one_line(tmp_path, content, error, message):
    path = tmp_path / "data.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(error, match=message) as info:
        load_text(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_load_text_rejects_directories_and_unreadable_files(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="not a regular file"):
        load_text(tmp_path)
    path = tmp_path / "locked.txt"
    path.write_text("x" * 2000)

    def refuse(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", refuse)  # root can read anything, so pretend
    with pytest.raises(ValueError, match="cannot read: Permission denied"):
        load_text(path)


# --------------------------------------------------------------------------- sentences and NSP


def test_sentences_split_on_terminators_and_blank_lines():
    doc = "Return x.  Really? Yes!\nIt is\nwrapped.\n\nNew paragraph"
    assert sentences(doc) == ["Return x.", "Really?", "Yes!", "It is wrapped.", "New paragraph"]
    assert sentences("  \n ") == []


def test_split_docstrings_skips_empty_documents():
    assert split_docstrings("one\n\n\n\ntwo\nlines\n\n") == ["one", "two\nlines"]


DOCS = ["A one. A two. A three.", "B one. B two.", "C only.", "D one! D two? D three."]


def test_nsp_pairs_positives_follow_and_negatives_come_from_another_doc():
    pairs = nsp_pairs(DOCS, 2000, np.random.default_rng(0))
    assert len(pairs) == 2000
    assert 0.45 < np.mean([label for _, _, label in pairs]) < 0.55
    doc_of = {s: i for i, d in enumerate(DOCS) for s in sentences(d)}
    for a, b, label in pairs:
        sa = sentences(DOCS[doc_of[a]])
        assert a != sa[-1]  # sentence A always has a successor
        if label == 1:
            assert sa[sa.index(a) + 1] == b
        else:
            assert doc_of[b] != doc_of[a]
    assert nsp_pairs(DOCS, 50, np.random.default_rng(7)) == nsp_pairs(DOCS, 50, np.random.default_rng(7))


def test_nsp_pairs_needs_enough_documents():
    with pytest.raises(ValueError, match="at least 2 sentences"):
        nsp_pairs(["One. Two."], 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="at least 2 sentences"):
        nsp_pairs(["Only one.", "Another one."], 3, np.random.default_rng(0))


def test_nsp_pairs_from_the_corpus(corpus):
    pairs = nsp_pairs(split_docstrings(corpus)[:500], 200, np.random.default_rng(0))
    assert {label for _, _, label in pairs} == {0, 1}
    assert all(a and b and "\n" not in a + b for a, b, _ in pairs)


# --------------------------------------------------------------------------- tokenizers


def test_char_tokenizer_has_a_sorted_vocabulary():
    tok = CharTokenizer.from_text("hello world")
    assert tok.chars == [" ", "d", "e", "h", "l", "o", "r", "w"]
    assert tok.vocab_size == 8
    assert tok.encode("hold") == [3, 5, 4, 1]


@given(st.text(min_size=1))
def test_char_tokenizer_round_trips_any_text_and_its_json(text):
    tok = CharTokenizer.from_text(text)
    ids = tok.encode(text)
    assert all(0 <= i < tok.vocab_size for i in ids)
    assert tok.decode(ids) == text
    again = tokenizer_from_dict(json.loads(json.dumps(tok.to_dict())))
    assert isinstance(again, CharTokenizer) and again.encode(text) == ids


def test_char_tokenizer_errors_name_the_problem():
    tok = CharTokenizer.from_text("abc")
    with pytest.raises(ValueError, match=r"\['d', 'z'\]"):
        tok.encode("zadz")
    with pytest.raises(ValueError, match=r"outside \[0, 3\): \[3, -1\]"):
        tok.decode([0, 3, -1])
    with pytest.raises(ValueError, match="expected kind 'char'"):
        CharTokenizer.from_dict({"kind": "word", "tokens": []})


def test_word_tokenizer_specials_frequency_order_and_cap():
    tok = WordTokenizer.from_text("b a c. a b a! d", max_vocab=8)
    assert tok.tokens == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "!"]
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    assert tok.vocab_size == 8
    assert tok.tokenize("Don't STOP, x_1.") == ["don", "'", "t", "stop", ",", "x_1", "."]
    assert tok.encode("A c b") == [5, 1, 6]
    assert tok.decode([2, 5, 1, 3, 0, 0]) == "[CLS] a [UNK] [SEP] [PAD] [PAD]"
    assert tok.decode([2, 5, 1, 3, 0, 4], skip_special=True) == "a [UNK]"


@settings(deadline=None)
@given(st.text(alphabet="abcXYZ .,!?'\n", max_size=80), st.integers(5, 12))
def test_word_tokenizer_encodes_within_the_vocabulary_and_round_trips_json(text, max_vocab):
    tok = WordTokenizer.from_text(text, max_vocab=max_vocab)
    assert tok.vocab_size <= max_vocab
    ids = tok.encode(text)
    assert len(ids) == len(tok.tokenize(text))
    assert all(0 <= i < tok.vocab_size for i in ids)
    again = tokenizer_from_dict(json.loads(json.dumps(tok.to_dict())))
    assert isinstance(again, WordTokenizer) and again.tokens == tok.tokens
    full = WordTokenizer.from_text(text, max_vocab=10_000)  # every token known: lossless
    assert full.decode(full.encode(text)) == " ".join(full.tokenize(text))


def test_word_tokenizer_rejects_bad_vocabularies():
    with pytest.raises(ValueError, match="at least 5"):
        WordTokenizer.from_text("abc", max_vocab=4)
    with pytest.raises(ValueError, match="must start with"):
        WordTokenizer(["a", "b"])
    with pytest.raises(ValueError, match="unknown kind"):
        tokenizer_from_dict({"kind": "bpe"})


# --------------------------------------------------------------------------- synthetic tasks


@pytest.mark.parametrize("task", list(TASKS))
def test_task_splits_never_overlap_and_are_deterministic(task):
    train = make_examples(task, 400, "train", seed=0)
    test = make_examples(task, 100, "test", seed=0)
    assert {s for s, _ in train}.isdisjoint({s for s, _ in test})
    assert all(split_of(s) == "train" for s, _ in train)
    assert all(split_of(s) == "test" for s, _ in test)
    assert make_examples(task, 50, "test", seed=3) == make_examples(task, 50, "test", seed=3)
    assert make_examples(task, 50, "test", seed=3) != make_examples(task, 50, "test", seed=4)
    for source, target in train + test:  # every character is in the shared vocabulary
        assert set(source + target) <= set(TaskTokenizer.CHARS)


@pytest.mark.parametrize("task", list(TASKS))
def test_about_a_tenth_of_all_sources_are_test(task):
    rng = np.random.default_rng(1)
    splits = [split_of(TASKS[task](rng)[0]) for _ in range(4000)]
    assert 0.08 < splits.count("test") / len(splits) < 0.12


def test_digit_tasks_are_correct():
    for source, target in make_examples("copy", 200, seed=1):
        assert source == target and source.isdigit() and 8 <= len(source) <= 12
    for source, target in make_examples("reverse", 200, seed=1):
        assert target == source[::-1] and 8 <= len(source) <= 12
    for source, target in make_examples("sort", 200, seed=1):
        assert target == "".join(sorted(source)) and sorted(target) == sorted(source)
    sums = make_examples("addition", 500, seed=1)
    for source, target in sums:
        a, b = source.split("+")
        assert int(a) + int(b) == int(target) and str(int(target)) == target
        assert len(a) <= 5 and len(b) <= 5 and str(int(a)) == a  # no leading zeros
    assert {len(s.split("+")[0]) for s, _ in sums} == {1, 2, 3, 4, 5}


def test_date_formats_write_one_date_every_way():
    date = datetime.date(1987, 3, 3)
    assert [format_date(date, f) for f in DATE_FORMATS] == [
        "3 march 1987",
        "march 3, 1987",
        "tuesday 3 march 1987",
        "tuesday, march 3, 1987",
        "3 mar 1987",
        "mar 3, 1987",
        "3rd march 1987",
        "the 3rd of march 1987",
        "1987/03/03",
        "1987/3/3",
    ]
    days = [1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 31]
    assert [format_date(datetime.date(2001, 1, d), "{nth}") for d in days] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
        "23rd",
        "31st",
    ]


def _parse_date(text):
    """An independent reader of the date formats, using calendar's (C locale) names."""
    if "/" in text:
        return datetime.date(*map(int, text.split("/")))
    months = [m.lower() for m in calendar.month_name]
    weekdays = [d.lower() for d in calendar.day_name]
    words = re.findall(r"[a-z]+|\d+", text)
    (month,) = [i for i, m in enumerate(months) if m and (m in words or m[:3] in words)]
    (year,) = [int(w) for w in words if len(w) == 4 and w.isdigit()]
    (day,) = [int(w) for w in words if len(w) <= 2 and w.isdigit()]
    date = datetime.date(year, month, day)
    named = [w for w in words if w in weekdays]
    assert named in ([], [weekdays[date.weekday()]])
    return date


def test_dates_targets_are_iso_dates_equal_to_the_source():
    examples = make_examples("dates", 1000, seed=2) + make_examples("dates", 200, "test", seed=2)
    for source, target in examples:
        date = datetime.date.fromisoformat(target)
        assert datetime.date(1950, 1, 1) <= date <= datetime.date(2049, 12, 31)
        assert _parse_date(source) == date, source
    assert len({s for s, _ in examples}) > 1150


def test_make_examples_unique_and_errors(monkeypatch):
    examples = make_examples("addition", 300, seed=0, unique=True)
    assert len({s for s, _ in examples}) == 300
    monkeypatch.setitem(TASKS, "tiny", lambda rng: (str(rng.integers(3)), "x"))
    with pytest.raises(ValueError, match="found only"):
        make_examples("tiny", 10, unique=True)
    with pytest.raises(ValueError, match="unknown task 'nope'"):
        make_examples("nope", 1)
    with pytest.raises(ValueError, match="split must be"):
        make_examples("copy", 1, split="val")


@given(
    st.lists(
        st.tuples(
            st.text(TaskTokenizer.CHARS, min_size=1, max_size=12), st.text(TaskTokenizer.CHARS, max_size=12)
        ),
        min_size=1,
        max_size=6,
    )
)
def test_encode_pairs_pads_and_frames_targets(pairs):
    src, tgt = encode_pairs(pairs)
    assert src.dtype == np.int64 and tgt.dtype == np.int64
    assert src.shape == (len(pairs), max(len(s) for s, _ in pairs))
    assert tgt.shape == (len(pairs), max(len(t) for _, t in pairs) + 2)
    assert (tgt[:, 0] == SEQ_VOCAB.bos_id).all()
    for row, (s, t) in enumerate(pairs):
        assert SEQ_VOCAB.decode(src[row]) == s and SEQ_VOCAB.decode(tgt[row]) == t
        assert tgt[row, len(t) + 1] == SEQ_VOCAB.eos_id
        assert (src[row, len(s) :] == SEQ_VOCAB.pad_id).all()
        assert (tgt[row, len(t) + 2 :] == SEQ_VOCAB.pad_id).all()


def test_task_tokenizer_layout_and_errors():
    assert (SEQ_VOCAB.pad_id, SEQ_VOCAB.bos_id, SEQ_VOCAB.eos_id) == (0, 1, 2)
    assert SEQ_VOCAB.vocab_size == 3 + 10 + 26 + 5
    assert TaskTokenizer.from_dict(json.loads(json.dumps(SEQ_VOCAB.to_dict()))).tokens == SEQ_VOCAB.tokens
    with pytest.raises(ValueError, match=r"\['A'\]"):
        SEQ_VOCAB.encode("abA")
    with pytest.raises(ValueError, match="differs"):
        TaskTokenizer.from_dict({"kind": "task", "tokens": ["[PAD]"]})
    with pytest.raises(ValueError, match="no pairs"):
        encode_pairs([])


# --------------------------------------------------------------------------- digits


def test_digits_split_shapes_ranges_and_order():
    x_train, y_train, x_test, y_test = load_digits_split()
    assert x_train.shape == (1437, 8, 8) and x_test.shape == (360, 8, 8)
    assert x_train.dtype == np.float32 and x_test.dtype == np.float32
    assert y_train.shape == (1437,) and y_test.shape == (360,) and y_train.dtype == np.int64
    assert x_train.min() == 0.0 and x_train.max() == 1.0
    assert set(y_test.tolist()) == set(range(10))
    from sklearn.datasets import load_digits

    digits = load_digits()
    order = np.random.default_rng(0).permutation(1797)
    np.testing.assert_array_equal(x_test * 16, digits.images[order[1437:]])
    np.testing.assert_array_equal(y_train, digits.target[order[:1437]])
    again = load_digits_split()
    np.testing.assert_array_equal(again[0], x_train)


def test_digits_without_scikit_learn_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # None makes the import fail
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError) as info:
        load_digits_split()
    assert str(info.value) == "the digits data needs scikit-learn: pip install 'minigrad[data]'"


def test_data_module_imports_no_other_minigrad_code():
    data_dir = Path(text_module.__file__).parent
    for path in data_dir.glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import)\s+(minigrad|\.\.)", source, re.M), path.name
