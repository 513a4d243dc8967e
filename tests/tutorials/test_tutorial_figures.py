"""The figures the tutorials state, in tutorials/README.md and in their own text, against what
they print when run (the `runs` fixture: every tutorial once per session on each code path, the
machine's own and AVX2's: each test here runs once on each)."""

import math
import re
from decimal import Decimal

import numpy as np
from tutorial_runs import ROOT, TUTORIALS
from tutorial_runs import lines as _lines

# ------------------------------------------------------------------- the figures the texts state
# Every figure that tutorials/README.md or a tutorial's own text states is read from that text
# and compared with what the tutorial prints, as are both sides of every comparison it draws,
# so neither text nor output can drift from what the code computes. How a figure is written
# says what it claims (`_bounds`):
#   "X"           X as rounded: within half a unit of its last written digit. A figure
#                 computed without training (a worked example, a count, a quoted benchmark):
#                 the same on every CPU, to its last digit.
#   "about X"     within one unit of its last written digit ("about 0.93": 0.92 to 0.94);
#   "X to Y"      from X to Y, both included;
#   "at least X"  X or more.
# A trained figure (what a training run reaches) is stated in one of the last three forms: its
# digits move with the rounding of the CPU's kernels (AVX-512 or AVX2, OpenBLAS's choice), so
# the text states what holds on each, and every test here runs on both code paths. A NaN
# agrees with nothing.

FIGURE = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
NUMBER = rf"(nan|{FIGURE})"  # a figure as printed, or as a text states an exact one
TRAINED = rf"((?:about |at least ){FIGURE}|{FIGURE} to {FIGURE})"  # as a text states a trained one
WORDS = {"one": 1, "two": 2, "three": 3, "seven": 7, "ten": 10}


def _readme(name: str) -> str:
    """The row of tutorials/README.md's table that describes a tutorial."""
    readme = (TUTORIALS / "README.md").read_text()
    (row,) = [line for line in readme.splitlines() if line.startswith(f"| `{name}` |")]
    return row


def _markdown(name: str) -> str:
    """A tutorial's text cells, their lines joined by spaces (a sentence may wrap)."""
    words, inside = [], False
    for line in (TUTORIALS / name).read_text().splitlines():
        if line.startswith("# %%"):
            inside = line.startswith("# %% [markdown]")
        elif inside:
            words.append(line.removeprefix("#").strip())
    return " ".join(words)


def _stated(text: str, pattern: str) -> tuple[str, ...]:
    """The figures a pattern's groups pick out of a text, as written there."""
    match = re.search(pattern, text)
    assert match, f"no text matches {pattern!r}; the text was changed without its test"
    return match.groups()


def _printed(runs, name: str, pattern: str, index: int = 0) -> tuple[float, ...]:
    """The numbers of the index-th printed line that matches (nan for a printed nan)."""
    found = _lines(runs, name, pattern)
    groups = found[index] if isinstance(found[index], tuple) else (found[index],)
    return tuple(float(g) for g in groups)


def _bounds(stated: str) -> tuple[Decimal, Decimal]:
    """The interval a figure claims, by how it is written (the table above)."""
    def unit(figure: str) -> Decimal:
        return Decimal(1).scaleb(Decimal(figure).as_tuple().exponent)

    if stated.startswith("about "):
        figure = stated.removeprefix("about ")
        return Decimal(figure) - unit(figure), Decimal(figure) + unit(figure)
    if stated.startswith("at least "):
        return Decimal(stated.removeprefix("at least ")), Decimal("Infinity")
    if " to " in stated:
        low, high = stated.split(" to ")
        return Decimal(low), Decimal(high)
    return Decimal(stated) - unit(stated) / 2, Decimal(stated) + unit(stated) / 2


