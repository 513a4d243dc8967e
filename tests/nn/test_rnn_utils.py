"""nn.utils.rnn: padding and packing variable-length sequences, and the recurrent layers on a
PackedSequence: gradients through packing, values and gradients against torch for drawn
lengths, orders and layouts, and the errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as nn
from minigrad.nn.utils import rnn

fewer = settings(max_examples=max(5, settings.default.max_examples // 4), deadline=None)


@st.composite
def batches(draw):
    """(lengths, T): 1 to 4 sequences of 1 to 5 steps, in any order; T at least the longest."""
    lengths = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    return lengths, max(lengths) + draw(st.integers(0, 1))


@fewer
@given(batches(), st.booleans())
def test_pack_then_pad_is_the_identity_on_real_steps_and_gradcheck(case, batch_first):
    lengths, T = case
    B = len(lengths)
    x = np.random.default_rng(0).standard_normal((B, T, 2) if batch_first else (T, B, 2))

    def roundtrip(t):
        packed = rnn.pack_padded_sequence(t, lengths, batch_first=batch_first, enforce_sorted=False)
        out, got = rnn.pad_packed_sequence(packed, batch_first=batch_first, total_length=T)
        assert got.tolist() == lengths and out.shape == t.shape
        return out

    out = roundtrip(mg.tensor(x)).numpy()
    steps = np.arange(T)[None, :] < np.array(lengths)[:, None]  # (B, T)
    mask = steps if batch_first else steps.T
    np.testing.assert_array_equal(out[mask], x[mask])
    assert np.all(out[~mask] == 0)
    assert mg.gradcheck(roundtrip, [mg.tensor(x, requires_grad=True)])


def test_pad_sequence_sides_values_and_errors():
    a, b = mg.ones(2, 3), mg.full((4, 3), 2.0)
    assert rnn.pad_sequence([a, b]).shape == (4, 2, 3)
    left = rnn.pad_sequence([a, b], batch_first=True, padding_value=-1.0, padding_side="left")
    assert left[0, :, 0].tolist() == [-1.0, -1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="padding_side must be 'left' or 'right', not 'top'"):
        rnn.pad_sequence([a], padding_side="top")
    with pytest.raises(ValueError, match="same trailing shape"):
        rnn.pad_sequence([a, mg.ones(2, 4)])
    with pytest.raises(ValueError, match="empty list"):
        rnn.pad_sequence([])
    with pytest.raises(RuntimeError, match="sorted in decreasing order when `enforce_sorted` is True"):
        rnn.pack_padded_sequence(mg.zeros(3, 2, 1), [1, 3])
    with pytest.raises(ValueError, match="got 3 lengths for a batch of 2 sequences"):
        rnn.pack_padded_sequence(mg.zeros(3, 2, 1), [3, 2, 1])
    with pytest.raises(ValueError, match="longer than the input's 3 steps"):
        rnn.pack_padded_sequence(mg.zeros(3, 2, 1), [4, 1])
    with pytest.raises(ValueError, match="at least 1"):
        rnn.pack_padded_sequence(mg.zeros(3, 2, 1), [3, 0])
    with pytest.raises(ValueError, match="total_length to be at least"):
        rnn.pad_packed_sequence(rnn.pack_sequence([mg.ones(3, 1)]), total_length=2)
    seqs = [mg.ones(1, 2), mg.full((3, 2), 2.0), mg.full((2, 2), 3.0)]
    back = rnn.unpack_sequence(rnn.pack_sequence(seqs, enforce_sorted=False))
    assert [s.numpy().tolist() for s in back] == [s.numpy().tolist() for s in seqs]


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_a_packed_batch_gives_each_sequence_its_own_final_state(kind):
    """Each sequence of a packed batch ends as if run alone on its real steps."""
    mg.manual_seed(0)
    layer = getattr(nn, kind)(2, 3, bidirectional=True, batch_first=True).double()
    rng = np.random.default_rng(1)
    seqs = [rng.standard_normal((n, 2)) for n in (3, 1, 4)]
    packed = rnn.pack_sequence([mg.tensor(s) for s in seqs], enforce_sorted=False)
    out, state = layer(packed)
    h_n = state[0] if kind == "LSTM" else state
    padded, lengths = rnn.pad_packed_sequence(out, batch_first=True)
    assert isinstance(out, rnn.PackedSequence) and lengths.tolist() == [3, 1, 4]
    for b, s in enumerate(seqs):
        alone, alone_state = layer(mg.tensor(s[None]))
        alone_h = alone_state[0] if kind == "LSTM" else alone_state
        np.testing.assert_allclose(padded[b, :len(s)].numpy(), alone[0].numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(h_n[:, b].numpy(), alone_h[:, 0].numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@fewer
@given(case=batches(), bidirectional=st.booleans(), batch_first=st.booleans(), sort=st.booleans())
def test_packed_recurrent_layers_against_torch(kind, case, bidirectional, batch_first, sort):
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    from torch.nn.utils import rnn as trnn

    lengths, T = case
    if sort:
        lengths = sorted(lengths, reverse=True)
    B = len(lengths)
    theirs = getattr(torch.nn, kind)(2, 3, num_layers=2, bidirectional=bidirectional,
                                     batch_first=batch_first).double()
    mine = getattr(nn, kind)(2, 3, num_layers=2, bidirectional=bidirectional,
                             batch_first=batch_first).double()
    mine.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((B, T, 2) if batch_first else (T, B, 2))
    h0 = np.random.default_rng(3).standard_normal((2 * (1 + bidirectional), B, 3))
    results = []
    for lib, R, layer in ((mg, rnn, mine), (torch, trnn, theirs)):
        xt, ht = lib.tensor(x, requires_grad=True), lib.tensor(h0, requires_grad=True)
        packed = R.pack_padded_sequence(xt, lengths, batch_first=batch_first, enforce_sorted=sort)
        out, state = layer(packed, (ht, ht * 0.5) if kind == "LSTM" else ht)
        h_n = state[0] if kind == "LSTM" else state
        padded, _ = R.pad_packed_sequence(out, batch_first=batch_first)
        (padded.sin().sum() + (h_n * h_n).sum()).backward()
        results.append([padded.detach().numpy(), h_n.detach().numpy(), out.batch_sizes.numpy(),
                        xt.grad.numpy(), ht.grad.numpy(), layer.weight_hh_l0.grad.numpy()])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
