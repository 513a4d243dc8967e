"""Feeding a model batches, as torch.utils.data: datasets (what sample i is), samplers (which
indices, in which order), collation (samples into one batch) and the DataLoader that joins them,
all in the main process. Random orders draw from minigrad's global generator or a `Generator`."""

from __future__ import annotations

import bisect
import collections.abc
import copy
import itertools
import math
import re
import warnings
from typing import Any, Callable, Generic, Iterable, Iterator, Sequence, Sized, TypeVar

import numpy as np

from ..creation import as_tensor, tensor
from ..grad_mode import no_grad
from ..ops.shape import stack
from ..random import numpy_generator
from ..tensor import Tensor

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset",
    "WeightedRandomSampler", "default_collate", "default_convert", "get_worker_info", "random_split",
]

T_co = TypeVar("T_co", covariant=True)


# ---------------------------------------------------------------------------------- datasets


class Dataset(Generic[T_co]):
    """A map-style dataset: `dataset[i]` is sample i, as torch.utils.data.Dataset.

    Subclasses define `__getitem__`, and `__len__` for the samplers and `len(DataLoader)`; a
    `__getitems__(indices)` that returns a list of samples, where defined, fetches a whole batch
    at once. `a + b` is `ConcatDataset([a, b])`.
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A dataset that is a stream of samples: subclasses define `__iter__`.

    The DataLoader takes its samples in the order the stream gives them (no sampler, no
    shuffle), `batch_size` at a time. `a + b` is `ChainDataset([a, b])`.
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:
        return ChainDataset([self, other])


def _first_size(t: Any, i: int) -> int:
    shape = np.shape(t)
    if not shape:
        raise ValueError(f"TensorDataset: tensor {i} is 0-d; each tensor needs a first dimension "
                         "(one entry per sample)")
    return shape[0]


class TensorDataset(Dataset[tuple]):
    """Samples that are rows of tensors: `dataset[i]` is `tuple(t[i] for t in tensors)`.

    Args:
        *tensors: tensors with the same size in the first dimension (the number of samples).
    """

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset: expected at least one tensor")
        sizes = [_first_size(t, i) for i, t in enumerate(tensors)]
        if any(s != sizes[0] for s in sizes):
            raise ValueError(f"TensorDataset: size mismatch between tensors: their first dimensions are "
                             f"{sizes}; every tensor needs one entry per sample, the same number")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return _first_size(self.tensors[0], 0)


class ConcatDataset(Dataset[T_co]):
    """Map-style datasets one after the other: samples 0 .. len(a)-1 are a's, then b's.

    Args:
        datasets: the datasets (not IterableDatasets: `ChainDataset` joins those).
    """

    @staticmethod
    def cumsum(sequence: Iterable[Sized]) -> list[int]:
        """The running totals of the datasets' lengths."""
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for i, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise TypeError(f"ConcatDataset does not support IterableDataset (dataset {i} is a "
                                f"{type(d).__name__}); join streams with ChainDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise ValueError(f"ConcatDataset: index {idx} is out of range for {len(self)} samples "
                                 "(absolute value of index should not exceed dataset length)")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """IterableDatasets one after the other: the stream of each in turn.

    Args:
        datasets: the IterableDatasets to chain.
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def _streams(self) -> Iterator[IterableDataset]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, not {type(d).__name__}")
            yield d

    def __iter__(self) -> Iterator:
        for d in self._streams():
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self._streams())


class Subset(Dataset[T_co]):
    """The samples of `dataset` at `indices`: `subset[i]` is `dataset[indices[i]]`.

    Args:
        dataset: the whole dataset.
        indices: the indices of the samples kept, in the subset's order.
    """

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> T_co:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        """The samples at `indices` (of the subset), through the dataset's own `__getitems__`
        where it has one; a subclass's own `__getitem__` is used as it is."""
        if type(self).__getitem__ is not Subset.__getitem__:
            return [self[i] for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence[int | float], generator: Any = None) -> list[Subset]:
    """Split `dataset` at random into non-overlapping Subsets of the given lengths.

    Args:
        dataset: the dataset to split (it needs a length).
        lengths: the lengths of the parts, adding up to len(dataset); or fractions adding up to
            1, each part then floor(fraction * len(dataset)) long and the samples left over
            handed out one each to the parts in turn, from the first (torch's rule).
        generator: a `minigrad.Generator` to draw the order from; minigrad's global generator
            when None.
    """
    n = len(dataset)
    lengths = list(lengths)
    if lengths and math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, fraction in enumerate(lengths):
            if fraction < 0 or fraction > 1:
                raise ValueError(f"random_split: fraction at index {i} is {fraction}, not between 0 and 1")
            counts.append(math.floor(n * fraction))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, length in enumerate(counts):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = counts
    bad = [v for v in lengths if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0]
    if bad or sum(lengths) != n:
        raise ValueError(f"random_split: the lengths {lengths} add up to {sum(lengths)}, but the dataset "
                         f"has {n} samples; give lengths (non-negative ints) that add up to {n}, "
                         "or fractions that add up to 1")
    order = numpy_generator(generator, "random_split").permutation(n).tolist()
    ends = list(itertools.accumulate(int(v) for v in lengths))
    return [Subset(dataset, order[end - int(length):end]) for end, length in zip(ends, lengths)]