def _agrees(printed: float, stated: str, what: str = "", trained: bool = False) -> None:
    """The printed figure is in the interval the stated one claims. A trained figure must be
    stated as one that holds on any CPU's kernels ("about X", "X to Y", "at least X"), any other
    as the figure itself."""
    exact = re.fullmatch(FIGURE, stated) is not None
    assert exact != trained, (
        f"{what}: the text says {stated!r}; a trained figure moves with the CPU's kernels and is "
        f"stated as 'about X', 'X to Y' or 'at least X', any other as the figure itself")
    low, high = _bounds(stated)
    assert math.isfinite(printed) and low <= Decimal(str(float(printed))) <= high, (
        f"{what}: the text says {stated}, the tutorial computes {printed:.6g} (the text claims "
        f"{low} to {high}); correct the text, or the code if the figure is what it should give")


def test_01_gradcheck_names_the_broken_input_and_element(runs):
    name = "01_autograd.py"
    assert _lines(runs, name, r"^gradcheck failed for a \(input 0, shape \(2, 3\)\) at element \(0, 0\)")
    assert _lines(runs, name, r"^gradcheck failed for b \(input 1, shape \(3,\)\) at element \(0,\)")
    assert _lines(runs, name, r"^    3 of 3 elements disagree$")
    assert _lines(runs, name, r"^    pattern: analytic is the negative of numeric: a sign error$")
    assert _lines(runs, name, r"summed over axes \(0,\) of \(2, 3\)\s+\[5, 7, 9\]")


def test_01_the_backward_by_hand_table_is_what_backward_gives(runs):
    """Every row of the markdown table (node, value, dL/dnode) against the printed gradients."""
    name = "01_autograd.py"
    rows = re.findall(r"\| (\w) (?:= [^|]+)?\| (-?\d+) \| (?:[^|]*= )?(-?\d+) \|", _markdown(name))
    assert len(rows) == 7, rows
    printed = dict(_lines(runs, name, rf"^dL/d(\w): by hand +\S+ +backward\(\) +{NUMBER}$"))
    for node, _, grad in rows:
        _agrees(float(printed[node]), grad, what=f"dL/d{node}")
    _agrees(*_printed(runs, name, rf"^L = {NUMBER}$"), rows[0][1], what="L")


def test_01_explore_shows_the_two_gradients_of_x_and_their_sum(runs):
    name = "01_autograd.py"
    steps, row = _stated(_markdown(name), r"from steps (\d+ and \d+) .* whose first row is \[([\d, ]+)\]")
    assert _lines(runs, name, rf"^explore: x gets 2 gradients, from steps {steps}; their sum, 2x \+ b, "
                  rf"has the first row \[{re.escape(row)}\]$")
    assert _lines(runs, name, r"^<ExplorePage: 3 ops, 5 tensors, 0 modules, 3 backward steps>$")


def test_02_prints_the_slide_numbers(runs):
    name = "02_attention_by_hand.py"
    weights, output = _stated(_readme(name), r"weights \[([\d., ]+)\], output \[([\d., ]+)\]")
    (exact,) = _stated(_markdown(name), r"exactly `\[([\d., ]+)\]`")
    assert exact == output
    (w_printed,) = _lines(runs, name, r"^weights\s+\[(.*)\]$")
    (o_printed,) = _lines(runs, name, r"^output\s+\[(.*)\]$")
    for printed, stated in ((w_printed, weights), (o_printed, output)):
        values, claims = printed.split(), stated.split(", ")
        assert len(values) == len(claims)
        for value, claim in zip(values, claims):
            _agrees(float(value), claim, what="the worked example")


def test_03_layer_matches_and_equivariance_holds_without_positions(runs):
    (diff,) = _lines(runs, "03_transformer_layer.py", r"^output \(2, 6, 16\) largest difference: (\S+)")
    assert float(diff) < 1e-6
    (gap,) = _lines(runs, "03_transformer_layer.py", r"^no positions: .* = (\S+)$")
    assert float(gap) < 1e-12


