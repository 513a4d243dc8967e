"""minigrad.utils.data against torch.utils.data: the batches default_collate makes (structure,
shapes, dtypes, values), len(DataLoader), the batches of a stream, random_split's lengths for
fractions, the errors both raise, and the signatures."""

from __future__ import annotations

import inspect
from collections import namedtuple

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import torch.utils.data as torch_data  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.utils.data as data  # noqa: E402

Point = namedtuple("Point", ["x", "y"])


def _structure(batch):
    """A batch with each tensor replaced by its shape, dtype and values; containers kept."""
    if isinstance(batch, (mg.Tensor, torch.Tensor)):
        values = batch.detach().numpy() if isinstance(batch, torch.Tensor) else batch.numpy()
        return ("tensor", tuple(batch.shape), str(batch.dtype).removeprefix("torch."), values.tolist())
    if isinstance(batch, dict):
        return {k: _structure(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return (type(batch).__name__, [_structure(v) for v in batch])
    return batch


def _tensors(make):
    """Samples of each kind, with `make(array)` as the library's tensor constructor."""
    rows = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    return {
        "float32 tensors": [make(r) for r in rows],
        "int64 tensors": [make(np.arange(4) + i) for i in range(3)],
        "0-d tensors": [make(np.float64(i)) for i in range(3)],
        "bool tensors": [make(np.array([True, False])) for _ in range(2)],
        "tuple of tensor and int": [(make(r[0]), i) for i, r in enumerate(rows)],
        "dict": [{"x": make(r), "label": i, "name": f"s{i}"} for i, r in enumerate(rows)],
        "namedtuple": [Point(make(r[1]), float(i)) for i, r in enumerate(rows)],
        "list": [[make(r[0]), [i, "a"]] for i, r in enumerate(rows)],
    }


PLAIN = {
    "python floats": [1.0, 2.5, -3.0],
    "python ints": [1, 2, 3],
    "python bools": [True, False, True],
    "an int then a float": [1, 2.5],
    "strings": ["a", "b"],
    "numpy float64 arrays": [np.zeros(3), np.ones(3)],
    "numpy int32 arrays": [np.arange(2, dtype=np.int32)] * 3,
    "numpy float32 scalars": [np.float32(1), np.float32(2)],
    "numpy int64 scalars": [np.int64(1), np.int64(2)],
    "numpy bools": [np.bool_(True), np.bool_(False)],
    "tuple of numbers": [(1, 2.0), (3, 4.0)],
    "dict of numbers": [{"a": 1, "b": 0.5}, {"a": 2, "b": 1.5}],
    "namedtuple of numbers": [Point(1, 2.0), Point(3, 4.0)],
}


@pytest.mark.parametrize("kind", list(_tensors(np.asarray)))
def test_collated_tensors_match_torch(kind):
    ours = data.default_collate(_tensors(mg.tensor)[kind])
    theirs = torch_data.default_collate(_tensors(torch.tensor)[kind])
    assert _structure(ours) == _structure(theirs)


@pytest.mark.parametrize("kind", list(PLAIN))
def test_collated_numbers_arrays_and_containers_match_torch(kind):
    ours, theirs = data.default_collate(PLAIN[kind]), torch_data.default_collate(PLAIN[kind])
    assert _structure(ours) == _structure(theirs)


@pytest.mark.parametrize("sample", [np.arange(3), np.float64(2.0), (np.zeros(2), 1, "s"), {"k": np.ones(2)},
                                    Point(np.zeros(1), 2), [np.int32(4), "t"], "text", 7],
                         ids=["array", "scalar", "tuple", "dict", "namedtuple", "list", "str", "int"])
def test_default_convert_matches_torch(sample):
    assert _structure(data.default_convert(sample)) == _structure(torch_data.default_convert(sample))


class Squares:
    """A map-style dataset both libraries accept: sample i is (i, float(i * i))."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i, float(i * i)


# batch_size=None with drop_last=True is an error (tested below), so not among the batchings
BATCHINGS = [(b, d) for b in (1, 3, 4, 16, None) for d in (False, True) if b is not None or not d]
STREAM_BATCHINGS = [(b, d) for b in (2, 3, None) for d in (False, True) if b is not None or not d]


@pytest.mark.parametrize("n", [0, 1, 5, 16, 17])
@pytest.mark.parametrize("batch_size, drop_last", BATCHINGS)
def test_len_and_batches_of_a_loader_match_torch(n, batch_size, drop_last):
    ours = data.DataLoader(Squares(n), batch_size=batch_size, drop_last=drop_last)
    theirs = torch_data.DataLoader(Squares(n), batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert [_structure(b) for b in ours] == [_structure(b) for b in theirs]


def _stream(base):
    class Stream(base):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n

    return Stream


@pytest.mark.parametrize("n", [0, 1, 7, 9])
@pytest.mark.parametrize("batch_size, drop_last", STREAM_BATCHINGS)
def test_a_stream_batches_as_in_torch(n, batch_size, drop_last):
    ours = data.DataLoader(_stream(data.IterableDataset)(n), batch_size=batch_size, drop_last=drop_last)
    theirs = torch_data.DataLoader(_stream(torch_data.IterableDataset)(n), batch_size=batch_size,
                                   drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert [_structure(b) for b in ours] == [_structure(b) for b in theirs]


def test_samplers_give_torchs_counts():
    for ours, theirs in [
        (data.BatchSampler(range(10), 3, False), torch_data.BatchSampler(range(10), 3, False)),
        (data.BatchSampler(range(10), 3, True), torch_data.BatchSampler(range(10), 3, True)),
        (data.SequentialSampler(range(4)), torch_data.SequentialSampler(range(4))),
    ]:
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    for kwargs in [{}, {"num_samples": 7}, {"replacement": True, "num_samples": 70}]:
        ours, theirs = data.RandomSampler(range(5), **kwargs), torch_data.RandomSampler(range(5), **kwargs)
        assert len(ours) == len(theirs) == len(list(ours)) == len(list(theirs))


@pytest.mark.filterwarnings("ignore:Length of split")
@pytest.mark.parametrize("n", [0, 1, 2, 7, 10, 11, 100, 101])
@pytest.mark.parametrize("fractions", [[0.5, 0.5], [0.8, 0.2], [0.33, 0.33, 0.34], [0.1] * 10,
                                       [0.7, 0.2, 0.1], [1.0], [0.25, 0.75]])
def test_random_split_lengths_match_torch(n, fractions):
    ours = [len(p) for p in data.random_split(range(n), fractions)]
    theirs = [len(p) for p in torch_data.random_split(range(n), fractions)]
    assert ours == theirs


@pytest.mark.parametrize("make", [
    pytest.param(lambda lib: lib.DataLoader(Squares(4), num_workers=-1), id="negative-workers"),
    pytest.param(lambda lib: lib.DataLoader(Squares(4), shuffle=True, sampler=[0]), id="shuffle-and-sampler"),
    pytest.param(lambda lib: lib.DataLoader(Squares(4), batch_sampler=[[0]], drop_last=True),
                 id="batch-sampler-and-drop-last"),
    pytest.param(lambda lib: lib.DataLoader(Squares(4), batch_size=None, drop_last=True),
                 id="no-batch-drop-last"),
    pytest.param(lambda lib: lib.DataLoader(Squares(4), batch_size=0), id="batch-size-0"),
    pytest.param(lambda lib: lib.DataLoader(Squares(0), shuffle=True), id="shuffle-empty"),
    pytest.param(lambda lib: lib.random_split(range(10), [3, 4]), id="split-lengths"),
    pytest.param(lambda lib: lib.random_split(range(10), [1.5, -0.5]), id="split-fractions"),
    pytest.param(lambda lib: lib.WeightedRandomSampler([[1.0]], 1), id="weights-2d"),
])
def test_the_same_mistakes_raise_the_same_errors(make):
    with pytest.raises(ValueError) as ours:
        make(data)
    with pytest.raises(ValueError):
        make(torch_data)
    assert str(ours.value)


def test_collate_mismatches_raise_runtime_errors_as_torch():
    for lib, make in [(data, mg.zeros), (torch_data, torch.zeros)]:
        with pytest.raises(RuntimeError, match="at entry 0 and"):
            lib.default_collate([make(3), make(4)])
        with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
            lib.default_collate([(1, 2), (1, 2, 3)])


def _parameters(fn):
    target = fn.__init__ if isinstance(fn, type) else fn
    return [(p.name, p.kind, p.default) for p in inspect.signature(target).parameters.values()]


@pytest.mark.parametrize("name", ["DataLoader", "TensorDataset", "ConcatDataset", "ChainDataset", "Subset",
                                  "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
                                  "WeightedRandomSampler", "BatchSampler", "default_collate",
                                  "default_convert", "get_worker_info", "random_split"])
def test_signatures_are_torchs(name):
    ours, theirs = _parameters(getattr(data, name)), _parameters(getattr(torch_data, name))
    if name == "random_split":  # torch's default is its default generator; minigrad's None is the global one
        ours, theirs = ours[:-1] + [ours[-1][:2]], theirs[:-1] + [theirs[-1][:2]]
    assert ours == theirs
