"""docs/lecture_map.md covers every section of both lecture notes, and everything it cites
(files, names, tutorial sections, exercises) exists."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT.parent / "shared" / "seeds"
MAP = (ROOT / "docs" / "lecture_map.md").read_text(encoding="utf-8")

# The section headings of the notes, in order (each is a line of its note, checked below).
HEADINGS = {
    "000_": ["Today", "Recap → why attention?", "The idea: attention", "Self-attention: the dataflow",
             "🔢 Worked example: attention by hand", "Demo: self-attention from scratch",
             "Why scale by √dₖ ?", "Multi-head attention", "The transformer layer", "Positional encoding",
             "Putting it together: GPT", "Encoders, decoders, and vision", "Complexity: the catch",
             "Summary", "📌 Read before next class"],
    "001_": ["Learning Objectives", "From One Context Vector to Dynamic Attention",
             "Alignment, Weights & Context", "Self-Attention as Query, Key & Value",
             "Order & Causality: Position and Masking", "Multi-Head Attention",
             "Transformer Encoder & Decoder Blocks", "BERT: Contextual Pretraining"],
}


def _note(prefix):
    paths = sorted(SEEDS.glob(prefix + "*.txt"))
    if not paths:
        pytest.skip("the lecture notes (../shared/seeds) are not beside this checkout")
    return paths[0].read_text(encoding="utf-8")


@pytest.mark.parametrize("prefix", sorted(HEADINGS))
def test_every_heading_is_a_line_of_the_notes_in_order(prefix):
    lines = [ln.strip() for ln in _note(prefix).splitlines()]
    where = [lines.index(h) for h in HEADINGS[prefix]]
    assert where == sorted(where)


@pytest.mark.parametrize("prefix", sorted(HEADINGS))
def test_no_heading_of_the_notes_is_missing_from_the_list(prefix):
    """A standalone short line, with blank lines around it, that is not prose, code or math,
    is a heading: every such line must be in HEADINGS (so the map cannot miss a section)."""
    lines = _note(prefix).splitlines()
    found = []
    for i, ln in enumerate(lines[1:-1], start=1):
        text = ln.strip()
        alone = ln == text and 3 < len(text) < 60 and not lines[i - 1].strip() and not lines[i + 1].strip()
        titled = text[:1].isupper() or text[:1] in ("\U0001F522", "\U0001F4CC")  # the notes' emoji
        if alone and titled and not re.search(r"[.:,(=]$|[\\_^{}]", text):  # not prose or math
            found.append(text)
    # Titles, authors, the next lecture's title, and the caption of the notes' code sample
    # (covered under "Self-Attention as Query, Key & Value").
    ignore = {"Lecture 10 — Attention & Transformers", "Deep Learning · Session 10", "Kasemsit Teeyapan",
              "Department of Computer Engineering, Chiang Mai University", "Attention & Transformers",
              "Representation Learning & Self-Supervised Learning", "⌂ Home", "Session 07⚡",
              "Scaled dot-product attentionPython", "Each", "For"}
    missing = [t for t in found if t not in HEADINGS[prefix] and t not in ignore
               and not t.startswith(("Source:", "Reference:", "“"))]
    assert missing == []


def test_every_heading_has_its_entry_in_the_map_in_order():
    entries = re.findall(r"^### (.+)$", MAP, flags=re.MULTILINE)
    assert entries == HEADINGS["000_"] + HEADINGS["001_"]
    for body in re.split(r"^### .+$", MAP, flags=re.MULTILINE)[1:]:
        assert len(body.strip()) > 80  # each entry says something


def test_every_cited_file_and_name_exists():
    cited = re.findall(r"`([\w/]+\.py)(?:::(\w+))?`", MAP)
    assert len(cited) > 40
    for path, name in cited:
        source = (ROOT / path).read_text(encoding="utf-8")
        if name:
            defined = rf"^\s*(class|def) {name}\b|^{name} = "
            assert re.search(defined, source, flags=re.MULTILINE), (path, name)


def test_every_cited_tutorial_section_exists():
    for path, sections in re.findall(r"`(tutorials/\w+\.py)` § ((?:\"[^\"]+\"(?:,| and|\s)*)+)", MAP):
        text = (ROOT / path).read_text(encoding="utf-8")
        heads = [h.strip() for h in re.findall(r"^# #+ (.+)$", text, flags=re.MULTILINE)]
        for section in re.findall(r"\"([^\"]+)\"", sections):
            assert " ".join(section.split()) in heads, (path, section)


def test_every_cited_exercise_exists():
    from minigrad.exercises.catalogue import ORDER

    names = re.findall(r"Exercise: ([^\n]+(?:\n  [^\n]+)*)", MAP)
    cited = {n for line in names for n in re.findall(r"`(\w+)`", line) if not n.startswith("--")}
    from minigrad.exercises.diagnoses import HINTS

    cited -= set(HINTS)  # diagnosis codes named beside their task
    assert cited and cited <= set(ORDER), cited - set(ORDER)
    assert set(ORDER) <= cited | {"mul_broadcast", "matmul_backward", "reductions", "cross_entropy",
                                  "linear_layer",  # the warm-up tasks precede the notes' content
                                  "double_backward"}  # higher-order gradients go past the notes