def test_04_trains_and_the_cache_changes_nothing(runs):
    name = "04_gpt.py"
    before, after = _printed(runs, name, rf"validation loss {NUMBER} -> {NUMBER}")
    assert after < before - 1.0
    start, log_v = _printed(runs, name, rf"^validation loss before training: {NUMBER} +\(ln V = {NUMBER}\)")
    assert abs(start - log_v) < 0.1  # "a loss near ln(V)"
    (chars,) = _stated(_markdown(name), r"we keep the first ([\d,]+) characters")
    assert _lines(runs, name, rf"^{chars} characters, ")
    assert _lines(runs, name, r"same tokens: True$") == ["same tokens: True"] * 2
    # the cache's speed-up, quoted from the README's benchmarks/generation.py table
    quoted = _stated(_markdown(name), r"with the cache, (\S+)x the tokens per second of no cache at "
                     r"the `tiny` preset, (\S+)x at `quick`, (\S+)x at `small`")
    readme = (ROOT / "README.md").read_text()
    for preset, figure in zip(("tiny", "quick", "small"), quoted):
        (measured,) = _stated(readme, rf"\| {preset} \| \d+ \| \d+ \| ([\d.]+)x \|")
        _agrees(float(measured), figure, what=f"generation speed-up at {preset}")


def test_05_the_grader_names_each_mistake_then_passes(runs):
    name = "05_attention_backward.py"
    codes = _lines(runs, name, r"^diagnosis: (\w+)$")
    assert codes == ["mask_after_softmax", "missing_rowsum_term", "transposed_grad", "ignores_upstream_grad"]
    assert _lines(runs, name, r"^all \d+ checks passed$")


def test_06_the_bottleneck_and_attention_on_dates(runs):
    name = "06_rnn_encoder_decoder.py"
    row, text = _readme(name), _markdown(name)
    (influence,) = _stated(row, rf"the first source character's influence on the final state is {NUMBER} ")
    (untrained, trained) = _printed(runs, name, rf"untrained {NUMBER}, trained without attention {NUMBER}$")
    _agrees(untrained, influence, what="untrained influence of the first character")
    assert trained > 100 * untrained  # "training taught the GRU's gates to carry the first character"
    with_attn, without = _stated(row, rf"exact match {TRAINED}% vs {TRAINED}%")
    (got_with,) = _printed(runs, name, rf"^attention=True : exact match {NUMBER}%")
    (got_without,) = _printed(runs, name, rf"^attention=False: exact match {NUMBER}%")
    _agrees(got_with, with_attn, "dates with attention", trained=True)
    _agrees(got_without, without, "dates without attention", trained=True)
    assert got_with > got_without + 30
    for alignment in ("dot", "scaled dot"):  # "its weights ([0.79, ...]) are sharper than ([0.67, ...])"
        pattern = r"\*\*dot\*\* .*?weights \(\[([\d., ]+)\]\) .*? scaled version's \(\[([\d., ]+)\]\)"
        stated = _stated(text, pattern)[alignment == "scaled dot"].split(", ")
        (row_printed,) = _lines(runs, name, rf"^{alignment} +\[.*?\] +\[([\d. ]+)\] ")
        for value, claim in zip(row_printed.split(), stated, strict=True):
            _agrees(float(value), claim, what=f"{alignment} weights")
    # the README's quality table, quoted: the plain RNN at the README's budget
    (quoted,) = _stated(text, rf"`hidden_size` 128 give it {NUMBER}%")
    (table,) = _stated((ROOT / "README.md").read_text(),
                       rf"\| `dates-noattn` \| \d+ \| exact match {NUMBER}% \|")
    _agrees(float(table), quoted, what="the README's dates-noattn row, quoted by tutorial 06")


def test_07_greedy_against_beam_half_way_and_trained(runs):
    name = "07_encoder_decoder_transformer.py"
    row = _readme(name)
    greedy, gap, better, trained = _stated(
        row, rf"half-way \(greedy decoding exact for {TRAINED}% of the sources, beam search for {TRAINED} "
             rf"points more; beam finds a more likely output for {TRAINED} of 200 sources, a less likely "
             rf"one for fewer\) and trained \(exact match {TRAINED}%, both\)")
    pattern = {decoder: rf"^  {decoder} +: exact match +{NUMBER}%" for decoder in ("greedy", "beam 4")}
    (got_greedy,) = _printed(runs, name, pattern["greedy"], 0)
    (got_beam,) = _printed(runs, name, pattern["beam 4"], 0)
    _agrees(got_greedy, greedy, "greedy, half-way", trained=True)
    _agrees(round(got_beam - got_greedy, 1), gap, "beam search's lead over greedy, half-way", trained=True)
    got_better, got_worse = _printed(runs, name, r"^beam found a more likely output for (\d+) sources, "
                                                 r"a less likely one for (\d+)$")
    _agrees(got_better, better, "sources where beam search finds a more likely output", trained=True)
    assert got_better > got_worse  # "a less likely one for fewer"
    for decoder in pattern:
        (got,) = _printed(runs, name, pattern[decoder], 1)
        _agrees(got, trained, f"{decoder}, trained", trained=True)


