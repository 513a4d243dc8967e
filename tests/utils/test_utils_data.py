"""minigrad.utils.data on its own: datasets, samplers, collation, the DataLoader's batches and
errors, and a training loop fed by a DataLoader (tests/utils/test_data_vs_torch.py compares with
PyTorch)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim
import minigrad.utils
import minigrad.utils.data as data

Point = namedtuple("Point", ["x", "y"])


class Squares(data.Dataset):
    """Sample i is (i, i * i): a map-style dataset written as a course writes one."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[int, int]:
        return i, i * i


class Stream(data.IterableDataset):
    def __init__(self, n: int, with_len: bool = True) -> None:
        self.n, self.with_len = n, with_len

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        if not self.with_len:
            raise TypeError("no len")
        return self.n


def _order(loader: data.DataLoader) -> list[int]:
    return [int(i) for batch in loader for i in batch[0].tolist()]


# ---------------------------------------------------------------------------------- the package


def test_the_package_gives_the_module():
    assert minigrad.utils.data is data
    assert set(data.__all__) >= {"DataLoader", "Dataset", "TensorDataset", "default_collate", "random_split"}
    for name in data.__all__:
        doc = getattr(data, name).__doc__
        assert doc and doc.strip(), f"{name} has no docstring"


# ---------------------------------------------------------------------------------- datasets


def test_dataset_base_needs_getitem_and_adds_into_a_concat():
    with pytest.raises(NotImplementedError):
        data.Dataset()[0]
    both = Squares(3) + Squares(2)
    assert isinstance(both, data.ConcatDataset)
    assert len(both) == 5
    assert [both[i] for i in range(5)] == [(0, 0), (1, 1), (2, 4), (0, 0), (1, 1)]
    assert both[-1] == (1, 1) and both[-5] == (0, 0)
    assert both.cumulative_sizes == [3, 5]
    with pytest.raises(ValueError, match="-6"):
        both[-6]


def test_concat_refuses_no_datasets_and_streams():
    with pytest.raises(ValueError, match="empty"):
        data.ConcatDataset([])
    with pytest.raises(TypeError, match="ChainDataset"):
        data.ConcatDataset([Squares(2), Stream(2)])


def test_iterable_datasets_add_into_a_chain():
    chain = Stream(2) + Stream(3)
    assert isinstance(chain, data.ChainDataset)
    assert list(chain) == [0, 1, 0, 1, 2]
    assert len(chain) == 5
    with pytest.raises(NotImplementedError):
        iter(data.IterableDataset())


def test_tensor_dataset_gives_rows_of_each_tensor():
    x, y = mg.arange(12).reshape(4, 3), mg.tensor([0, 1, 0, 1])
    ds = data.TensorDataset(x, y)
    assert len(ds) == 4
    xi, yi = ds[2]
    np.testing.assert_array_equal(xi.numpy(), [6, 7, 8])
    assert yi.item() == 0
    assert ds.tensors[0] is x


def test_tensor_dataset_names_the_mismatched_sizes():
    with pytest.raises(ValueError, match=r"\[4, 3\]"):
        data.TensorDataset(mg.zeros(4, 2), mg.zeros(3))
    with pytest.raises(ValueError, match="tensor 1 is 0-d"):
        data.TensorDataset(mg.zeros(4), mg.tensor(1.0))


def test_subset_maps_its_indices():
    sub = data.Subset(Squares(10), [7, 2, 5])
    assert len(sub) == 3
    assert sub[0] == (7, 49) and sub[-1] == (5, 25)
    assert sub.__getitems__([2, 0]) == [(5, 25), (7, 49)]
    t = data.Subset(data.TensorDataset(mg.arange(10)), [3, 1])
    np.testing.assert_array_equal(t[[0, 1]][0].numpy(), [3, 1])  # a list index goes to the dataset at once


def test_a_subset_subclass_getitem_is_what_the_loader_uses():
    class Doubled(data.Subset):
        def __getitem__(self, i):
            return 2 * self.dataset[self.indices[i]][0]

    loader = data.DataLoader(Doubled(Squares(5), [4, 3]), batch_size=2)
    assert next(iter(loader)).tolist() == [8, 6]