def get_worker_info() -> None:
    """None: minigrad loads data in the main process, where torch's get_worker_info is None too."""
    return None


# ---------------------------------------------------------------------------------- samplers


class Sampler(Generic[T_co]):
    """The base of the samplers: an iterable of dataset indices (or of batches of them).

    Subclasses define `__iter__`, and `__len__` where the number of indices is known.
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


def _positive_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and value > 0


class SequentialSampler(Sampler[int]):
    """The indices 0, 1, ..., len(data_source) - 1, in order.

    Args:
        data_source: the dataset (only its length is used).
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Indices in a random order: a new permutation each pass, or draws with replacement.

    Args:
        data_source: the dataset (only its length is used).
        replacement: draw each index independently (so some repeat) instead of permuting.
        num_samples: how many indices a pass gives (len(data_source) by default); without
            replacement, more than the length takes further permutations.
        generator: a `minigrad.Generator` to draw from; minigrad's global generator when None.
    """

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: Any = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not _positive_int(self.num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")
        numpy_generator(generator, "RandomSampler")  # a wrong kind of generator fails here

    @property
    def num_samples(self) -> int:
        """How many indices one pass gives."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, total = len(self.data_source), int(self.num_samples)
        if n == 0:
            raise ValueError(f"RandomSampler: cannot draw {total} indices from an empty dataset")
        rng = numpy_generator(self.generator, "RandomSampler")  # the global one as it is now
        if self.replacement:
            for start in range(0, total, 32):  # in pieces, as torch: a long pass is drawn lazily
                yield from rng.integers(0, n, size=min(32, total - start)).tolist()
        else:
            for _ in range(total // n):
                yield from rng.permutation(n).tolist()
            if total % n:
                yield from rng.permutation(n)[:total % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order, a new one each pass.

    Args:
        indices: the dataset indices to draw from.
        generator: a `minigrad.Generator` to draw from; minigrad's global generator when None.
    """

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator
        numpy_generator(generator, "SubsetRandomSampler")

    def __iter__(self) -> Iterator[int]:
        for i in numpy_generator(self.generator, "SubsetRandomSampler").permutation(len(self.indices)):
            yield self.indices[int(i)]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """Indices 0 .. len(weights)-1 drawn with probabilities proportional to `weights`.

    Args:
        weights: one non-negative weight per index (they need not add up to 1); kept as a
            float64 tensor in `self.weights`.
        num_samples: how many indices a pass gives.
        replacement: draw each independently (True) or never the same index twice (False:
            once the non-zero weights are used up, the zero-weight indices follow, as torch).
        generator: a `minigrad.Generator` to draw from; minigrad's global generator when None.
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        if not _positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = as_tensor(np.asarray(weights, dtype=np.float64))
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {w.shape}")
        numpy_generator(generator, "WeightedRandomSampler")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        p, k = self.weights.numpy(), int(self.num_samples)
        if not np.all(np.isfinite(p)) or np.any(p < 0):
            raise RuntimeError("WeightedRandomSampler: the weights must be finite and non-negative")
        if not p.sum() > 0:
            raise RuntimeError(f"WeightedRandomSampler: the weights add up to {p.sum()}; at least one "
                               "must be positive")
        if not self.replacement and k > len(p):
            raise RuntimeError(f"WeightedRandomSampler: cannot draw {k} indices without replacement "
                               f"from {len(p)} weights")
        rng = numpy_generator(self.generator, "WeightedRandomSampler")
        if self.replacement:
            yield from rng.choice(len(p), size=k, replace=True, p=p / p.sum()).tolist()
        else:  # the k largest of p / Exp(1): drawing one at a time without replacement, in one go
            with np.errstate(divide="ignore"):
                keys = p / rng.standard_exponential(len(p))
            yield from np.argsort(-keys, kind="stable")[:k].tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list]):
    """Lists of `batch_size` indices from another sampler (the last one shorter, unless dropped).

    Args:
        sampler: the sampler (or any iterable) of indices.
        batch_size: indices per batch.
        drop_last: leave out the last batch when it is shorter than batch_size.
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not _positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        indices = iter(self.sampler)
        batch = list(itertools.islice(indices, self.batch_size))
        while batch and (len(batch) == self.batch_size or not self.drop_last):
            yield batch
            batch = list(itertools.islice(indices, self.batch_size))

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class _InfiniteConstantSampler(Sampler[None]):
    """None forever: the sampler of an IterableDataset, whose stream decides where a pass ends."""

    def __iter__(self) -> Iterator[None]:
        return itertools.repeat(None)


# ---------------------------------------------------------------------------------- collation

_STRING_DTYPE = re.compile(r"[SaUO]")  # numpy's strings, bytes and objects: not numbers
_COLLATE_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                  "found {}")


def default_convert(data: Any) -> Any:
    """One sample with its numpy arrays (and numpy numbers) made Tensors, the rest as it is.

    What the DataLoader applies to each sample when it does not batch (`batch_size=None`).
    Dicts, namedtuples and lists are converted element by element; a tuple becomes a list.
    """
    kind = type(data)
    if isinstance(data, Tensor):
        return data
    if kind.__module__ == "numpy" and kind.__name__ not in ("str_", "bytes_", "string_"):
        if isinstance(data, np.ndarray) and _STRING_DTYPE.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuilt_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple keeps its type
        return kind(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuilt_sequence(data, [default_convert(d) for d in data])
    return data


def _rebuilt_mapping(like: collections.abc.Mapping, values: dict) -> Any:
    """`values` in a mapping of like's type (a copy of it, updated), or a dict if that fails."""
    try:
        if isinstance(like, collections.abc.MutableMapping):
            clone = copy.copy(like)
            clone.update(values)
            return clone
        return type(like)(values)
    except TypeError:
        return values