def test_08_masking_pretraining_context_and_fine_tuning(runs):
    name = "08_bert.py"
    row = _readme(name)
    (vocabulary,) = _stated(_markdown(name), r"keeps the ([\d,]+) most frequent tokens")
    assert _lines(runs, name, rf"^vocabulary {vocabulary.replace(',', '')} tokens ")
    claims = _stated(row, rf"masking measured on a batch \({NUMBER}; {NUMBER} / {NUMBER} / {NUMBER}\)")
    for what, claim in zip(("selected", "-> \\[MASK\\]", "-> a random word", "-> unchanged"), claims):
        (value,) = _printed(runs, name, rf"^  {what} .*? {NUMBER}$")
        _agrees(value, claim, what=f"masking: {what}")
    steps, masked, commonest, nsp = _stated(
        row, rf"(\d+) pretraining steps \(masked words {TRAINED}% vs {NUMBER}% for the commonest word, "
             rf"next sentence {TRAINED}%\)")
    assert _lines(runs, name, rf"^{steps} steps in ")
    after = {key: _printed(runs, name, rf"^  {key} +{NUMBER} -> {NUMBER}$")[1]
             for key in ("mlm_acc", "mlm_baseline", "nsp_acc")}
    _agrees(100 * after["mlm_acc"], masked, "masked-word accuracy", trained=True)
    _agrees(100 * after["mlm_baseline"], commonest, "the commonest word's share (the data's, no training)")
    _agrees(100 * after["nsp_acc"], nsp, "next sentence accuracy", trained=True)
    assert after["mlm_acc"] > after["mlm_baseline"] and after["nsp_acc"] > 0.5  # "above the coin flip's 50%"
    (cosine,) = _stated(row, rf"two vectors \(cosine {TRAINED}\), a static embedding one")
    (got,) = _printed(runs, name, rf"^  after encoder layer 1 +verb vs noun: {NUMBER} ")
    _agrees(got, cosine, "cosine of the two vectors of one word", trained=True)
    assert got < 1  # "two vectors"
    static = rf"^static embedding of 'return' in both sentences: cosine {NUMBER}$"
    assert _printed(runs, name, static) == (1.0,)
    pretrained, scratch = _stated(row, rf"{TRAINED}% from the pretrained encoder vs {TRAINED}% from scratch")
    (got_pre,) = _printed(runs, name, rf"^  from the pretrained encoder: {NUMBER}%$")
    (got_scratch,) = _printed(runs, name, rf"^  from scratch: +{NUMBER}%$")
    _agrees(got_pre, pretrained, "fine-tuned from the pretrained encoder", trained=True)
    _agrees(got_scratch, scratch, "fine-tuned from scratch", trained=True)
    assert got_pre > got_scratch
    # the README's quality table, quoted: the quick preset's 3,000 steps
    mlm_quoted, nsp_quoted = _stated(_markdown(name),
                                     rf"reaches {NUMBER}% of masked words and about {NUMBER}%")
    mlm_table, nsp_table = _stated((ROOT / "README.md").read_text(),
                                   rf"masked-word accuracy {NUMBER}% .*?; next sentence {NUMBER}%")
    _agrees(float(mlm_table), mlm_quoted, what="the README's BERT row, quoted by tutorial 08")
    assert abs(float(nsp_table) - float(nsp_quoted)) <= 3, "tutorial 08 quotes the README's BERT row"