def test_random_split_by_lengths_partitions_the_dataset():
    parts = data.random_split(range(10), [3, 7], generator=mg.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    again = data.random_split(range(10), [3, 7], generator=mg.Generator().manual_seed(0))
    assert [p.indices for p in again] == [p.indices for p in parts]


def test_random_split_by_fractions_follows_torchs_rounding():
    # floor(10 * 0.33) = 3 each, and the one left over goes to the first part
    assert [len(p) for p in data.random_split(range(10), [0.33, 0.33, 0.34])] == [4, 3, 3]
    assert [len(p) for p in data.random_split(range(7), [0.5, 0.5])] == [4, 3]
    with pytest.warns(UserWarning, match="index 1 is 0"):
        parts = data.random_split(range(2), [0.9, 0.1])
    assert [len(p) for p in parts] == [2, 0]


def test_random_split_uses_the_global_generator_without_one():
    mg.manual_seed(5)
    first = [p.indices for p in data.random_split(range(8), [4, 4])]
    mg.manual_seed(5)
    assert [p.indices for p in data.random_split(range(8), [4, 4])] == first


def test_random_split_names_lengths_that_do_not_add_up():
    with pytest.raises(ValueError, match=r"\[3, 4\] add up to 7, but the dataset has 10"):
        data.random_split(range(10), [3, 4])
    with pytest.raises(ValueError, match=r"\[0.5, 0.6\] add up to 1.1"):
        data.random_split(range(10), [0.5, 0.6])
    with pytest.raises(ValueError, match="fraction at index 1 is -0.25"):
        data.random_split(range(10), [0.75, -0.25, 0.5])
    with pytest.raises(ValueError, match=r"\[12, -2\]"):
        data.random_split(range(10), [12, -2])


def test_get_worker_info_is_none_in_the_main_process():
    assert data.get_worker_info() is None


# ---------------------------------------------------------------------------------- samplers


def test_sequential_sampler():
    s = data.SequentialSampler(range(4))
    assert list(s) == [0, 1, 2, 3] and len(s) == 4
    with pytest.raises(NotImplementedError):
        iter(data.Sampler())


def test_random_sampler_permutes_and_repeats_with_its_generator():
    s = data.RandomSampler(range(10), generator=mg.Generator().manual_seed(3))
    first, second = list(s), list(s)
    assert sorted(first) == sorted(second) == list(range(10))
    assert first != second  # a new permutation each pass
    assert first == list(data.RandomSampler(range(10), generator=mg.Generator().manual_seed(3)))
    longer = list(data.RandomSampler(range(4), num_samples=10, generator=mg.Generator()))
    assert len(longer) == 10 and sorted(longer[:4]) == sorted(longer[4:8]) == [0, 1, 2, 3]
    drawn = list(data.RandomSampler(range(3), replacement=True, num_samples=100))
    assert len(drawn) == 100 and set(drawn) == {0, 1, 2}


def test_random_sampler_errors():
    with pytest.raises(ValueError, match="num_samples=0"):
        data.RandomSampler(range(0))
    with pytest.raises(TypeError, match="replacement=1"):
        data.RandomSampler(range(3), replacement=1)
    with pytest.raises(TypeError, match="generator must be a minigrad.Generator"):
        data.RandomSampler(range(3), generator=object())


def test_subset_random_sampler_draws_only_its_indices():
    s = data.SubsetRandomSampler([10, 20, 30], generator=mg.Generator().manual_seed(1))
    assert sorted(s) == [10, 20, 30] and len(s) == 3


def test_weighted_random_sampler():
    g = mg.Generator().manual_seed(0)
    drawn = list(data.WeightedRandomSampler([0.0, 1.0, 3.0], 400, generator=g))
    assert len(drawn) == 400 and 0 not in drawn
    assert 240 < drawn.count(2) < 360  # 3/4 of the draws, give or take
    once = list(data.WeightedRandomSampler([5.0, 0.0, 1.0, 0.0], 4, replacement=False, generator=g))
    assert sorted(once) == [0, 1, 2, 3] and set(once[:2]) == {0, 2}  # zero weights come last
    s = data.WeightedRandomSampler(mg.tensor([1.0, 2.0]), 3)
    assert s.weights.dtype == np.float64 and len(s) == 3


def test_weighted_random_sampler_errors():
    with pytest.raises(ValueError, match="num_samples=0"):
        data.WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match=r"shape \(1, 2\)"):
        data.WeightedRandomSampler([[1.0, 2.0]], 1)
    with pytest.raises(RuntimeError, match="non-negative"):
        list(data.WeightedRandomSampler([1.0, -1.0], 1))
    with pytest.raises(RuntimeError, match="add up to 0.0"):
        list(data.WeightedRandomSampler([0.0, 0.0], 1))
    with pytest.raises(RuntimeError, match="cannot draw 3 indices without replacement from 2"):
        list(data.WeightedRandomSampler([1.0, 1.0], 3, replacement=False))