def _rebuilt_sequence(like: collections.abc.Sequence, values: list) -> Any:
    """`values` in a sequence of like's type (a copy of it, refilled), or a list if that fails."""
    try:
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            for i, v in enumerate(values):
                clone[i] = v
            return clone
        return type(like)(values)
    except TypeError:
        return values


def _stacked(batch: Sequence[Any]) -> Tensor:
    """Same-shaped tensors stacked along a new first axis, with no graph behind the batch."""
    first = tuple(np.shape(batch[0]))
    for i, t in enumerate(batch):
        if tuple(np.shape(t)) != first:
            raise RuntimeError(f"default_collate: stack expects each tensor to be equal size, but got "
                               f"{first} at entry 0 and {tuple(np.shape(t))} at entry {i}; give the "
                               "samples one shape, or pass a collate_fn that pads them")
    with no_grad():
        return stack(list(batch), 0)


def default_collate(batch: Sequence[Any]) -> Any:
    """Samples made one batch, with torch's rules, by the type of the first sample.

    Tensors are stacked along a new first axis (they need one shape); numpy arrays become
    tensors and are stacked; numpy numbers become a tensor of their dtype; Python floats a
    float64 tensor, ints an int64 tensor, bools a bool tensor; strings and bytes stay as they are
    (the batch itself). A dict is collated key by key, a namedtuple field by field (keeping its
    type), and a tuple or list position by position (a tuple gives a list of the results). The
    batch is a constant: no gradient flows back into the samples.
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stacked(batch)
    if isinstance(elem, np.ndarray):
        if _STRING_DTYPE.search(elem.dtype.str):
            raise TypeError(_COLLATE_ERROR.format(elem.dtype))
        return _stacked([as_tensor(b) for b in batch])
    if isinstance(elem, (np.bool_, np.number, np.object_)):
        return as_tensor(np.asarray(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=np.float64)
    if isinstance(elem, int):  # bools too: a batch of bools is a bool tensor, as torch.tensor's
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuilt_mapping(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple keeps its type
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        for i, sample in enumerate(batch):
            if len(sample) != size:
                raise RuntimeError(f"default_collate: each element in list of batch should be of equal "
                                   f"size, but got {size} at entry 0 and {len(sample)} at entry {i}")
        columns = [default_collate(samples) for samples in zip(*batch)]
        return columns if isinstance(elem, tuple) else _rebuilt_sequence(elem, columns)
    raise TypeError(_COLLATE_ERROR.format(type(elem)))


# ---------------------------------------------------------------------------------- the loader


class DataLoader(Generic[T_co]):
    """Batches of a dataset, one pass per `for batch in loader:`, as torch.utils.data.DataLoader.

    Each batch takes the next `batch_size` indices from the sampler (a permutation drawn anew
    each pass with `shuffle=True`), fetches those samples and joins them with `collate_fn`
    (`default_collate`). With `batch_size=None` it yields single samples (`default_convert`).
    Everything runs in the main process: `num_workers` must be 0.

    Args:
        dataset: a map-style `Dataset` (anything with `__getitem__` and `__len__`) or an
            `IterableDataset` (taken in its own order, `batch_size` samples at a time).
        batch_size: samples per batch; None for no batching.
        shuffle: a new random order each pass (map-style datasets only).
        sampler: the indices to take, in order (instead of shuffle).
        batch_sampler: lists of indices, one per batch (instead of batch_size, shuffle, sampler
            and drop_last).
        num_workers: 0: minigrad loads in the main process (more raises ValueError).
        collate_fn: joins a list of samples into a batch.
        pin_memory: accepted and ignored (minigrad has only the CPU).
        drop_last: leave out the last batch when it is shorter than batch_size.
        timeout: 0 (it bounds the wait for a worker process, and there are none).
        worker_init_fn, multiprocessing_context, prefetch_factor, persistent_workers: for
            worker processes: accepted at their defaults only, as torch with num_workers=0.
        generator: a `minigrad.Generator` for shuffle's order; minigrad's global generator when None.
        pin_memory_device, in_order: accepted and ignored.
    """

    _initialized = False

    def __init__(self, dataset: Dataset[T_co], batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None, batch_sampler: Sampler | Iterable | None = None,
                 num_workers: int = 0, collate_fn: Callable[[list], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None, multiprocessing_context: Any = None,
                 generator: Any = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if num_workers > 0:
            raise ValueError(f"DataLoader: num_workers={num_workers} asks for worker processes, but "
                             "minigrad loads every batch in the main process; use num_workers=0")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if timeout > 0:
            raise ValueError(f"DataLoader: timeout={timeout} bounds the wait for a worker process, and "
                             "minigrad has none (num_workers=0); leave timeout=0")
        if prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing. let "
                             "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor "
                             "to None.")
        if persistent_workers:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None:
            raise ValueError("multiprocessing_context can only be used with multi-process loading "
                             f"(num_workers > 0), but got num_workers={num_workers}")
        numpy_generator(generator, "DataLoader")  # a wrong kind of generator fails here

        if isinstance(dataset, IterableDataset):
            if shuffle not in (False, None):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler "
                                 f"option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                             "with drop_last")

        if sampler is None:
            if isinstance(dataset, IterableDataset):
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None else default_convert)
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.pin_memory_device = pin_memory_device
        self.in_order = in_order
        self._initialized = True

    def __setattr__(self, attr: str, value: Any) -> None:
        # as torch: the batching is fixed once the loader is made (its samplers are built from it)
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                          "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, value)

    def _index_sampler(self) -> Iterable:
        """What one pass iterates: the batch sampler when batching, else the sampler."""
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __iter__(self) -> _LoaderIterator:
        return _LoaderIterator(self)

    def __len__(self) -> int:
        """The number of batches in a pass (of samples, with batch_size=None)."""
        if isinstance(self.dataset, IterableDataset):
            length = len(self.dataset)
            if self.batch_size is None:
                return length
            return length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
        return len(self._index_sampler())


class _LoaderIterator:
    """One pass over a DataLoader (what `iter(loader)` gives): indices from its sampler, samples
    from its dataset, batches from its collate_fn."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._dataset = loader.dataset
        self._batching = loader.batch_sampler is not None
        self._indices = iter(loader._index_sampler())
        self._stream = iter(self._dataset) if isinstance(self._dataset, IterableDataset) else None
        self._ended = False

    def __iter__(self) -> _LoaderIterator:
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self) -> Any:
        index = next(self._indices)
        if self._stream is not None:
            data = self._from_stream(index)
        elif self._batching:
            getitems = getattr(self._dataset, "__getitems__", None)
            data = getitems(index) if callable(getitems) else [self._dataset[i] for i in index]
        else:
            data = self._dataset[index]
        return self._loader.collate_fn(data)

    def _from_stream(self, index: Any) -> Any:
        """The next sample of the stream, or the next len(index) of them when batching."""
        if self._ended:
            raise StopIteration
        if not self._batching:
            return next(self._stream)
        data = list(itertools.islice(self._stream, len(index)))
        self._ended = len(data) < len(index)
        if not data or (self._loader.drop_last and self._ended):
            raise StopIteration
        return data