def test_09_positions_and_data_matter_and_a_bag_of_patches_ignores_their_order(runs):
    name = "09_vit.py"
    full, bag, small = _stated(_readme(name), rf"training \(test accuracy {TRAINED}\).*? a bag of "
                               rf"patches \({TRAINED}, and .*? it reaches {TRAINED}")
    train, test = _stated(_markdown(name), r"\((\d+) to train on, (\d+) to test on")
    assert _lines(runs, name, rf"^train \({train}, 1, 8, 8\) test \({test}, 1, 8, 8\)$")
    (got_full,) = _printed(runs, name, rf"^600 steps in .* test accuracy {NUMBER}")
    got_bag, same = _printed(runs, name,
                             rf"^no positions: +test accuracy {NUMBER}; .* for {NUMBER}% of the images")
    (got_small,) = _printed(runs, name, rf"^  200 training images: test accuracy {NUMBER}$")
    _agrees(got_full, full, "ViT with positions, 1437 images", trained=True)
    _agrees(got_bag, bag, "ViT without positions", trained=True)
    _agrees(got_small, small, "ViT on 200 images", trained=True)
    assert same == 100 and got_bag < got_full - 0.2 and got_small < got_full - 0.05
    # "fits its images better than the full model fits 1437, and still tests worse"
    fit_small, fit_full = _printed(runs, name, rf"^training loss of the last 20 steps: {NUMBER} on 200 "
                                               rf"images, {NUMBER} on 1437$")
    assert fit_small < fit_full
    near, far = _printed(runs, name, rf"^cosine similarity of position vectors: neighbours {NUMBER}, "
                                     rf"3\+ steps apart {NUMBER}$")
    assert abs(near) < 0.2 and abs(far) < 0.2  # "Both cosine similarities are near zero"


def test_10_post_norm_needs_the_warm_up(runs):
    name = "10_pre_post_norm.py"
    found = dict(_lines(runs, name, rf"^\s+(\S+-norm\s+lr \S+\s+warm-up\s+\d+) steps: {NUMBER}$"))
    losses = {" ".join(key.split()): float(value) for key, value in found.items()}
    assert len(losses) == 5 and all(np.isfinite(list(losses.values()))), losses
    post, pre = losses["post-norm lr 1e-02 warm-up 0"], losses["pre-norm lr 1e-02 warm-up 0"]
    stated_post, stated_pre = _stated(_readme(name), rf"without warm-up: loss {TRAINED} vs {TRAINED}\)")
    _agrees(post, stated_post, "post-norm, lr 1e-2, no warm-up", trained=True)
    _agrees(pre, stated_pre, "pre-norm, lr 1e-2, no warm-up", trained=True)
    assert post > pre + 0.5 and losses["post-norm lr 1e-02 warm-up 50"] < post - 0.5
    assert abs(losses["post-norm lr 1e-03 warm-up 0"] - losses["pre-norm lr 1e-03 warm-up 0"]) < 0.1
    for diff in _lines(runs, name, rf"library vs equations, largest difference {NUMBER}$"):
        assert float(diff) < 1e-6
    text = _markdown(name)
    (size,) = _stated(text, rf"`sqrt\(D\)` = {NUMBER} per token")
    grads = {}
    for norm in ("post-norm", "pre-norm"):
        (sizes,) = _lines(runs, name, rf"^{norm}: stream size entering layers 1..12 +\[([\d. ]+)\]$")
        (grad,) = _lines(runs, name, rf"^{norm}: gradient norm of layers 1..12 +\[([\d. ]+)\]$")
        sizes, grads[norm] = np.array(sizes.split(), float), np.array(grad.split(), float)
        if norm == "post-norm":
            for value in sizes[1:]:
                _agrees(value, size, what="post-norm stream size")
        else:
            assert np.all(np.diff(sizes) > 0)  # "the stream grows with depth"
    (factor,) = _stated(text, r"stay within a factor of (\d+) across the 12 layers")
    assert all(g.max() < float(factor) * g.min() for g in grads.values())
    (ratio,) = _printed(runs, name, rf"^last four layers: post-norm gradients are {NUMBER}x pre-norm's$")
    assert ratio > 1 and grads["post-norm"][-4:].mean() > grads["pre-norm"][-4:].mean()