def test_batch_sampler():
    assert list(data.BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(data.BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(data.BatchSampler(range(7), 3, False)) == 3 and len(data.BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size=0"):
        data.BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last=None"):
        data.BatchSampler(range(3), 2, None)


# ---------------------------------------------------------------------------------- collation


def test_collate_stacks_tensors_along_a_new_first_axis():
    batch = data.default_collate([mg.full((2, 3), float(i)) for i in range(4)])
    assert isinstance(batch, mg.Tensor)
    assert batch.shape == (4, 2, 3) and batch.dtype == np.float32
    np.testing.assert_array_equal(batch.numpy()[:, 0, 0], [0, 1, 2, 3])


def test_collated_batches_do_not_track_gradients():
    w = mg.ones(3, requires_grad=True)
    batch = data.default_collate([w * 2, w * 3])
    assert not batch.requires_grad and batch.grad_fn is None


def test_collate_numbers_arrays_and_strings():
    floats, ints, bools = (data.default_collate(b) for b in ([1.0, 2.5], [1, 2], [True, False]))
    assert floats.dtype == np.float64 and ints.dtype == np.int64 and bools.dtype == np.bool_
    assert ints.tolist() == [1, 2] and bools.tolist() == [True, False]
    arrays = data.default_collate([np.zeros((2,), np.float64), np.ones((2,), np.float64)])
    assert arrays.shape == (2, 2) and arrays.dtype == np.float64
    scalars = data.default_collate([np.float32(1), np.float32(2)])
    assert scalars.dtype == np.float32 and scalars.shape == (2,)
    assert data.default_collate(["a", "b"]) == ["a", "b"]


def test_collate_containers():
    x, y = data.default_collate([(mg.zeros(3), 0), (mg.ones(3), 1)])  # a tuple: a list of columns
    assert x.shape == (2, 3) and y.tolist() == [0, 1]
    d = data.default_collate([{"a": 1.0, "s": "u"}, {"a": 2.0, "s": "v"}])
    assert d["a"].tolist() == [1.0, 2.0] and list(d["s"]) == ["u", "v"]
    p = data.default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.dtype == np.int64 and p.y.dtype == np.float64
    nested = data.default_collate([[1, [2.0]], [3, [4.0]]])
    assert isinstance(nested, list) and nested[0].tolist() == [1, 3] and nested[1][0].tolist() == [2.0, 4.0]


def test_collate_names_the_mismatched_shapes():
    with pytest.raises(RuntimeError, match=r"\(3,\) at entry 0 and \(4,\) at entry 2"):
        data.default_collate([mg.zeros(3), mg.zeros(3), mg.zeros(4)])
    with pytest.raises(RuntimeError, match="equal size, but got 2 at entry 0 and 3 at entry 1"):
        data.default_collate([(1, 2), (1, 2, 3)])
    with pytest.raises(TypeError, match="found <class 'object'>"):
        data.default_collate([object()])
    with pytest.raises(TypeError, match="<U1"):
        data.default_collate([np.array(["a"])])


def test_default_convert_makes_numpy_values_tensors():
    t = data.default_convert(np.arange(3))
    assert isinstance(t, mg.Tensor) and t.dtype == np.int64
    assert data.default_convert(np.float64(1.5)).dtype == np.float64
    converted = data.default_convert((np.zeros(2), 1, "s"))
    assert isinstance(converted, list) and isinstance(converted[0], mg.Tensor) and converted[1:] == [1, "s"]
    assert isinstance(data.default_convert(Point(np.zeros(1), 2)), Point)
    assert data.default_convert({"k": np.ones(1)})["k"].shape == (1,)


# ---------------------------------------------------------------------------------- the loader


def test_loader_batches_in_order():
    loader = data.DataLoader(Squares(5), batch_size=2)
    batches = list(loader)
    assert len(loader) == 3 == len(batches)
    assert [b[0].tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    assert batches[1][1].tolist() == [4, 9]
    dropped = data.DataLoader(Squares(5), batch_size=2, drop_last=True)
    assert [b[0].tolist() for b in dropped] == [[0, 1], [2, 3]]
    assert len(data.DataLoader(Squares(5), batch_size=2, drop_last=True)) == 2
    assert len(iter(loader)) == 3


def test_batch_size_one_by_default_and_none_for_single_samples():
    assert [b.tolist() for b in data.DataLoader([1.0, 2.0])] == [[1.0], [2.0]]
    samples = list(data.DataLoader(Squares(3), batch_size=None))
    assert samples == [[0, 0], [1, 1], [2, 4]]  # default_convert: a tuple comes out as a list
    assert len(data.DataLoader(Squares(3), batch_size=None)) == 3


def test_seeded_shuffle_repeats_and_covers_every_index_each_epoch():
    def loader():
        return data.DataLoader(Squares(10), batch_size=3, shuffle=True,
                               generator=mg.Generator().manual_seed(0))

    a, b = loader(), loader()
    epochs = [_order(a) for _ in range(3)]
    assert epochs == [_order(b) for _ in range(3)]  # the same order twice
    for order in epochs:
        assert sorted(order) == list(range(10))  # every index once an epoch
    assert epochs[0] != epochs[1]  # a new order each epoch
    assert epochs[0] != list(range(10))


def test_shuffle_without_a_generator_draws_from_the_global_one():
    mg.manual_seed(11)
    first = _order(data.DataLoader(Squares(10), batch_size=4, shuffle=True))
    mg.manual_seed(11)
    assert _order(data.DataLoader(Squares(10), batch_size=4, shuffle=True)) == first


def test_sampler_batch_sampler_and_collate_fn():
    assert _order(data.DataLoader(Squares(6), batch_size=2, sampler=[5, 0, 3])) == [5, 0, 3]
    by_batches = data.DataLoader(Squares(6), batch_sampler=[[1, 2], [4]])
    assert [b[0].tolist() for b in by_batches] == [[1, 2], [4]] and len(by_batches) == 2
    assert by_batches.batch_size is None
    summed = data.DataLoader(Squares(4), batch_size=2, collate_fn=lambda samples: sum(s[1] for s in samples))
    assert list(summed) == [1, 13]


def test_a_dataset_with_getitems_is_fetched_a_batch_at_a_time():
    class Batched(Squares):
        calls = 0

        def __getitems__(self, indices):
            Batched.calls += 1
            return [self[i] for i in indices]

    assert len(list(data.DataLoader(Batched(6), batch_size=3))) == 2 and Batched.calls == 2


def test_iterable_dataset_batches_in_stream_order():
    assert [b.tolist() for b in data.DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    dropped = data.DataLoader(Stream(7), batch_size=3, drop_last=True)
    assert [b.tolist() for b in dropped] == [[0, 1, 2], [3, 4, 5]]
    assert len(data.DataLoader(Stream(7), batch_size=3)) == 3
    assert len(data.DataLoader(Stream(7), batch_size=3, drop_last=True)) == 2
    assert list(data.DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    assert [b.tolist() for b in data.DataLoader(Stream(4, with_len=False), batch_size=2)] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="shuffle=True"):
        data.DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="sampler option"):
        data.DataLoader(Stream(3), sampler=[0])


def test_pin_memory_and_the_other_defaults_are_accepted():
    loader = data.DataLoader(Squares(4), batch_size=2, pin_memory=True, pin_memory_device="cpu",
                             in_order=False)
    assert len(list(loader)) == 2 and loader.pin_memory and loader.num_workers == 0


@pytest.mark.parametrize("kwargs, message", [
    pytest.param({"num_workers": 2}, "num_workers=2", id="workers"),
    pytest.param({"num_workers": -1}, "num_workers option should be non-negative", id="negative-workers"),
    pytest.param({"shuffle": True, "sampler": [0, 1]}, "sampler option is mutually exclusive with shuffle",
                 id="shuffle-and-sampler"),
    pytest.param({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive",
                 id="batch-sampler-and-batch-size"),
    pytest.param({"batch_size": None, "drop_last": True}, "batch_size=None", id="no-batches-and-drop-last"),
    pytest.param({"batch_size": 0}, "batch_size=0", id="batch-size-0"),
    pytest.param({"timeout": 5}, "timeout=5", id="timeout"),
    pytest.param({"prefetch_factor": 2}, "prefetch_factor", id="prefetch"),
    pytest.param({"persistent_workers": True}, "persistent_workers", id="persistent"),
    pytest.param({"multiprocessing_context": "spawn"}, "multiprocessing_context", id="context"),
])
def test_loader_errors_name_the_option(kwargs, message):
    with pytest.raises(ValueError, match=message):
        data.DataLoader(Squares(4), **kwargs)


def test_loader_refuses_a_foreign_generator_and_late_changes():
    with pytest.raises(TypeError, match="minigrad.Generator"):
        data.DataLoader(Squares(4), shuffle=True, generator=object())
    loader = data.DataLoader(Squares(4))
    with pytest.raises(ValueError, match="batch_size attribute should not be set"):
        loader.batch_size = 2
    loader.collate_fn = data.default_convert  # what torch allows stays allowed


# ---------------------------------------------------------------------------------- a program


def test_a_dataloader_feeds_a_training_loop_whose_loss_falls():
    mg.manual_seed(0)
    x = mg.randn(64, 3)
    y = x @ mg.tensor([[1.5], [-2.0], [0.5]]) + 0.3
    loader = data.DataLoader(data.TensorDataset(x, y), batch_size=16, shuffle=True,
                             generator=mg.Generator().manual_seed(1))
    model = nn.Linear(3, 1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    losses = []
    for _ in range(5):
        total = 0.0
        for xb, yb in loader:
            assert xb.shape[1:] == (3,) and yb.shape[1:] == (1,) and not xb.requires_grad
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.item() * len(xb)
        losses.append(total / 64)
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.1 * losses[0]