def test_11_reach_and_the_masking_experiment(runs):
    name = "11_locality_and_explanations.py"
    row = _readme(name)
    (layers,) = _stated(row, r"\"bank\" needs (\d+) kernel-3 convolutions")
    (in_text,) = _stated(_markdown(name), r"\((\w+) kernel-3 layers before \"bank\" can see \"river\"\)")
    (depth,) = _lines(runs, name, r"^first conv depth at which d out_bank / d x_river != 0: (\d+)")
    assert depth == layers == str(WORDS[in_text]) == "7"  # distance 7, kernel 3: one word more per layer
    assert _lines(runs, name, r"^one attention layer: 'bank' depends on 12 of 12 words")
    weight, factor, other = _stated(row, rf"most-attended word \({NUMBER} of the weight\) moves the "
                                    rf"output {NUMBER}x less when masked than a word with {NUMBER}")
    got = _printed(runs, name, rf"^most attended: 'the' \({NUMBER}\); masking it moves the output by "
                   rf"{NUMBER}, masking 'not' \({NUMBER}\) by {NUMBER}: {NUMBER}x more$")
    _agrees(got[0], weight, what="the most-attended word's weight")
    _agrees(got[2], other, what="the other word's weight")
    _agrees(got[4], factor, what="how much more masking the other word moves the output")
    assert got[0] > got[2] and got[3] > 3 * got[1]


def test_12_the_online_softmax_the_tiles_and_the_memory(runs):
    name = "12_long_context.py"
    text = _markdown(name)
    (rescale,) = _stated(text, rf"`c = exp\(3 - 5\) = {NUMBER}`")
    rows = _lines(runs, name, rf"^ +\d +\[[\d. ]+\] +{NUMBER} +{NUMBER} ")
    _agrees(float(rows[1][1]), rescale, what="block 2's rescaling factor")
    assert float(rows[2][1]) == 1.0  # "The third block's largest score, 4, did not (c = 1)"
    for kernel, grows in (("tiled", 2), ("untiled", 4)):  # "doubles ... quadruples"
        (growth,) = _printed(runs, name, rf"^{kernel} +memory at T=1024 / at T=512: {NUMBER}x$")
        assert abs(growth - grows) <= grows / 4, f"{kernel} memory grows {growth}x, said {grows}x"
    # "for long sequences the tiled kernel is also the faster one": a time, so quoted from the
    # README's benchmarks/attention_scaling.py table (the printed times are not compared)
    length, tiled, untiled = _stated(text, rf"at T = (\d+), {NUMBER} ms against {NUMBER} ms")
    table = _stated((ROOT / "README.md").read_text(), rf"\| {length} \| {NUMBER} \| {NUMBER} \|")
    for measured, quoted, kernel in zip(table, (tiled, untiled), ("tiled", "one-pass")):
        _agrees(float(measured), quoted, what=f"the README's {kernel} time at T = {length}, quoted by 12")
    assert float(tiled) < float(untiled)
    from minigrad.nn.attention.dispatch import TILED_MIN_LENGTH, TILED_MIN_SCORES
    scores, length = _stated(text, r"tiled kernel from 2\^(\d+) scores .*? at least (\d+),")
    assert (2 ** int(scores), int(length)) == (TILED_MIN_SCORES, TILED_MIN_LENGTH)


def test_13_receptive_fields_the_sweeps_and_the_captioner(runs):
    name = "13_cnn_and_captioning.py"
    row, text = _readme(name), _markdown(name)
    # section 1: the windows of 1, 2, 3 stacked 3x3 convolutions and the parameter counts
    stated = _stated(row, r"(\d), (\d), (\d) stacked 3x3 convolutions see windows (\d), (\d), (\d) "
                          r"pixels wide")
    for depth, width in zip(stated[:3], stated[3:]):
        got = _printed(runs, name, rf"^{depth} stacked 3x3 conv\(s\): out\[5, 5\] depends on a {NUMBER} x "
                                   rf"{NUMBER} window")
        assert got == (float(width), float(width)), (depth, got)
    assert "outside its 3 x 3 patch" in row  # three rows of 11 pixels with three ones each, the rest zero
    assert len(_lines(runs, name, r"^ \[0 0 0 0 1 1 1 0 0 0 0\]$")) == 3
    assert len(_lines(runs, name, r"^ ?\[?\[0 0 0 0 0 0 0 0 0 0 0\]\]?$")) == 8
    conv, dense = _stated(row, r"weight sharing \(([\d,]+) parameters against a dense layer's ([\d,]+)\)")
    got_conv, got_dense = _lines(runs, name, r"^parameters for \(1, 8, 8\) -> \(16, 8, 8\): conv ([\d,]+), "
                                             r"dense ([\d,]+) ")[0]
    assert (got_conv, got_dense) == (conv, dense)
    # section 3: the in-tutorial sweep (trained) and the saved full sweep (read from its file)
    cnn_few, vit_few, cnn_all, vit_all = _stated(
        row, rf"same 200 steps \({TRAINED} vs {TRAINED} on 100 images, {TRAINED} vs {TRAINED} on 1437\)")
    (steps,) = _stated(text, r"the same budget: (\d+) steps of 32 images")
    assert steps == "200" and _lines(runs, name, rf"^4 runs of {steps} steps in ")
    for model, few, full in (("CNN", cnn_few, cnn_all), ("ViT", vit_few, vit_all)):
        got_few, got_full = _printed(runs, name, rf"^{model}: [\d,]+ parameters; test accuracy {NUMBER} on "
                                                 rf"100 images, {NUMBER} on 1437$")
        _agrees(got_few, few, f"{model}, 200 steps on 100 images", trained=True)
        _agrees(got_full, full, f"{model}, 200 steps on 1437 images", trained=True)
    table = {int(n): (cnn, vit) for n, cnn, vit in _lines(runs, name, rf"^ +(\d+) +{NUMBER}% +{NUMBER}%$")}
    assert sorted(table) == [100, 200, 500, 1437]
    for quoted in (_stated(row, rf"\({NUMBER}% vs {NUMBER}% on 100 images, {NUMBER}% vs {NUMBER}% on 1437\)"),
                   _stated(text, rf"on 100 images the CNN reaches {NUMBER}% against the ViT's {NUMBER}%, on "
                                 rf"all 1437 images {NUMBER}% against {NUMBER}%")):
        for (cnn, vit), n in zip((quoted[:2], quoted[2:]), (100, 1437)):
            _agrees(float(table[n][0]), cnn, what=f"the saved sweep, CNN on {n} images")
            _agrees(float(table[n][1]), vit, what=f"the saved sweep, ViT on {n} images")
    cnn_k, vit_k = _stated(text, r"\(about (\d+)k and (\d+)k parameters\)")
    got = _lines(runs, name, r"^parameters: CNN ([\d,]+), ViT ([\d,]+)$")[0]
    assert [round(int(g.replace(",", "")) / 1000) for g in got] == [int(cnn_k), int(vit_k)]
    # section 4: the captioner
    grid, cells, size = _stated(text, r"a (\d) x \1 grid of (\d+)-number feature vectors: each of the "
                                      r"(\d+) cells")
    assert _lines(runs, name, rf"feature grid {grid} x {grid} = {size} annotations of {cells}$")
    assert f"{grid} x {grid} grid of CNN features" in row
    (steps,) = _stated(row, r"trained for (\d+) steps")
    assert _stated(text, r"We train the `quick` preset for (\d+) steps") == (steps,)
    assert _lines(runs, name, rf"^{steps} steps in ")
    exact, share = _stated(row, rf"\(exact match {TRAINED}%; {TRAINED} of a digit word's attention")
    got_exact, got_share = _printed(runs, name, rf"^test: exact match {NUMBER}% .*attention on the named "
                                                rf"digit's box {NUMBER}$")
    _agrees(got_exact, exact, "the captioner's exact match", trained=True)
    _agrees(got_share, share, "the captioner's attention share", trained=True)
    # the annotation's window: in the README row and in the text, as printed (no training in it)
    window, cell = _stated(row, r"depends on an (\d+) x \1 window of pixels, not its (\d) x \2 cell")
    assert _stated(text, r"A cell covers (\d) x \1 pixels of the 24 x 24 picture, but its annotation depends "
                         r"on an (\d+) x \2 window") == (cell, window)
    assert _lines(runs, name, rf"\({cell} x {cell}\); its annotation depends on a {window} x {window} window")


def test_14_hessian_products_softmax_curvature_penalty_and_newton(runs):
    name = "14_backprop_through_backprop.py"
    row, text = _readme(name), _markdown(name)
    # section 1: H v by hand, by two backward passes and by functional.hvp
    (first,) = _stated(text, rf"2 − 0\.4794 = {NUMBER}\.")
    assert _stated(row, rf"\(first entry {NUMBER}\)") == (first,)
    for how in ("by hand", "by two backwards", "by functional.hvp"):
        (got,) = _printed(runs, name, rf"^H v {how}: +\[ *{NUMBER} ")
        _agrees(got, first, what=f"H v {how}, first entry")
    # section 2: the softmax's second derivative
    p0, d2 = _stated(text, rf"p_0 is {NUMBER}, and ∂²p_0/∂s_0² = p_0\(1 − p_0\)\(1 − 2p_0\) = (−{FIGURE})")
    assert _stated(row, rf"p_0 = {NUMBER}, its second derivative in its own score (−{FIGURE})") == (p0, d2)
    (got_p0,) = _printed(runs, name, rf"^p = \[{NUMBER} ")
    _agrees(got_p0, p0, what="p_0")
    (got_d2,) = _printed(runs, name, rf"^d2 p_0 / d s_0\^2 = {NUMBER}$")
    _agrees(got_d2, d2.replace("−", "-"), what="d2 p_0 / d s_0^2")
    p = got_p0
    assert abs(p * (1 - p) * (1 - 2 * p) - got_d2) < 1e-4  # the closed form the text gives
    assert _lines(runs, name, r"^gradgradcheck of attention with respect to q, k and v: True$")
    # section 3: the gradient penalty
    start, end = _stated(text, rf"The penalty, {NUMBER} at the start, is {TRAINED} after the 80 steps")
    assert _stated(row, rf"\({NUMBER} at the start, {TRAINED} after 80 steps\)") == (start, end)
    before, after = _printed(runs, name, rf"^penalty: {NUMBER} before, {NUMBER} after 80 steps$")
    _agrees(before, start, what="the penalty before training")
    _agrees(after, end, what="the penalty after 80 steps", trained=True)
    mean_before, mean_after = _stated(text, rf"the mean of the norms goes from {NUMBER} to {TRAINED}\)")
    got_before, got_after = _printed(runs, name,
                                     rf"^input-gradient norms: mean {NUMBER} before, {NUMBER} after$")
    _agrees(got_before, mean_before, what="the mean input-gradient norm before training")
    _agrees(got_after, mean_after, what="the mean input-gradient norm after training", trained=True)
    # section 4: Newton's method
    norms = _stated(text, rf"The gradient's norm goes {NUMBER}, {NUMBER}, {NUMBER}, {NUMBER}:")
    assert _stated(row, rf"\(gradient norms {NUMBER}, {NUMBER}, {NUMBER}, {NUMBER}\)") == norms
    rows = _lines(runs, name, rf"^ +(\d) +{NUMBER} +{NUMBER}$")
    for (step, _, norm), stated in zip(rows, norms):
        _agrees(float(norm), stated, what=f"the gradient's norm at Newton step {step}")
    newton, descent = _stated(text, rf"After five steps the loss is {NUMBER}, where gradient descent with a "
                                    rf"step of 1 is still at {NUMBER}\.")
    got_newton, got_descent = _printed(runs, name, rf"^after 5 steps: Newton {NUMBER}, gradient descent "
                                                   rf"\(lr 1\) {NUMBER}$")
    _agrees(got_newton, newton, what="the loss after five Newton steps")
    _agrees(got_descent, descent, what="the loss after five steps of gradient descent")
    # section 5: the ops of the backward pass, as drawn
    (ops,) = _lines(runs, name, r"^the ops of the backward pass: (.+)$")
    assert ops.split(", ") == ["Add", "Cos", "Mul", "Sin"]
    assert "a Cos, a Mul, a Sin and an Add" in text
    assert _lines(runs, name, r"^gradcheck: True$")
    assert _lines(runs, name, r"pattern: the analytic gradient is all zero")
